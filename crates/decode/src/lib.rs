//! Decodes Firebird rows into Arrow record batches: the one place where
//! Firebird's wire layout meets a columnar format, shared by every output
//! format.
//!
//! [`types`] is the mapping table from Firebird SQL types to Arrow types
//! (one place to read it, as in ConnectorX). [`RowDecoder`] appends fetched
//! rows to per-column Arrow builders and hands out a [`RecordBatch`] when a
//! row or byte budget is reached, so memory stays bounded however large the
//! table is.
//!
//! [`RecordBatch`]: arrow_array::RecordBatch

mod decoder;
pub mod text;
pub mod types;

pub use decoder::{BatchLimits, DecodeError, RowDecoder, Segments, FIRST_BATCH_ROWS};
pub use text::{TextDecoder, TextStream};
pub use types::{ColumnKind, OutputColumn, TypeOptions, TYPE_METADATA_KEY};
