//! hipFile's error codes (`hipFileOpError_t`, which cuFile's `CUfileOpError` shares number for
//! number) and upstream's texts for them.

use std::ffi::CStr;

/// Declares [`OpError`] from one table: each code's variant, number and upstream message.
macro_rules! op_errors {
    ($($variant:ident = $code:literal, $message:literal;)+) => {
        /// hipFile's error codes (`hipFileOpError_t`), with upstream's exact numbers.
        ///
        /// `hipFileSuccess` (0) is not an error and has no variant; 5021 and 5032 are unused
        /// upstream.
        #[repr(i32)]
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[allow(missing_docs)] // each variant is documented by its message, see `OpError::message`
        pub enum OpError {
            $($variant = $code,)+
        }

        impl OpError {
            /// Every code, in numeric order.
            pub const ALL: &'static [OpError] = &[$(Self::$variant,)+];

            /// Upstream's message for this code, as `hipFileGetOpErrorString` returns it.
            pub const fn message_cstr(self) -> &'static CStr {
                match self {
                    $(Self::$variant => $message,)+
                }
            }
        }
    };
}

op_errors! {
    DriverNotInitialized = 5001, c"GPU IO driver is not loaded";
    DriverInvalidProps = 5002, c"Invalid GPU IO driver property provided";
    DriverUnsupportedLimit = 5003, c"GPU IO Driver property value is unsupported";
    DriverVersionMismatch = 5004, c"hipFile version does not match GPU IO driver version";
    DriverVersionReadError = 5005, c"Unable to read the GPU IO driver version";
    DriverClosing = 5006, c"GPU IO driver is closing and not accepting new requests";
    PlatformNotSupported = 5007, c"hipFile is not supported on the current platform";
    IoNotSupported = 5008, c"hipFile is not supported on the selected file";
    DeviceNotSupported = 5009, c"The selected GPU does not support hipFile";
    DriverError = 5010, c"GPU IO driver error";
    HipDriverError = 5011, c"GPU driver error: Inspect hip_drv_err for additional information";
    HipPointerInvalid = 5012, c"Invalid GPU pointer";
    HipMemoryTypeInvalid = 5013, c"Memory type backing pointer is incompatible with hipFile";
    HipPointerRangeError = 5014, c"Pointer range exceeds allocated memory region";
    HipContextMismatch = 5015, c"GPU driver context mismatch";
    InvalidMappingSize = 5016, c"Accessing memory beyond pinned memory buffer";
    InvalidMappingRange = 5017, c"Accessing memory beyond mapped memory region";
    InvalidFileType = 5018, c"Unsupported file type";
    InvalidFileOpenFlag = 5019, c"Unsupported file open flags";
    DioNotSet = 5020, c"O_DIRECT flag not set";
    InvalidValue = 5022, c"One or more arguments have an invalid value";
    MemoryAlreadyRegistered = 5023, c"Device pointer is already registered";
    MemoryNotRegistered = 5024, c"Device pointer is not registered";
    PermissionDenied = 5025, c"Permission error on device or file access";
    DriverAlreadyOpen = 5026, c"GPU IO driver is already open";
    HandleNotRegistered = 5027, c"File handle for GPU IO is not registered";
    HandleAlreadyRegistered = 5028, c"File handle for GPU IO is already registered";
    DeviceNotFound = 5029, c"Selected device not found";
    InternalError = 5030, c"Internal GPU IO library error";
    GetNewFdFailed = 5031, c"Unable to obtain a new file descriptor";
    DriverSetupError = 5033, c"GPU IO Driver initialization error";
    IoDisabled = 5034, c"GPU IO config file prohibits GPU IO on specified file";
    BatchSubmitFailed = 5035, c"Failed to submit request for batch operation";
    GpuMemoryPinningFailed = 5036, c"Failed to allocated pinned device memory";
    BatchFull = 5037, c"Batch operation queue is full";
    AsyncNotSupported = 5038, c"hipFile async IO is not supported";
    IoMaxError = 5039, c"Internal flag to mark largest hipFile error code";
}

impl OpError {
    /// The numeric `hipFileOpError_t` value.
    pub const fn code(self) -> i32 {
        self as i32
    }

    /// The code for a number, if hipFile defines one (0 is success, not an error).
    pub fn from_code(code: i32) -> Option<OpError> {
        Self::ALL.iter().copied().find(|e| e.code() == code)
    }

    /// Upstream's message for this code (what `hipFileGetOpErrorString` returns).
    pub fn message(self) -> &'static str {
        // The table above is ASCII, so this cannot fail.
        self.message_cstr().to_str().unwrap_or("Unknown hipFile error")
    }
}

/// The string `hipFileGetOpErrorString` returns for any `hipFileOpError_t` value, as upstream
/// words it: 0 is "hipFile success", an unknown value "Unknown hipFile error".
pub fn op_error_cstr(code: i32) -> &'static CStr {
    match code {
        0 => c"hipFile success",
        code => OpError::from_code(code).map_or(c"Unknown hipFile error", OpError::message_cstr),
    }
}
