//! The pointer-attribute ABIs of the runtimes: `hipPointerAttribute_t` and its memory types
//! in HIP 5's numbering and HIP 6's (which is CUDA's).

use std::ffi::{c_int, c_uint, c_void};

use hipfile_core::MemoryType;

/// `hipMemoryType` values of HIP 5.x (Debian 12's headers).
pub mod memory_type_v5 {
    /// `hipMemoryTypeHost`.
    pub const HOST: i32 = 0;
    /// `hipMemoryTypeDevice`.
    pub const DEVICE: i32 = 1;
    /// `hipMemoryTypeArray`.
    pub const ARRAY: i32 = 2;
    /// `hipMemoryTypeUnified`.
    pub const UNIFIED: i32 = 3;
}

/// `hipMemoryType` values of HIP 6.0 and later (aligned with CUDA's).
pub mod memory_type_v6 {
    /// `hipMemoryTypeUnregistered`.
    pub const UNREGISTERED: i32 = 0;
    /// `hipMemoryTypeHost`.
    pub const HOST: i32 = 1;
    /// `hipMemoryTypeDevice`.
    pub const DEVICE: i32 = 2;
    /// `hipMemoryTypeManaged`.
    pub const MANAGED: i32 = 3;
    /// `hipMemoryTypeArray`.
    pub const ARRAY: i32 = 10;
    /// `hipMemoryTypeUnified`.
    pub const UNIFIED: i32 = 11;
}

/// `hipPointerAttribute_t`: the same layout in HIP 5 and 6+ (the first field was renamed
/// from `memoryType` to `type`, and its values renumbered).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct PointerAttributes {
    /// `memoryType` (5.x) / `type` (6+): a `hipMemoryType` of the runtime's ABI.
    pub memory_type: c_int,
    /// `device`.
    pub device: c_int,
    /// `devicePointer`.
    pub device_pointer: *mut c_void,
    /// `hostPointer`.
    pub host_pointer: *mut c_void,
    /// `isManaged`.
    pub is_managed: c_int,
    /// `allocationFlags`.
    pub allocation_flags: c_uint,
}

impl Default for PointerAttributes {
    fn default() -> Self {
        PointerAttributes {
            memory_type: -1,
            device: -1,
            device_pointer: std::ptr::null_mut(),
            host_pointer: std::ptr::null_mut(),
            is_managed: 0,
            allocation_flags: 0,
        }
    }
}

/// [`PointerAttributes`] with slack after it for runtimes whose structure is larger.
#[repr(C)]
pub(crate) struct AttributeRoom {
    pub(crate) attr: PointerAttributes,
    pub(crate) _spare: [u64; 32],
}

/// Which pointer-attribute ABI a runtime has.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Abi {
    /// HIP 5.x.
    V5,
    /// HIP 6.0 and later, and CUDA (`cudaPointerAttributes` is the first 24 bytes of the same
    /// layout, with the same numbering).
    V6,
}

impl Abi {
    /// The ABI of a runtime reporting `version` (`HIP_VERSION`: major * 10^7 + minor * 10^5
    /// + patch).
    pub fn from_version(version: i32) -> Abi {
        if version / 10_000_000 >= 6 { Abi::V6 } else { Abi::V5 }
    }

    /// What the pointer attributes say, in this ABI's numbering. Managed memory (reported as
    /// device memory with `isManaged` by HIP 5) is `Managed`; arrays are not linear memory
    /// hipFile can use, so they count as `Unregistered`.
    pub fn memory_type(self, attr: &PointerAttributes) -> MemoryType {
        if attr.is_managed != 0 {
            return MemoryType::Managed;
        }
        match (self, attr.memory_type) {
            (Abi::V5, memory_type_v5::HOST) | (Abi::V6, memory_type_v6::HOST) => MemoryType::Host,
            (Abi::V5, memory_type_v5::DEVICE) | (Abi::V6, memory_type_v6::DEVICE) => MemoryType::Device,
            (Abi::V5, memory_type_v5::UNIFIED) | (Abi::V6, memory_type_v6::MANAGED | memory_type_v6::UNIFIED) => {
                MemoryType::Managed
            }
            _ => MemoryType::Unregistered,
        }
    }
}
