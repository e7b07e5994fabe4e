//! The crate's unit tests (kept apart from lib.rs).

use hipfile_abi::hipfile_h::hipFileDriverPropsNvfs;

use super::*;

#[test]
fn layouts_are_cufiles_and_hipfiles() {
    assert_eq!(std::mem::size_of::<CUfileError_t>(), 8);
    assert_eq!(std::mem::size_of::<CUfileDrvProps_t>(), 56);
    assert_eq!(std::mem::offset_of!(CUfileDrvProps_t, fflags), 32);
    assert_eq!(std::mem::size_of::<hipFileDriverProps_t>(), 72);
    assert_eq!(std::mem::offset_of!(hipFileDriverProps_t, max_batch_io_count), 64);
}

#[test]
fn properties_narrow_to_32_bits_saturating() {
    let hip = hipFileDriverProps_t {
        nvfs: hipFileDriverPropsNvfs {
            major_version: 0,
            minor_version: 5,
            poll_thresh_size: 4,
            max_direct_io_size: 4096,
            driver_status_flags: 0,
            driver_control_flags: 2,
        },
        feature_flags: 0xf,
        max_device_cache_size: 1 << 40,
        per_buffer_cache_size: 1024,
        max_device_pinned_mem_size: 33554432,
        max_batch_io_count: 128,
        max_batch_io_timeout_msecs: 5,
    };
    let cu = CUfileDrvProps_t::from(&hip);
    assert_eq!((cu.nvfs.minor_version, cu.nvfs.max_direct_io_size, cu.nvfs.dcontrolflags), (5, 4096, 2));
    assert_eq!((cu.fflags, cu.max_device_cache_size, cu.per_buffer_cache_size), (0xf, u32::MAX, 1024));
    assert_eq!(
        (cu.max_device_pinned_mem_size, cu.max_batch_io_size, cu.max_batch_io_timeout_msecs),
        (33554432, 128, 5)
    );
}
