//! Which requests a p2p path may serve (semantics §6): upstream's file rule and alignment
//! rule, in one place for every direct engine (AIS, GDS, and the mock p2p path). A
//! registered file carries the facts ([`FileHandle`]: kind, file system, direct descriptor,
//! alignments); the rules live here.

use hipfile_core::file::{Ext4DataMode, FileKind, FsType};
use hipfile_core::{Declined, FileHandle};

/// Whether the p2p path may serve `file`, or why not in words. Upstream's rule: a direct
/// descriptor, and a block device or a regular file on xfs or ext4 `data=ordered`, or on any
/// file system when `unsupported_file_systems` (`HIPFILE_UNSUPPORTED_FILE_SYSTEMS`) is set.
pub fn file_rule(file: &FileHandle, unsupported_file_systems: bool) -> Result<(), Declined> {
    if file.direct_fd().is_none() {
        return Err(format!("the file system ({}) refuses O_DIRECT", file.fs_type()).into());
    }
    if file_system_allows(file.kind(), file.fs_type(), unsupported_file_systems) {
        return Ok(());
    }
    Err(format!(
        "file system {} not supported for P2P (xfs and ext4 data=ordered are; \
         HIPFILE_UNSUPPORTED_FILE_SYSTEMS=true allows any)",
        file.fs_type()
    )
    .into())
}

/// Whether a transfer of `size` bytes at `file_offset` to or from `addr` meets `file`'s direct
/// alignment, or why not in words.
pub fn alignment(file: &FileHandle, file_offset: u64, size: usize, addr: usize) -> Result<(), Declined> {
    if aligned(file.dio_mem_align(), file.dio_offset_align(), file_offset, size, addr) {
        return Ok(());
    }
    Err(Declined::fixed(
        "not aligned for direct I/O: the file offset and size must be multiples of the file's \
         direct-I/O offset alignment and the GPU address of its memory alignment (statx; \
         4 KiB where statx does not say)",
    ))
}

fn file_system_allows(kind: FileKind, fs: &FsType, unsupported_file_systems: bool) -> bool {
    match kind {
        FileKind::BlockDevice => true,
        FileKind::Regular => {
            unsupported_file_systems || matches!(fs, FsType::Xfs | FsType::Ext4(Ext4DataMode::Ordered))
        }
    }
}

/// The alignment rule: offset and size multiples of the offset alignment, the address a
/// multiple of the memory alignment; nothing is aligned without a direct descriptor (0).
fn aligned(mem_align: u32, offset_align: u32, file_offset: u64, size: usize, addr: usize) -> bool {
    let (mem, off) = (u64::from(mem_align), u64::from(offset_align));
    mem != 0
        && off != 0
        && file_offset.is_multiple_of(off)
        && (size as u64).is_multiple_of(off)
        && (addr as u64).is_multiple_of(mem)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alignment_rule() {
        assert!(aligned(512, 4096, 8192, 4096, 512));
        assert!(!aligned(512, 4096, 8192, 4096, 256));
        assert!(!aligned(512, 4096, 8192 + 512, 4096, 512));
        assert!(!aligned(512, 4096, 8192, 100, 512));
        assert!(!aligned(512, 0, 0, 0, 0));
        assert!(!aligned(0, 4096, 0, 0, 0));
    }

    #[test]
    fn file_system_rule() {
        for (fs, allowed) in [
            (FsType::Xfs, true),
            (FsType::Ext4(Ext4DataMode::Ordered), true),
            (FsType::Ext4(Ext4DataMode::Journal), false),
            (FsType::Ext4(Ext4DataMode::Writeback), false),
            (FsType::Tmpfs, false),
            (FsType::Other("nfs".into()), false),
        ] {
            assert_eq!(file_system_allows(FileKind::Regular, &fs, false), allowed, "{fs:?}");
            assert!(file_system_allows(FileKind::Regular, &fs, true), "{fs:?}");
        }
        assert!(file_system_allows(FileKind::BlockDevice, &FsType::None, false));
    }

    #[test]
    fn a_declined_file_says_which_file_system() {
        let file = tempfile::tempfile().unwrap();
        let h = FileHandle::open(std::os::fd::AsRawFd::as_raw_fd(&file)).unwrap();
        match (h.direct_fd(), file_rule(&h, false)) {
            (None, Err(why)) => assert!(why.0.contains("refuses O_DIRECT"), "{why}"),
            (Some(_), Err(why)) => {
                assert!(why.0.starts_with(&format!("file system {} not supported for P2P", h.fs_type())), "{why}")
            }
            (Some(_), Ok(())) => assert!(matches!(h.fs_type(), FsType::Xfs | FsType::Ext4(Ext4DataMode::Ordered))),
            (None, Ok(())) => panic!("no direct descriptor, yet eligible"),
        }
        assert_eq!(file_rule(&h, true).is_ok(), h.direct_fd().is_some());
    }
}
