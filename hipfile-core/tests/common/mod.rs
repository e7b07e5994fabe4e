//! Shared fixtures of the mock crate's integration tests.
#![allow(dead_code, unreachable_pub)]

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use hipfile_backend_mock::{MockGpu, MockPlatform};
use hipfile_core::Driver;

/// A driver on a fresh mock GPU, configured by `vars` instead of the process environment.
pub fn driver(vars: &[(&str, &str)]) -> (Arc<MockGpu>, Driver<MockPlatform>) {
    let gpu = MockGpu::new(2);
    let vars: Vec<(String, String)> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    let driver = Driver::with_env(MockPlatform::new(Arc::clone(&gpu)), move |name| {
        vars.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone())
    });
    (gpu, driver)
}

/// A temporary file (on the same file system as the test's temp dir) holding `data`.
pub fn file_with(data: &[u8]) -> (tempfile::TempDir, File) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("data");
    std::fs::write(&path, data).unwrap();
    let file = std::fs::OpenOptions::new().read(true).write(true).open(&path).unwrap();
    (dir, file)
}

/// Deterministic, position-dependent bytes.
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len).map(|i| (i as u32).wrapping_mul(2_654_435_761).to_le_bytes()[1] ^ seed).collect()
}

/// The whole contents of `file`.
pub fn contents(file: &File) -> Vec<u8> {
    std::fs::read(format!("/proc/self/fd/{}", file.as_raw_fd())).unwrap()
}
