//! Staged bytes written around the CPU's caches (non-temporal stores), so that the copy to the
//! device that reads them soon after finds them in memory rather than in the writing core's
//! own cache: a read's tail with `HIPFILE_BOUNCE_DEMOTE=stream` ([`crate::demote`];
//! docs/bench/history.md, "Streaming stores").
//!
//! A piece is read from the page cache into the thread's own small buffer, which stays in its
//! cache, and moved from there into the slot with streaming stores; the fence at the end makes
//! them visible before the piece is counted done, and so before its stripe's copy is queued.

use hipfile_core::Result;

use crate::fileio::FileSide;

/// The bytes a thread reads at a time into its own buffer (well inside its share of L2).
const SCRATCH: usize = 256 << 10;

thread_local! {
    static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Reads `buf.len()` bytes of `file` at `offset` (fewer only at end of file) through the
/// thread's own buffer, moving them into `buf` with streaming stores, fenced before it returns
/// (an error included).
pub(crate) fn read_buffered(file: &FileSide, buf: &mut [u8], offset: u64) -> Result<usize> {
    BUFFER.with_borrow_mut(|scratch| {
        if scratch.len() < SCRATCH {
            scratch.resize(SCRATCH, 0);
        }
        let mut read = || {
            let mut done = 0;
            while done < buf.len() {
                let want = (buf.len() - done).min(SCRATCH);
                let n = file.read_buffered(&mut scratch[..want], offset + done as u64)?;
                copy(&mut buf[done..done + n], &scratch[..n]);
                done += n;
                if n < want {
                    break; // end of file
                }
            }
            Ok(done)
        };
        let read = read();
        fence();
        read
    })
}

/// `dst.copy_from_slice(src)`, with streaming stores where the processor has them (x86-64:
/// all but the unaligned first bytes and the last partial block of 16). The bytes may be
/// read only after [`fence`].
fn copy(dst: &mut [u8], src: &[u8]) {
    assert_eq!(dst.len(), src.len());
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
        let head = dst.as_ptr().align_offset(16).min(dst.len());
        let rest = head + (dst.len() - head) / 16 * 16;
        dst[..head].copy_from_slice(&src[..head]);
        for (d, s) in dst[head..rest].chunks_exact_mut(16).zip(src[head..rest].chunks_exact(16)) {
            // SAFETY: SSE2 is part of x86-64; the load reads the 16 bytes of `s` (any alignment).
            let block = unsafe { _mm_loadu_si128(s.as_ptr().cast::<__m128i>()) };
            // SAFETY: as above; the store writes the 16 bytes of `d`, which are 16-byte aligned
            // (`head` aligned the first block, and each block is 16 bytes on).
            unsafe { _mm_stream_si128(d.as_mut_ptr().cast::<__m128i>(), block) };
        }
        dst[rest..].copy_from_slice(&src[rest..]);
    }
    #[cfg(not(target_arch = "x86_64"))]
    dst.copy_from_slice(src);
}

/// Makes the thread's streaming stores visible before whatever it does next.
fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64; a fence touches no memory.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A read longer than the thread's buffer, into a slot at an odd address, cut short by the
    /// end of the file; an error after streamed bytes.
    #[test]
    fn streamed_reads_move_the_files_bytes() {
        use std::os::fd::AsRawFd;
        let data: Vec<u8> = (0..(600usize << 10) + 5).map(|i| (i % 251) as u8).collect();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, &data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let handle = hipfile_core::FileHandle::open(file.as_raw_fd()).unwrap();
        let side = FileSide::new(&handle, hipfile_core::CacheUse::Bypass);
        let mut slot = vec![0u8; 1 << 20];
        let at = 3 << 10; // the file's bytes from here on: more than two buffers' worth, then its end
        assert_eq!(read_buffered(&side, &mut slot[7..], at as u64), Ok(data.len() - at));
        assert!(slot[7..7 + data.len() - at] == data[at..]);
        assert!(slot[..7].iter().chain(&slot[7 + data.len() - at..]).all(|&b| b == 0));
        // A descriptor that reads nothing: the error, as a plain read gives it.
        assert_eq!(
            read_buffered(&FileSide::for_tests(), &mut slot, 0),
            FileSide::for_tests().read_buffered(&mut [0; 8], 0)
        );
    }

    #[test]
    fn streamed_copies_are_copies_at_any_alignment_and_length() {
        let src: Vec<u8> = (0..5000u32).map(|i| (i * 7 + i / 251) as u8).collect();
        for start in [0, 1, 15, 16, 17, 63, 64] {
            for len in [0, 1, 15, 16, 63, 64, 65, 127, 128, 1000, 4096] {
                let mut dst = vec![0xAAu8; start + len + 8];
                copy(&mut dst[start..start + len], &src[3..3 + len]);
                fence();
                assert_eq!(&dst[start..start + len], &src[3..3 + len], "start {start} len {len}");
                assert!(dst[..start].iter().chain(&dst[start + len..]).all(|&b| b == 0xAA));
            }
        }
    }
}
