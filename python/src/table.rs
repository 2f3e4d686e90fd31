//! Tables across the boundary through the Arrow C stream interface (the Arrow PyCapsule
//! interface): [`PyTable`] hands its record batches to any reader as an `FFI_ArrowArrayStream` in
//! a capsule named `arrow_array_stream` (`pa.table(t)`, `pl.DataFrame(t)`, DuckDB, …), and
//! [`from_stream`] takes one from any object with `__arrow_c_stream__` (a pyarrow Table, a
//! polars or pandas DataFrame). No pyarrow is needed for either.

use std::ffi::CStr;
use std::sync::Arc;

use arrow_array::ffi_stream::{FFI_ArrowArrayStream, RecordBatchStreamReader};
use arrow_array::{RecordBatch, RecordBatchIterator, RecordBatchReader};
use arrow_schema::SchemaRef;
use pyo3::prelude::*;
use pyo3::types::PyCapsule;

use crate::errors::{Failure, Kind};

/// The capsule name the interface fixes.
const STREAM: &CStr = c"arrow_array_stream";

/// A table read whole: its schema and record batches. Each `__arrow_c_stream__` call hands
/// out a new stream over the same batches, so a table can be read any number of times.
#[pyclass(frozen, module = "epimine._epimine", name = "Table")]
pub(crate) struct PyTable {
    pub(crate) schema: SchemaRef,
    pub(crate) batches: Vec<RecordBatch>,
}

#[pymethods]
impl PyTable {
    /// The Arrow PyCapsule interface: a capsule holding an `ArrowArrayStream` of the table.
    /// `requested_schema` is accepted and not applied (the interface lets a producer keep its
    /// own schema).
    #[pyo3(signature = (requested_schema=None))]
    fn __arrow_c_stream__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyCapsule>> {
        let _ = requested_schema;
        let reader = RecordBatchIterator::new(
            self.batches.clone().into_iter().map(Ok),
            Arc::clone(&self.schema),
        );
        let stream = FFI_ArrowArrayStream::new(Box::new(reader));
        // The capsule owns the stream; a reader moves it out (leaving it released), and the
        // capsule's destructor releases one no reader took.
        PyCapsule::new_with_value(py, stream, STREAM)
    }

    /// Rows.
    #[getter]
    fn num_rows(&self) -> usize {
        self.batches.iter().map(RecordBatch::num_rows).sum()
    }

    /// Column names, in order.
    #[getter]
    fn column_names(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| f.name().clone())
            .collect()
    }

    /// Each column's name and Arrow type (`name: type`, `?` when nullable).
    #[getter]
    fn schema_text(&self) -> Vec<String> {
        self.schema
            .fields()
            .iter()
            .map(|f| {
                let nullable = if f.is_nullable() { "?" } else { "" };
                format!("{}: {}{nullable}", f.name(), f.data_type())
            })
            .collect()
    }
}

/// The batches of an object with `__arrow_c_stream__` (read with the GIL held: a producer's
/// callbacks may need it).
pub(crate) fn from_stream(source: &Bound<'_, PyAny>) -> PyResult<(SchemaRef, Vec<RecordBatch>)> {
    let py = source.py();
    let capsule = source.call_method0("__arrow_c_stream__")?;
    let capsule = capsule.cast::<PyCapsule>().map_err(|_| {
        Failure::new(Kind::Input, "__arrow_c_stream__ did not return a PyCapsule").into_py(py)
    })?;
    let pointer = capsule.pointer_checked(Some(STREAM))?;
    // SAFETY: the capsule is named `arrow_array_stream`, so (by the interface) it holds a valid
    // `ArrowArrayStream`; `from_raw` moves it out and leaves a released one in its place, which
    // the capsule's destructor then leaves alone.
    let reader = unsafe { RecordBatchStreamReader::from_raw(pointer.as_ptr().cast()) };
    let bad = |e: arrow_schema::ArrowError| {
        Failure::new(Kind::Input, format!("reading the Arrow stream: {e}")).into_py(py)
    };
    let reader = reader.map_err(bad)?;
    let schema = reader.schema();
    let batches = reader.collect::<Result<Vec<_>, _>>().map_err(bad)?;
    Ok((schema, batches))
}

/// A Parquet file's bytes as a [`PyTable`].
pub(crate) fn from_parquet(file: &str, data: bytes::Bytes) -> Result<PyTable, Failure> {
    let bad = |e: parquet::errors::ParquetError| {
        Failure::new(
            Kind::Input,
            format!("{file}: not a readable Parquet file: {e}"),
        )
    };
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(data)
        .map_err(bad)?
        .build()
        .map_err(bad)?;
    let schema = reader.schema();
    let batches = reader
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| Failure::new(Kind::Input, format!("{file}: {e}")))?;
    Ok(PyTable { schema, batches })
}
