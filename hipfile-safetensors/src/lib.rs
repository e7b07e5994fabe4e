//! safetensors headers, read as untrusted input (docs/safetensors.md).
//!
//! A safetensors file is an 8-byte little-endian length `n`, `n` bytes of JSON (an object: per
//! tensor its `dtype`, `shape` and `data_offsets` `[begin, end)` within the data area, and an
//! optional `__metadata__` object of strings), then the data area. [`Header::read`] and
//! [`Header::parse`] check everything a loader trusts before it moves a byte: the length against
//! the file and a limit, the JSON, every name once, known dtypes, shapes whose bytes match their
//! offsets (without overflow), every range inside the data area, no two ranges overlapping.
//! What they return can be read into one allocation of `data_len` bytes, range by range, without
//! a check of its own.

use std::collections::{BTreeMap, HashSet};
use std::fmt;
use std::fs::File;
use std::ops::Range;

use serde::de::{self, Deserializer as _, MapAccess, Visitor};
use serde_json::Value;

mod format;
mod layout;
pub use format::{Dtype, Error, MAX_HEADER};
pub use layout::{Entry, Layout, layout};

/// One tensor of a header: its bytes are `begin..end` of the data area.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tensor {
    /// Its name (a JSON string, so valid UTF-8).
    pub name: String,
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape (empty for a scalar).
    pub shape: Vec<u64>,
    /// Its first byte, from the start of the data area.
    pub begin: u64,
    /// One past its last byte, from the start of the data area.
    pub end: u64,
}

impl Tensor {
    /// Its size in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.begin
    }

    /// Whether it holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.begin == self.end
    }

    /// The bytes of one row along its first dimension. A scalar has no rows; a row of a
    /// packed dtype that does not end on a byte cannot be read apart.
    pub fn row_bytes(&self) -> Result<u64, Error> {
        let problem = |p: String| Error::Tensor { name: self.name.clone(), problem: p };
        let Some((_, rest)) = self.shape.split_first() else {
            return Err(problem("a scalar has no rows to slice".into()));
        };
        // The shape's bytes were checked against its offsets, so these products do not overflow.
        let bits = rest.iter().product::<u64>() * u64::from(self.dtype.bits());
        if bits % 8 != 0 {
            return Err(problem(format!("a row of {} does not end on a byte boundary", self.dtype.name())));
        }
        Ok(bits / 8)
    }

    /// The bytes (within the data area) of rows `rows` along its first dimension, the shape
    /// tensor-parallel loading reads; rows past the first dimension are an error, as is what
    /// [`row_bytes`](Self::row_bytes) refuses.
    pub fn rows(&self, rows: Range<u64>) -> Result<Range<u64>, Error> {
        let row = self.row_bytes()?;
        let first = self.shape[0];
        if rows.start > rows.end || rows.end > first {
            return Err(Error::Tensor {
                name: self.name.clone(),
                problem: format!("rows {}..{} are not within its {first} rows", rows.start, rows.end),
            });
        }
        Ok(self.begin + rows.start * row..self.begin + rows.end * row)
    }
}

/// The rows `rank` of `world` gets of a first dimension of `rows`: equal parts of
/// `ceil(rows / world)`, the last ones shorter or empty (`torch.chunk`'s split).
pub fn shard_rows(rows: u64, rank: u64, world: u64) -> Range<u64> {
    let part = rows.div_ceil(world.max(1));
    let start = (rank * part).min(rows);
    start..(start + part).min(rows)
}

/// A checked header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    /// Where the data area starts in the file (`8 + n`).
    pub data_start: u64,
    /// The data area's size: from `data_start` to the end of the file.
    pub data_len: u64,
    /// The tensors, in the order of their offsets (empty ones at one offset by name).
    pub tensors: Vec<Tensor>,
    /// `__metadata__`, where the header has it.
    pub metadata: Option<BTreeMap<String, String>>,
}

/// The header's length, from the first 8 bytes of a file of `file_size` bytes, checked.
fn header_len(prefix: [u8; 8], file_size: u64) -> Result<u64, Error> {
    let len = u64::from_le_bytes(prefix);
    if len > MAX_HEADER {
        return Err(Error::HeaderTooLarge { len });
    }
    if len > file_size - 8 {
        return Err(Error::HeaderPastEnd { len, file_size });
    }
    Ok(len)
}

impl Header {
    /// Reads and checks the header of `file`.
    pub fn read(file: &File) -> Result<Header, Error> {
        let file_size = file.metadata()?.len();
        Self::read_at(file_size, |at, buf| std::os::unix::fs::FileExt::read_at(file, buf, at))
    }

    /// Reads and checks the header of a file (or an object) of `file_size` bytes whose bytes at
    /// an offset `read(offset, buf)` gives (as `pread`: fewer at the end, 0 past it): its length
    /// first, then only the header.
    pub fn read_at(
        file_size: u64,
        mut read: impl FnMut(u64, &mut [u8]) -> std::io::Result<usize>,
    ) -> Result<Header, Error> {
        if file_size < 8 {
            return Err(Error::TooShort { file_size });
        }
        let mut fill = |at: u64, buf: &mut [u8]| -> std::io::Result<usize> {
            let mut done = 0;
            while done < buf.len() {
                match read(at + done as u64, &mut buf[done..]) {
                    Ok(0) => break,
                    Ok(n) => done += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            Ok(done)
        };
        let mut prefix = [0u8; 8];
        if fill(0, &mut prefix)? < 8 {
            return Err(Error::TooShort { file_size });
        }
        let len = header_len(prefix, file_size)?;
        let mut json = vec![0u8; len as usize];
        let got = fill(8, &mut json)?;
        if got < json.len() {
            // The file shrank since its size was read.
            return Err(Error::HeaderPastEnd { len, file_size: 8 + got as u64 });
        }
        Self::from_json(&json, file_size)
    }

    /// Checks the header of a file of `file_size` bytes that starts with `bytes` (at least its
    /// length and its header).
    pub fn parse(bytes: &[u8], file_size: u64) -> Result<Header, Error> {
        let Some(prefix) = bytes.first_chunk::<8>() else {
            return Err(Error::TooShort { file_size: bytes.len() as u64 });
        };
        if file_size < 8 {
            return Err(Error::TooShort { file_size });
        }
        let len = header_len(*prefix, file_size)?;
        let json = bytes.get(8..8 + len as usize).ok_or(Error::HeaderPastEnd { len, file_size: bytes.len() as u64 })?;
        Self::from_json(json, file_size)
    }

    fn from_json(json: &[u8], file_size: u64) -> Result<Header, Error> {
        let data_start = 8 + json.len() as u64;
        let data_len = file_size - data_start;
        let mut de = serde_json::Deserializer::from_slice(json);
        let entries = de.deserialize_map(Entries).map_err(|e| Error::Json(e.to_string()))?;
        de.end().map_err(|e| Error::Json(e.to_string()))?;
        let mut seen = HashSet::new();
        let mut metadata = None;
        let mut tensors = Vec::new();
        for (name, value) in entries {
            if !seen.insert(name.clone()) {
                return Err(Error::Duplicate(name));
            }
            if name == "__metadata__" {
                metadata = Some(parse_metadata(value)?);
            } else {
                tensors.push(parse_tensor(name, &value, data_len)?);
            }
        }
        // Empty tensors may share an offset: those in name order.
        tensors.sort_by(|a, b| (a.begin, a.end, &a.name).cmp(&(b.begin, b.end, &b.name)));
        for pair in tensors.windows(2) {
            if pair[1].begin < pair[0].end {
                return Err(Error::Overlap { first: pair[0].name.clone(), second: pair[1].name.clone() });
            }
        }
        Ok(Header { data_start, data_len, tensors, metadata })
    }

    /// The tensor called `name`.
    pub fn get(&self, name: &str) -> Option<&Tensor> {
        self.tensors.iter().find(|t| t.name == name)
    }
}

/// The top-level object's entries, in order, duplicates kept (for the check above).
struct Entries;

impl<'de> Visitor<'de> for Entries {
    type Value = Vec<(String, Value)>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an object of tensors")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut entries = Vec::new();
        while let Some(name) = map.next_key::<String>()? {
            let value: Value = map.next_value()?;
            entries.push((name, value));
        }
        Ok(entries)
    }

    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Err(E::custom("null is not an object of tensors"))
    }
}

fn parse_metadata(value: Value) -> Result<BTreeMap<String, String>, Error> {
    let Value::Object(map) = value else {
        return Err(Error::Metadata(format!("is {}, not an object", kind(&value))));
    };
    map.into_iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k, s)),
            other => Err(Error::Metadata(format!("entry {k:?} is {}, not a string", kind(&other)))),
        })
        .collect()
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn parse_tensor(name: String, value: &Value, data_len: u64) -> Result<Tensor, Error> {
    let fail = |problem: String| Error::Tensor { name: name.clone(), problem };
    let Value::Object(fields) = value else {
        return Err(fail(format!("is {}, not an object with dtype, shape and data_offsets", kind(value))));
    };
    let field = |key: &str| fields.get(key).ok_or_else(|| fail(format!("has no {key}")));
    let dtype = match field("dtype")? {
        Value::String(s) => Dtype::from_name(s).ok_or_else(|| fail(format!("unknown dtype {s:?}")))?,
        other => return Err(fail(format!("dtype is {}, not a string", kind(other)))),
    };
    let integers = |key: &str| -> Result<Vec<u64>, Error> {
        let Value::Array(items) = field(key)? else {
            return Err(fail(format!("{key} is not an array")));
        };
        items
            .iter()
            .map(|v| v.as_u64().ok_or_else(|| fail(format!("{key} holds {v}, not a non-negative integer"))))
            .collect()
    };
    let shape = integers("shape")?;
    let offsets = integers("data_offsets")?;
    let &[begin, end] = offsets.as_slice() else {
        return Err(fail(format!("data_offsets has {} numbers, not 2", offsets.len())));
    };
    if begin > end {
        return Err(fail(format!("data_offsets [{begin}, {end}] run backwards")));
    }
    if end > data_len {
        return Err(fail(format!("data_offsets [{begin}, {end}] end past the {data_len}-byte data area")));
    }
    let bits = shape
        .iter()
        .try_fold(u64::from(dtype.bits()), |acc, &d| acc.checked_mul(d))
        .ok_or_else(|| fail(format!("shape {shape:?} of {} overflows", dtype.name())))?;
    if bits % 8 != 0 {
        return Err(fail(format!("shape {shape:?} of {} does not fill whole bytes", dtype.name())));
    }
    if bits / 8 != end - begin {
        return Err(fail(format!(
            "shape {shape:?} of {} is {} bytes, but data_offsets [{begin}, {end}] hold {}",
            dtype.name(),
            bits / 8,
            end - begin
        )));
    }
    Ok(Tensor { name, dtype, shape, begin, end })
}

/// A checkpoint: its safetensors files, and the index's weight map (tensor name to file name;
/// empty without an index).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Checkpoint {
    /// The files, sorted.
    pub files: Vec<std::path::PathBuf>,
    /// `weight_map` of `model.safetensors.index.json`.
    pub weight_map: BTreeMap<String, String>,
}

/// The checkpoint `path` names: a file itself, or a directory's files (those its
/// `model.safetensors.index.json` maps tensors to, which must be files of the directory, else
/// every `*.safetensors` in it).
pub fn checkpoint(path: &std::path::Path) -> Result<Checkpoint, Error> {
    if !path.is_dir() {
        return Ok(Checkpoint { files: vec![path.to_owned()], ..Checkpoint::default() });
    }
    let index = path.join("model.safetensors.index.json");
    let shown = index.display();
    if index.exists() {
        let text = std::fs::read(&index)?;
        let bad = |why: String| Error::Checkpoint(format!("{shown}: {why}"));
        let parsed: Value = serde_json::from_slice(&text).map_err(|e| bad(format!("not a safetensors index ({e})")))?;
        let map =
            parsed.get("weight_map").and_then(Value::as_object).ok_or_else(|| bad("no weight_map object".into()))?;
        let mut weight_map = BTreeMap::new();
        for (tensor, file) in map {
            let name = file.as_str().ok_or_else(|| bad("weight_map is not an object of file names".into()))?;
            if std::path::Path::new(name).file_name().and_then(|n| n.to_str()) != Some(name) {
                return Err(bad(format!("{name:?} is not a file of this directory")));
            }
            weight_map.insert(tensor.clone(), name.to_owned());
        }
        let mut files: Vec<_> = weight_map.values().map(|n| path.join(n)).collect();
        files.sort();
        files.dedup();
        return Ok(Checkpoint { files, weight_map });
    }
    let mut files: Vec<_> = std::fs::read_dir(path)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "safetensors"))
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::Checkpoint(format!(
            "{}: no model.safetensors.index.json and no .safetensors files",
            path.display()
        )));
    }
    Ok(Checkpoint { files, ..Checkpoint::default() })
}

/// The fuzz target's body (hipfile-safetensors/fuzz): any bytes as a whole file. What parses
/// must hold every promise of [`Header`]; nothing may panic.
#[doc(hidden)]
pub fn fuzz_one(data: &[u8]) {
    let Ok(header) = Header::parse(data, data.len() as u64) else {
        return;
    };
    assert_eq!(header.data_start + header.data_len, data.len() as u64);
    let mut last_end = 0;
    for t in &header.tensors {
        assert!(t.begin <= t.end && t.end <= header.data_len, "{t:?} outside the data area");
        assert!(t.begin >= last_end, "{t:?} overlaps the tensor before it");
        last_end = t.end;
        let bits = t.shape.iter().fold(u128::from(t.dtype.bits()), |a, &d| a * u128::from(d));
        assert_eq!(bits, u128::from(t.len()) * 8);
        if let Some(&rows) = t.shape.first()
            && let Ok(range) = t.rows(0..rows)
        {
            assert_eq!(range, t.begin..t.end);
        }
    }
}

#[cfg(test)]
mod tests;
