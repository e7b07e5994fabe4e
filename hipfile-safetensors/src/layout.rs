//! Where each tensor goes in a file saved in safetensors format: the same header, byte for
//! byte, that the safetensors package writes for the same tensors and metadata (so that every
//! safetensors reader loads it, and a file saved twice is the same file).
//!
//! That package's rules (version 0.8, checked by the Python tests against it): the tensors in
//! the order of their dtypes from the widest down ([`Dtype::ALL`] is its order), by name within
//! one dtype, their bytes back to back from offset 0 of the data area; the header compact JSON,
//! `__metadata__` first with its entries in the order given, each tensor as
//! `{"dtype":..,"shape":[..],"data_offsets":[begin,end]}`, strings escaped as serde_json escapes
//! them; spaces after it up to a multiple of 8 bytes.

use std::ops::Range;

use crate::format::{Dtype, Error};

/// One tensor to save: its name, dtype and shape as the header gives them.
#[derive(Clone, Copy, Debug)]
pub struct Entry<'a> {
    /// Its name (any string: JSON escapes what it must).
    pub name: &'a str,
    /// Its element type.
    pub dtype: Dtype,
    /// Its shape (for the packed float kinds, in their own elements: `F4` counts two a byte).
    pub shape: &'a [u64],
}

/// A file's layout: its first bytes, and where each tensor's bytes go after them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The header's length (8 bytes, little-endian), the header, and its padding: the data
    /// area starts right after.
    pub header: Vec<u8>,
    /// For each entry, in the order given, its bytes' `[begin, end)` in the data area.
    pub ranges: Vec<Range<u64>>,
}

/// The layout of a file of `entries` and `metadata` (its pairs in order). An error for a name
/// given twice, a shape whose bytes overflow, or packed elements that do not fill whole bytes.
pub fn layout(entries: &[Entry<'_>], metadata: Option<&[(String, String)]>) -> Result<Layout, Error> {
    let rank = |d: Dtype| Dtype::ALL.iter().position(|(x, _, _)| *x == d).unwrap_or(0);
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_by(|&a, &b| {
        let (a, b) = (&entries[a], &entries[b]);
        rank(b.dtype).cmp(&rank(a.dtype)).then_with(|| a.name.cmp(b.name))
    });
    let mut ranges = vec![0..0; entries.len()];
    let mut json = String::from("{");
    if let Some(metadata) = metadata {
        let pairs: Vec<String> = metadata.iter().map(|(k, v)| format!("{}:{}", quoted(k), quoted(v))).collect();
        json += &format!("\"__metadata__\":{{{}}}", pairs.join(","));
    }
    let mut at = 0u64;
    for (n, &i) in order.iter().enumerate() {
        let e = &entries[i];
        if n > 0 && entries[order[n - 1]].name == e.name {
            return Err(Error::Duplicate(e.name.to_owned()));
        }
        let problem = |p: &str| Error::Tensor { name: e.name.to_owned(), problem: p.to_owned() };
        let bits = e.shape.iter().try_fold(u64::from(e.dtype.bits()), |n, &d| n.checked_mul(d));
        let bits = bits.ok_or_else(|| problem("its size overflows"))?;
        if bits % 8 != 0 {
            return Err(problem("its packed elements do not fill whole bytes"));
        }
        let end = at.checked_add(bits / 8).ok_or_else(|| problem("the file's size overflows"))?;
        if json.len() > 1 {
            json.push(',');
        }
        let shape: Vec<String> = e.shape.iter().map(u64::to_string).collect();
        json += &format!(
            "{}:{{\"dtype\":\"{}\",\"shape\":[{}],\"data_offsets\":[{at},{end}]}}",
            quoted(e.name),
            e.dtype.name(),
            shape.join(",")
        );
        ranges[i] = at..end;
        at = end;
    }
    json.push('}');
    let padded = json.len().next_multiple_of(8);
    let mut header = Vec::with_capacity(8 + padded);
    header.extend_from_slice(&(padded as u64).to_le_bytes());
    header.extend_from_slice(json.as_bytes());
    header.resize(8 + padded, b' ');
    Ok(Layout { header, ranges })
}

/// `s` as a JSON string, escaped as serde_json (and so the safetensors package) escapes it.
fn quoted(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Header;

    fn entry<'a>(name: &'a str, dtype: Dtype, shape: &'a [u64]) -> Entry<'a> {
        Entry { name, dtype, shape }
    }

    #[test]
    fn the_safetensors_packages_bytes() {
        // What safetensors 0.8 wrote for these (see the module docs).
        let entries = [entry("t", Dtype::F32, &[]), entry("e", Dtype::F32, &[0, 3]), entry("é\"\n", Dtype::U8, &[1])];
        let meta = [("k".to_owned(), "ü\t".to_owned())];
        let l = layout(&entries, Some(&meta)).unwrap();
        let json = "{\"__metadata__\":{\"k\":\"ü\\t\"},\"e\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},\
                    \"t\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]},\
                    \"é\\\"\\n\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[4,5]}}       ";
        assert_eq!(&l.header[8..], json.as_bytes());
        assert_eq!(u64::from_le_bytes(l.header[..8].try_into().unwrap()), json.len() as u64);
        assert_eq!(l.ranges, [0..4, 0..0, 4..5]);
        let empty = layout(&[], None).unwrap();
        assert_eq!(empty.header, b"\x08\0\0\0\0\0\0\0{}      ");
        let f4 = layout(&[entry("t", Dtype::F4, &[3, 8])], None).unwrap();
        assert_eq!(f4.ranges, vec![std::ops::Range { start: 0, end: 12 }]);
    }

    #[test]
    fn widest_dtypes_first_then_names_and_the_header_reads_back() {
        let entries = [
            entry("b", Dtype::BF16, &[2, 2]),
            entry("a", Dtype::U8, &[3]),
            entry("c", Dtype::F64, &[1]),
            entry("a2", Dtype::BF16, &[1]),
        ];
        let l = layout(&entries, None).unwrap();
        assert_eq!(l.ranges, [10..18, 18..21, 0..8, 8..10]);
        let data_len = 21;
        let header = Header::parse(&l.header, l.header.len() as u64 + data_len).unwrap();
        let names: Vec<&str> = header.tensors.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["c", "a2", "b", "a"]);
    }

    #[test]
    fn what_cannot_be_saved() {
        let twice = [entry("x", Dtype::U8, &[1]), entry("x", Dtype::U8, &[2])];
        assert!(matches!(layout(&twice, None), Err(Error::Duplicate(_))));
        assert!(matches!(layout(&[entry("x", Dtype::F64, &[u64::MAX, 2])], None), Err(Error::Tensor { .. })));
        assert!(matches!(layout(&[entry("x", Dtype::F4, &[3])], None), Err(Error::Tensor { .. })));
    }
}
