//! hipfile-abi: the facts hipfile-rs's C ABIs share, written once. `libhipfile.so.0`
//! (hipfile-capi), `libcufile.so.0` (hipfile-cufile, which finds `libhipfile.so.0` at run time
//! and links none of the rest), the runtime loader's view of NVIDIA's `libcufile.so.0`
//! (hipfile-runtime) and the library's core all take them from here:
//! - [`OpError`]: hipFile's error codes, which cuFile's share number for number, with upstream's
//!   texts;
//! - [`hipfile_h`] and [`cufile_h`]: the `repr(C)` types that more than one of those libraries
//!   passes, as `include/hipfile.h` and `include/cufile.h` declare them;
//! - [`hooks`]: the functions `libhipfile.so.0` exports for `libcufile.so.0` alone, their names
//!   and types, so that the side that defines them and the side that looks them up cannot
//!   drift apart.
//!
//! A leaf: no dependencies, nothing of the driver.

mod codes;
pub mod cufile_h;
pub mod hipfile_h;
pub mod hooks;

pub use codes::{OpError, op_error_cstr};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layouts_are_the_headers() {
        use std::mem::{offset_of, size_of};
        assert_eq!(size_of::<hipfile_h::hipFileError_t>(), 8);
        assert_eq!(size_of::<hipfile_h::hipFileDriverProps_t>(), 72);
        assert_eq!(offset_of!(hipfile_h::hipFileDriverProps_t, max_batch_io_count), 64);
        assert_eq!(size_of::<cufile_h::CUfileError_t>(), 8);
        assert_eq!(size_of::<cufile_h::CUfileDescr_t>(), 24);
        assert_eq!(offset_of!(cufile_h::CUfileDescr_t, fs_ops), 16);
    }

    #[test]
    fn codes_and_texts() {
        assert_eq!(OpError::from_code(5022), Some(OpError::InvalidValue));
        assert_eq!(OpError::from_code(5021), None, "unused upstream");
        assert_eq!(op_error_cstr(0), c"hipFile success");
        assert_eq!(op_error_cstr(4999), c"Unknown hipFile error");
        let e = cufile_h::CUfileError_t::from(hipfile_h::hipFileError_t { err: 5011, hip_drv_err: 719 });
        assert_eq!(
            e.to_string(),
            "cuFile error 5011 (GPU driver error: Inspect hip_drv_err for additional information), CUDA driver error 719"
        );
        assert_eq!(
            cufile_h::CUfileError_t::op(OpError::InvalidValue).check(),
            Err(cufile_h::CUfileError_t::code(5022))
        );
        assert_eq!(hooks::ALL.map(|h| h.to_str().unwrap().starts_with("hipfile_rs_cufile_")), [true; 5]);
    }
}
