//! safetensors checkpoints: headers checked and turned into load plans, sharded files found,
//! a rank's rows.

use std::collections::BTreeMap;

use hipfile_safetensors::Header;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use crate::common::add_functions;

/// Adds this file's calls (and classes) to the native module: a `#[pyfunction]` here is named here.
pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    add_functions!(m, safetensors_header, safetensors_checkpoint, safetensors_shard_rows, safetensors_layout);
    Ok(())
}

/// A safetensors error as Python's: `OSError` for a file that cannot be read, else a
/// `ValueError` naming the problem.
pub(crate) fn safetensors_err(e: hipfile_safetensors::Error, path: &std::path::Path) -> PyErr {
    match e {
        hipfile_safetensors::Error::Io(io) => PyErr::from(io),
        hipfile_safetensors::Error::Checkpoint(why) => PyValueError::new_err(why),
        other => PyValueError::new_err(format!("{}: {other}", path.display())),
    }
}

/// One tensor of a header: `(name, dtype, shape, begin, end, row_bytes)`, `row_bytes` the
/// bytes of one row of the first dimension (`None` for a scalar, or a row of a packed dtype
/// that does not end on a byte).
pub(crate) type TensorEntry = (String, &'static str, Vec<u64>, u64, u64, Row);

/// A tensor's row along its first dimension, as Python sees it: its bytes (an int), or why it
/// has none to slice (a str, the message of the `SafetensorError` slicing it raises).
#[derive(IntoPyObject)]
pub(crate) enum Row {
    Bytes(u64),
    Refused(String),
}

/// The checked header of the safetensors file at `path` (hipfile-safetensors): `(data_start,
/// data_len, [tensor entries], metadata or None)`, tensors in offset order.
#[pyfunction]
pub(crate) fn safetensors_header(py: Python<'_>, path: std::path::PathBuf) -> PyResult<HeaderTuple> {
    let read =
        py.detach(|| std::fs::File::open(&path).map_err(hipfile_safetensors::Error::Io).and_then(|f| Header::read(&f)));
    let header = read.map_err(|e| safetensors_err(e, &path))?;
    Ok(header_tuple(header))
}

/// A checked header as Python gets it: `(data_start, data_len, [tensor entries], metadata or
/// None)`.
pub(crate) type HeaderTuple = (u64, u64, Vec<TensorEntry>, Option<BTreeMap<String, String>>);

/// `header` as Python gets it ([`HeaderTuple`]).
pub(crate) fn header_tuple(header: Header) -> HeaderTuple {
    let tensors = header
        .tensors
        .into_iter()
        .map(|t| {
            // The bytes of a row, or why the tensor has none to slice.
            let row = t.row_bytes().map_or_else(|e| Row::Refused(e.to_string()), Row::Bytes);
            (t.name, t.dtype.name(), t.shape, t.begin, t.end, row)
        })
        .collect();
    (header.data_start, header.data_len, tensors, header.metadata)
}

/// The files of the checkpoint `path` names and its index's weight map
/// (`hipfile_safetensors::checkpoint`).
#[pyfunction]
pub(crate) fn safetensors_checkpoint(
    path: std::path::PathBuf,
) -> PyResult<(Vec<std::path::PathBuf>, BTreeMap<String, String>)> {
    let c = hipfile_safetensors::checkpoint(&path).map_err(|e| safetensors_err(e, &path))?;
    Ok((c.files, c.weight_map))
}

/// The rows `rank` of `world` loads of a first dimension of `rows`
/// (`hipfile_safetensors::shard_rows`): `(start, stop)`.
#[pyfunction]
pub(crate) fn safetensors_shard_rows(rows: u64, rank: u64, world: u64) -> (u64, u64) {
    let r = hipfile_safetensors::shard_rows(rows, rank, world);
    (r.start, r.end)
}

/// A file's first bytes, and each tensor's `(begin, end)` in its data area.
pub(crate) type FileLayout = (Vec<u8>, Vec<(u64, u64)>);

/// The layout of a file of `entries` `(name, dtype, shape)` and `metadata` (its pairs in
/// order) that the safetensors package would write (`hipfile_safetensors::layout`): the file's
/// first bytes, and each entry's `(begin, end)` in the data area.
#[pyfunction]
#[pyo3(signature = (entries, metadata = None))]
pub(crate) fn safetensors_layout(
    entries: Vec<(String, String, Vec<u64>)>,
    metadata: Option<Vec<(String, String)>>,
) -> PyResult<FileLayout> {
    let mut checked = Vec::with_capacity(entries.len());
    for (name, dtype, shape) in &entries {
        let dtype = hipfile_safetensors::Dtype::from_name(dtype)
            .ok_or_else(|| PyValueError::new_err(format!("tensor {name:?}: no safetensors dtype {dtype:?}")))?;
        checked.push(hipfile_safetensors::Entry { name, dtype, shape });
    }
    let layout =
        hipfile_safetensors::layout(&checked, metadata.as_deref()).map_err(|e| PyValueError::new_err(e.to_string()))?;
    Ok((layout.header, layout.ranges.into_iter().map(|r| (r.start, r.end)).collect()))
}
