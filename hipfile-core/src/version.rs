//! The one version of hipfile-rs: upstream hipFile's API version it implements, which is the
//! version of every artifact (docs/compat.md, "Version").

/// The version of upstream hipFile's API this library implements (`hipFileGetVersion`, the
/// header's `HIPFILE_VERSION_*`, the driver properties), which is the version of every artifact
/// of hipfile-rs: the workspace's, set in one place (its `Cargo.toml`). 0.5.0, the first release
/// with the statistics calls (docs/compat.md, "Version").
pub const API_VERSION: (u32, u32, u32) = parse_version(env!("CARGO_PKG_VERSION"));

/// `major.minor.patch` as numbers, at compile time (a version of another shape does not build).
const fn parse_version(text: &str) -> (u32, u32, u32) {
    let bytes = text.as_bytes();
    let mut parts = [0u32; 3];
    let (mut part, mut i) = (0, 0);
    while i < bytes.len() {
        match bytes[i] {
            b'.' if part < 2 => part += 1,
            b @ b'0'..=b'9' => parts[part] = parts[part] * 10 + (b - b'0') as u32,
            _ => panic!("the workspace version is major.minor.patch"),
        }
        i += 1;
    }
    assert!(part == 2, "the workspace version is major.minor.patch");
    (parts[0], parts[1], parts[2])
}
