//! Output formats behind one small API.
//!
//! A table's file is the format's `header` followed by the bytes of every
//! unit's encoder, concatenated in unit order. Units are encoded in
//! parallel, on the worker threads that read them, so an encoder depends on
//! nothing but its own batches — that is what lets CSV formatting (the most
//! expensive part of an unload after fetching) scale with `--parallel`
//! while the file stays byte-identical. The API is shaped after arrow-rs's
//! writers: make one from options, feed it `RecordBatch`es.

pub mod csv;
pub mod text;

use arrow_array::RecordBatch;
use arrow_schema::{DataType, Schema, SchemaRef};

/// A byte-stream output format (CSV, TSV; later JSON Lines).
pub trait StreamFormat: Send + Sync {
    /// The file name extension, without the dot.
    fn extension(&self) -> &'static str;
    /// Bytes that open a table's file (may be empty).
    fn header(&self, schema: &Schema) -> Vec<u8>;
    /// A fresh encoder for one unit of a table.
    fn encoder(&self, schema: SchemaRef) -> Box<dyn BatchEncoder>;
}

/// Encodes the batches of one unit.
pub trait BatchEncoder: Send {
    /// Appends the encoding of `batch` to `out`.
    fn encode(&mut self, batch: &RecordBatch, out: &mut Vec<u8>) -> Result<(), SinkError>;
}

#[derive(Debug, thiserror::Error)]
pub enum SinkError {
    #[error("column {column}: type {data_type} cannot be written in this format")]
    UnsupportedType { column: String, data_type: DataType },
}
