//! The format's words: its element types, and why a file or a request is refused.

use std::fmt;

/// The longest header accepted (the safetensors package's own limit).
pub const MAX_HEADER: u64 = 100_000_000;

/// The element types safetensors knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[allow(missing_docs)]
pub enum Dtype {
    Bool,
    F4,
    F6E2M3,
    F6E3M2,
    U8,
    I8,
    F8E5M2,
    F8E4M3,
    F8E8M0,
    F8E4M3Fnuz,
    F8E5M2Fnuz,
    I16,
    U16,
    F16,
    BF16,
    I32,
    U32,
    F32,
    C64,
    F64,
    I64,
    U64,
}

impl Dtype {
    /// Every dtype, with its name in headers and its size in bits.
    pub const ALL: [(Dtype, &'static str, u32); 22] = [
        (Dtype::Bool, "BOOL", 8),
        (Dtype::F4, "F4", 4),
        (Dtype::F6E2M3, "F6_E2M3", 6),
        (Dtype::F6E3M2, "F6_E3M2", 6),
        (Dtype::U8, "U8", 8),
        (Dtype::I8, "I8", 8),
        (Dtype::F8E5M2, "F8_E5M2", 8),
        (Dtype::F8E4M3, "F8_E4M3", 8),
        (Dtype::F8E8M0, "F8_E8M0", 8),
        (Dtype::F8E4M3Fnuz, "F8_E4M3FNUZ", 8),
        (Dtype::F8E5M2Fnuz, "F8_E5M2FNUZ", 8),
        (Dtype::I16, "I16", 16),
        (Dtype::U16, "U16", 16),
        (Dtype::F16, "F16", 16),
        (Dtype::BF16, "BF16", 16),
        (Dtype::I32, "I32", 32),
        (Dtype::U32, "U32", 32),
        (Dtype::F32, "F32", 32),
        (Dtype::C64, "C64", 64),
        (Dtype::F64, "F64", 64),
        (Dtype::I64, "I64", 64),
        (Dtype::U64, "U64", 64),
    ];

    /// The dtype a header calls `name`.
    pub fn from_name(name: &str) -> Option<Dtype> {
        Self::ALL.iter().find(|(_, n, _)| *n == name).map(|(d, _, _)| *d)
    }

    /// Its name in headers (`"BF16"`).
    pub fn name(self) -> &'static str {
        Self::ALL.iter().find(|(d, _, _)| *d == self).map_or("?", |(_, n, _)| n)
    }

    /// Bits per element (4 and 6 for the packed float kinds).
    pub fn bits(self) -> u32 {
        Self::ALL.iter().find(|(d, _, _)| *d == self).map_or(8, |(_, _, b)| *b)
    }
}

/// Why a file is not a safetensors file this crate will load.
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Reading the file failed.
    Io(std::io::Error),
    /// Shorter than the 8 bytes of the header's length.
    TooShort {
        /// The file's size.
        file_size: u64,
    },
    /// The header's length is past [`MAX_HEADER`].
    HeaderTooLarge {
        /// The length the file gives.
        len: u64,
    },
    /// The header's length is past the end of the file.
    HeaderPastEnd {
        /// The length the file gives.
        len: u64,
        /// The file's size.
        file_size: u64,
    },
    /// Not a JSON object (serde_json's reason, with line and column).
    Json(String),
    /// `__metadata__` is not an object of strings.
    Metadata(String),
    /// A name appears twice.
    Duplicate(String),
    /// A tensor's entry is wrong.
    Tensor {
        /// The tensor.
        name: String,
        /// What is wrong.
        problem: String,
    },
    /// A checkpoint directory's index is wrong, or the directory has no files.
    Checkpoint(String),
    /// Two tensors' bytes overlap.
    Overlap {
        /// The one that starts first.
        first: String,
        /// The one that starts inside it.
        second: String,
    },
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Io(e) => write!(f, "cannot read the file: {e}"),
            Error::TooShort { file_size } => {
                write!(f, "{file_size} bytes: too short for a safetensors file (8 bytes of header length first)")
            }
            Error::HeaderTooLarge { len } => {
                write!(f, "the header length {len} is past the limit of {MAX_HEADER} bytes")
            }
            Error::HeaderPastEnd { len, file_size } => {
                write!(f, "the header length {len} runs past the end of the {file_size}-byte file (truncated?)")
            }
            Error::Json(e) => write!(f, "the header is not a JSON object: {e}"),
            Error::Metadata(e) => write!(f, "__metadata__ {e}"),
            Error::Duplicate(name) => write!(f, "tensor {name:?} appears twice in the header"),
            Error::Tensor { name, problem } => write!(f, "tensor {name:?}: {problem}"),
            Error::Overlap { first, second } => write!(f, "tensors {first:?} and {second:?} overlap"),
            Error::Checkpoint(why) => f.write_str(why),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io(e) => Some(e),
            _ => None,
        }
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}
