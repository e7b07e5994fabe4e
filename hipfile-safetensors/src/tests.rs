use super::*;
use proptest::prelude::*;

/// A file: the header's length, `json`, then `data`.
fn file(json: &str, data: &[u8]) -> Vec<u8> {
    let mut out = (json.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(json.as_bytes());
    out.extend_from_slice(data);
    out
}

fn parse(json: &str, data_len: usize) -> Result<Header, Error> {
    let f = file(json, &vec![0; data_len]);
    Header::parse(&f, f.len() as u64)
}

fn problem(json: &str, data_len: usize) -> String {
    parse(json, data_len).expect_err("must be refused").to_string()
}

#[test]
fn a_header_gives_its_tensors_in_offset_order_and_its_metadata() {
    let json = r#"{"b":{"dtype":"F32","shape":[2,2],"data_offsets":[8,24]},
        "__metadata__":{"format":"pt"},
        "a":{"dtype":"BF16","shape":[4],"data_offsets":[0,8]},
        "e":{"dtype":"I64","shape":[0,3],"data_offsets":[24,24]}}   "#;
    let h = parse(json, 24).unwrap();
    assert_eq!(h.data_start, 8 + json.len() as u64);
    assert_eq!(h.data_len, 24);
    let names: Vec<&str> = h.tensors.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["a", "b", "e"]);
    assert_eq!(h.get("b").unwrap().shape, [2, 2]);
    assert_eq!(h.get("b").unwrap().dtype, Dtype::F32);
    assert!(h.get("e").unwrap().is_empty());
    assert_eq!(h.metadata.unwrap()["format"], "pt");
    assert!(parse("{}", 0).unwrap().tensors.is_empty(), "no tensors at all");
    assert!(parse("{}", 5).is_ok(), "bytes no tensor uses are allowed");
}

#[test]
fn every_dtype_has_its_name_and_size() {
    assert_eq!(Dtype::ALL.len(), 22);
    for (d, name, bits) in Dtype::ALL {
        assert_eq!(Dtype::from_name(name), Some(d));
        assert_eq!((d.name(), d.bits()), (name, bits));
    }
    assert_eq!(Dtype::from_name("bf16"), None, "names are exact");
    let bf16 = r#"{"w":{"dtype":"F4","shape":[3,2],"data_offsets":[0,3]}}"#;
    assert_eq!(parse(bf16, 3).unwrap().tensors[0].dtype, Dtype::F4);
}

#[test]
fn lengths_past_the_file_or_the_limit_are_refused() {
    assert!(matches!(Header::parse(&[1, 2, 3], 3), Err(Error::TooShort { .. })));
    let mut f = (MAX_HEADER + 1).to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert!(matches!(Header::parse(&f, 10), Err(Error::HeaderTooLarge { .. })));
    let f = file("{}", b"");
    assert!(matches!(Header::parse(&f[..9], 9), Err(Error::HeaderPastEnd { .. })), "truncated header");
    let mut f = u64::MAX.to_le_bytes().to_vec();
    f.extend_from_slice(b"{}");
    assert!(matches!(Header::parse(&f, 10), Err(Error::HeaderTooLarge { .. })));
}

#[test]
fn each_wrong_header_is_named() {
    let cases = [
        (r#"[1,2]"#, "not a JSON object"),
        ("null", "not a JSON object"),
        (r#"{"a":1"#, "not a JSON object"),
        (r#"{} {}"#, "not a JSON object"),
        (r#"{"__metadata__":[1]}"#, "__metadata__ is an array"),
        (r#"{"__metadata__":{"k":1}}"#, r#"entry "k" is a number"#),
        (r#"{"__metadata__":{},"__metadata__":{}}"#, "appears twice"),
        (
            r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"a":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}}"#,
            "appears twice",
        ),
        (r#"{"a":7}"#, "is a number, not an object"),
        (r#"{"a":{"shape":[1],"data_offsets":[0,1]}}"#, "has no dtype"),
        (r#"{"a":{"dtype":"Q8","shape":[1],"data_offsets":[0,1]}}"#, r#"unknown dtype "Q8""#),
        (r#"{"a":{"dtype":8,"shape":[1],"data_offsets":[0,1]}}"#, "dtype is a number"),
        (r#"{"a":{"dtype":"U8","shape":[-1],"data_offsets":[0,1]}}"#, "not a non-negative integer"),
        (r#"{"a":{"dtype":"U8","shape":[1.5],"data_offsets":[0,1]}}"#, "not a non-negative integer"),
        (r#"{"a":{"dtype":"U8","shape":1,"data_offsets":[0,1]}}"#, "shape is not an array"),
        (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1,2]}}"#, "has 3 numbers"),
        (r#"{"a":{"dtype":"U8","shape":[1],"data_offsets":[1,0]}}"#, "run backwards"),
        (r#"{"a":{"dtype":"U8","shape":[9],"data_offsets":[0,9]}}"#, "past the 8-byte data area"),
        (r#"{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}}"#, "is 8 bytes, but"),
        (r#"{"a":{"dtype":"F64","shape":[4294967296,4294967296],"data_offsets":[0,8]}}"#, "overflows"),
        (r#"{"a":{"dtype":"F4","shape":[3],"data_offsets":[0,1]}}"#, "whole bytes"),
        (
            r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[2],"data_offsets":[3,5]}}"#,
            "overlap",
        ),
        (
            r#"{"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"b":{"dtype":"U8","shape":[0],"data_offsets":[2,2]}}"#,
            "overlap",
        ),
    ];
    for (json, expected) in cases {
        let got = problem(json, 8);
        assert!(got.contains(expected), "{json}: {got:?} does not say {expected:?}");
    }
}

#[test]
fn a_name_that_is_not_utf8_is_refused() {
    let mut f = file("{\"\u{e9}\":{}}", b"");
    let at = f.iter().position(|&b| b == 0xc3).unwrap();
    f[at] = 0xff; // no longer UTF-8
    assert!(matches!(Header::parse(&f, f.len() as u64), Err(Error::Json(_))));
    let lone = file(r#"{"\ud800":{"dtype":"U8","shape":[0],"data_offsets":[0,0]}}"#, b"");
    assert!(Header::parse(&lone, lone.len() as u64).is_err(), "a lone surrogate is no name");
}

#[test]
fn rows_are_byte_ranges_of_the_first_dimension() {
    let json = r#"{"m":{"dtype":"BF16","shape":[4,3],"data_offsets":[8,32]},
        "s":{"dtype":"F32","shape":[],"data_offsets":[0,4]},
        "p":{"dtype":"F4","shape":[2,3],"data_offsets":[32,35]}}"#;
    let h = parse(json, 40).unwrap();
    let m = h.get("m").unwrap();
    assert_eq!(m.rows(1..3).unwrap(), 14..26);
    assert_eq!(m.rows(0..4).unwrap(), 8..32);
    assert_eq!(m.rows(2..2).unwrap(), 20..20);
    assert!(m.rows(3..5).unwrap_err().to_string().contains("not within its 4 rows"));
    assert!(m.rows(Range { start: 3, end: 2 }).is_err(), "rows running backwards");
    assert!(h.get("s").unwrap().rows(0..1).unwrap_err().to_string().contains("scalar"));
    assert!(h.get("p").unwrap().rows(0..1).unwrap_err().to_string().contains("byte boundary"));
}

#[test]
fn shards_split_rows_as_torch_chunk_does() {
    assert_eq!(shard_rows(10, 0, 2), 0..5);
    assert_eq!(shard_rows(10, 1, 2), 5..10);
    assert_eq!(shard_rows(10, 2, 4), 6..9);
    assert_eq!(shard_rows(10, 3, 4), 9..10);
    assert_eq!(shard_rows(2, 3, 4), 2..2, "more ranks than rows: empty");
    assert_eq!(shard_rows(0, 0, 1), 0..0);
    assert_eq!(shard_rows(7, 0, 1), 0..7);
}

#[test]
fn a_file_reads_as_its_bytes_parse() {
    let json = r#"{"a":{"dtype":"U16","shape":[2],"data_offsets":[0,4]}}"#;
    let bytes = file(json, &[1, 2, 3, 4]);
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.safetensors");
    std::fs::write(&path, &bytes).unwrap();
    let read = Header::read(&File::open(&path).unwrap()).unwrap();
    assert_eq!(read, Header::parse(&bytes, bytes.len() as u64).unwrap());
    std::fs::write(&path, &bytes[..20]).unwrap();
    assert!(matches!(Header::read(&File::open(&path).unwrap()), Err(Error::HeaderPastEnd { .. })));
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(Header::read(&File::open(&path).unwrap()), Err(Error::TooShort { file_size: 0 })));
}

/// A tensor's name, dtype and shape.
type Spec = (String, Dtype, Vec<u64>);

/// A valid file: tensors of random dtypes and shapes laid out in order, with gaps.
fn valid_file() -> impl Strategy<Value = (Vec<u8>, Vec<Spec>)> {
    let tensor = (0..Dtype::ALL.len(), proptest::collection::vec(0u64..6, 0..4), 0u64..3);
    proptest::collection::vec(tensor, 0..8).prop_map(|specs| {
        let mut entries = Vec::new();
        let mut at = 0u64;
        let mut expected = Vec::new();
        for (i, (d, mut shape, gap)) in specs.into_iter().enumerate() {
            let (dtype, name, bits) = Dtype::ALL[d];
            if bits < 8 {
                shape.push(8); // whole bytes
            }
            let bytes = shape.iter().product::<u64>() * u64::from(bits) / 8;
            at += gap;
            let n = format!("t{i}");
            entries
                .push(format!(r#""{n}":{{"dtype":"{name}","shape":{shape:?},"data_offsets":[{at},{}]}}"#, at + bytes));
            expected.push((n, dtype, shape));
            at += bytes;
        }
        let json = format!("{{{}}}", entries.join(","));
        (file(&json, &vec![0xab; at as usize]), expected)
    })
}

proptest! {
    #[test]
    fn valid_files_parse_to_what_was_written((bytes, expected) in valid_file()) {
        let h = Header::parse(&bytes, bytes.len() as u64).unwrap();
        let got: Vec<Spec> =
            h.tensors.iter().map(|t| (t.name.clone(), t.dtype, t.shape.clone())).collect();
        prop_assert_eq!(got, expected);
        fuzz_one(&bytes);
    }

    #[test]
    fn damaged_files_never_panic_and_what_parses_holds(
        (bytes, _) in valid_file(),
        edits in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..6),
        cut in any::<prop::sample::Index>(),
    ) {
        let mut bytes = bytes;
        for (at, b) in edits {
            let i = at.index(bytes.len());
            bytes[i] = b;
        }
        fuzz_one(&bytes);
        fuzz_one(&bytes[..cut.index(bytes.len() + 1)]);
    }
}

#[test]
fn a_checkpoint_is_a_file_its_index_or_its_directory() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert!(checkpoint(d).unwrap_err().to_string().contains("no .safetensors files"));
    for name in ["b.safetensors", "a.safetensors", "notes.txt"] {
        std::fs::write(d.join(name), b"").unwrap();
    }
    assert_eq!(checkpoint(d).unwrap().files, [d.join("a.safetensors"), d.join("b.safetensors")]);
    assert_eq!(checkpoint(&d.join("b.safetensors")).unwrap().files, [d.join("b.safetensors")]);
    let index = d.join("model.safetensors.index.json");
    std::fs::write(&index, r#"{"weight_map":{"x":"b.safetensors","y":"b.safetensors"}}"#).unwrap();
    let c = checkpoint(d).unwrap();
    assert_eq!(c.files, [d.join("b.safetensors")]);
    assert_eq!(c.weight_map["y"], "b.safetensors");
    for (text, why) in [
        (r#"{"weight_map":{"x":"../etc/passwd"}}"#, "not a file of this directory"),
        (r#"{"weight_map":{"x":1}}"#, "not an object of file names"),
        (r#"{"metadata":{}}"#, "no weight_map"),
        ("not json", "not a safetensors index"),
    ] {
        std::fs::write(&index, text).unwrap();
        let got = checkpoint(d).unwrap_err().to_string();
        assert!(got.contains(why) && got.contains("model.safetensors.index.json"), "{got}");
    }
}
