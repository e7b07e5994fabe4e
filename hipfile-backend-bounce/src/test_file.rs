//! A file for the unit tests: `data` in a fresh directory, open and opened as a `FileHandle`
//! (the directory and the descriptor live as long as the handle).

use std::os::fd::AsRawFd;

pub(crate) struct TestFile {
    pub(crate) handle: hipfile_core::FileHandle,
    pub(crate) file: std::fs::File,
    _dir: tempfile::TempDir,
}

impl TestFile {
    pub(crate) fn new(data: &[u8]) -> TestFile {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, data).unwrap();
        let file = std::fs::File::open(&path).unwrap();
        let handle = hipfile_core::FileHandle::open(file.as_raw_fd()).unwrap();
        TestFile { handle, file, _dir: dir }
    }
}
