//! Row-by-row appending into Arrow builders.
//!
//! Blobs go straight into their column's builder, segment by segment as
//! the client reads them (text decoded on the way): a blob of hundreds of
//! MB is never held whole anywhere else, and nothing keeps its size after
//! the batch is taken.

use std::fmt::Write as _;
use std::io::Write as _;
use std::ops::ControlFlow;
use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Date32Builder, Decimal128Builder, Decimal256Builder,
    Float32Builder, Float64Builder, Int16Builder, Int32Builder, Int64Builder, StringBuilder,
    Time64MicrosecondBuilder, TimestampMicrosecondBuilder,
};
use arrow_array::{Array, ArrayRef, ListArray, RecordBatch};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer};
use arrow_schema::{ArrowError, DataType, Schema, SchemaRef};
use fbunload_client::{element, ArrayShape, BlobId, ClientError, Row};

use crate::text::TextDecoder;
use crate::types::{ArrayColumn, ColumnKind, OutputColumn, DECIMAL128_DIGITS, INT128_DIGITS};

/// Days from Firebird's day zero (1858-11-17, the Modified Julian Date
/// epoch) to 1970-01-01.
const MJD_UNIX_EPOCH: i32 = 40_587;
const MICROS_PER_DAY: i64 = 86_400_000_000;
/// Firebird times count 1/10 000 s.
const MICROS_PER_FB_TICK: i64 = 100;

#[derive(Debug, thiserror::Error)]
pub enum DecodeError {
    #[error("column {column}: {message}")]
    Value { column: String, message: String },
    #[error("column {column}: reading a blob failed: {source}")]
    Blob {
        column: String,
        #[source]
        source: ClientError,
    },
    #[error("column {column}: reading an array failed: {source}")]
    Array {
        column: String,
        #[source]
        source: ClientError,
    },
    #[error("building an Arrow batch failed: {0}")]
    Arrow(#[from] ArrowError),
}

/// When a batch is full: whichever limit is reached first.
#[derive(Debug, Clone, Copy)]
pub struct BatchLimits {
    pub rows: usize,
    /// Bytes of variable-length data (text, binary, blobs).
    pub bytes: usize,
}

impl BatchLimits {
    /// Bytes the batches being filled may hold in all, whatever the
    /// number of workers: each worker's batch cap is its share of this
    /// (within [`Self::SMALLEST_SHARE`] and the cap it had), so 64 workers
    /// hold no more than 4 do.
    pub const ALL_WORKERS_BYTES: usize = 64 << 20;
    /// The least a worker's batch may hold before it is cut: below this,
    /// per-batch costs show.
    pub const SMALLEST_SHARE: usize = 256 << 10;

    /// These limits for one of `workers` workers filling batches at once.
    pub fn shared_by(self, workers: usize) -> BatchLimits {
        let share = (Self::ALL_WORKERS_BYTES / workers.max(1)).max(Self::SMALLEST_SHARE);
        BatchLimits {
            bytes: self.bytes.min(share),
            ..self
        }
    }
}

impl Default for BatchLimits {
    fn default() -> Self {
        // 8k rows amortise per-batch costs in every sink; the byte cap keeps
        // a table of large blobs from holding hundreds of MB per worker.
        BatchLimits {
            rows: 8192,
            bytes: 16 << 20,
        }
    }
}

/// Rows the first batch's fixed-width builders are made for; they grow
/// by doubling from there, as every later batch's do from nothing. Not
/// the batch's 8,192 rows: most tables of a database of thousands are
/// of a few rows, and 8,192 rows of a column are 32-128 KiB, which the
/// binary's malloc maps, faults in and unmaps again for each table
/// (crates/cli/src/main.rs). 1,024 rows keep a column under 32 KiB, as
/// Arrow's own `StringBuilder::new` starts.
pub const FIRST_BATCH_ROWS: usize = 1024;

/// Appends fetched rows to Arrow builders and cuts them into batches.
pub struct RowDecoder {
    schema: SchemaRef,
    columns: Vec<OutputColumn>,
    builders: Vec<Builder>,
    limits: BatchLimits,
    rows: usize,
    var_bytes: usize,
    /// Bytes each row takes in the fixed-width buffers (values, offsets).
    fixed_row_bytes: usize,
    scratch: String,
}

enum Builder {
    Int16(Int16Builder),
    Int32(Int32Builder),
    Int64(Int64Builder),
    Decimal(Decimal128Builder),
    Decimal256(Decimal256Builder),
    Float32(Float32Builder),
    Float64(Float64Builder),
    Date(Date32Builder),
    Time(Time64MicrosecondBuilder),
    Timestamp(TimestampMicrosecondBuilder),
    Boolean(BooleanBuilder),
    Text(StringBuilder),
    Binary(BinaryBuilder),
    List(Box<ArrayValues>),
}

/// An ARRAY column's values: every element of every array in one flat
/// builder of the element's kind, cut into nested lists (one level per
/// dimension) when the batch is taken. Each dimension has fixed bounds,
/// so only the outermost lists vary in length: a NULL array has none.
struct ArrayValues {
    array: Arc<ArrayColumn>,
    values: Builder,
    /// The slice an array is read into, reused.
    slice: Vec<u8>,
    /// Elements along each dimension, outermost first.
    lengths: Vec<usize>,
    /// Outer list lengths of the rows so far (0 for NULL).
    row_lengths: Vec<usize>,
    validity: NullBufferBuilder,
}

impl ArrayValues {
    fn new(array: Arc<ArrayColumn>, rows: usize) -> Self {
        ArrayValues {
            values: new_builder(&array.element, rows),
            slice: Vec::new(),
            lengths: array.shape.dimension_lengths().collect(),
            row_lengths: Vec::with_capacity(rows),
            validity: NullBufferBuilder::new(rows),
            array,
        }
    }

    fn append(
        &mut self,
        id: &BlobId,
        scratch: &mut String,
        var_bytes: &mut usize,
        read_slice: &mut impl FnMut(&BlobId, &ArrayShape, &mut [u8]) -> Result<(), ClientError>,
    ) -> Result<(), DecodeError> {
        let shape = &self.array.shape;
        let element = &self.array.element;
        self.slice.resize(shape.slice_size(), 0);
        read_slice(id, shape, &mut self.slice).map_err(|source| DecodeError::Array {
            column: element.name.clone(),
            source,
        })?;
        let size = shape.element.size().max(1);
        for bytes in self.slice.chunks_exact(size) {
            let bytes = match shape.element.code {
                // A NUL ends each VARCHAR element (module docs of the
                // client's `array`).
                element::VARYING => bytes.split(|&b| b == 0).next().unwrap_or_default(),
                _ => bytes,
            };
            append_scalar(
                &mut self.values,
                element,
                bytes,
                scratch,
                var_bytes,
                &mut |_, _| unreachable!("arrays hold no blobs"),
            )?;
        }
        self.row_lengths
            .push(self.lengths.first().copied().unwrap_or(0));
        self.validity.append_non_null();
        Ok(())
    }

    fn append_null(&mut self) {
        self.row_lengths.push(0);
        self.validity.append_null();
    }

    fn finish(&mut self) -> ArrayRef {
        let mut data_type = self.array.data_type.clone();
        // The field of each level's items, outermost first.
        let mut item_fields = Vec::with_capacity(self.lengths.len());
        while let DataType::List(item) = data_type {
            data_type = item.data_type().clone();
            item_fields.push(item);
        }
        let mut array = finish(&mut self.values);
        for level in (1..self.lengths.len()).rev() {
            let length = self.lengths[level];
            let lists = array.len() / length.max(1);
            let offsets = OffsetBuffer::from_lengths(std::iter::repeat_n(length, lists));
            array = Arc::new(ListArray::new(
                item_fields[level].clone(),
                offsets,
                array,
                None,
            ));
        }
        let offsets = OffsetBuffer::from_lengths(self.row_lengths.drain(..));
        Arc::new(ListArray::new(
            item_fields[0].clone(),
            offsets,
            array,
            self.validity.finish(),
        ))
    }
}

impl RowDecoder {
    pub fn new(columns: Vec<OutputColumn>, limits: BatchLimits) -> Self {
        let schema = Arc::new(Schema::new(
            columns
                .iter()
                .map(OutputColumn::arrow_field)
                .collect::<Vec<_>>(),
        ));
        let builders = columns
            .iter()
            .map(|c| new_builder(c, limits.rows.min(FIRST_BATCH_ROWS)))
            .collect();
        RowDecoder {
            fixed_row_bytes: columns.iter().map(fixed_bytes).sum(),
            schema,
            columns,
            builders,
            limits,
            rows: 0,
            var_bytes: 0,
            scratch: String::new(),
        }
    }

    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Makes the batches carry `schema` instead of this decoder's own copy
    /// of it, when the two are equal: a run keeps some units' batches
    /// until it ends, and each copy holds every field's name and metadata
    /// (a count unit's 64 fields: about 13 KB). Returns whether it did.
    pub fn share_schema(&mut self, schema: &SchemaRef) -> bool {
        let same = *self.schema == **schema;
        if same {
            self.schema = schema.clone();
        }
        same
    }

    /// Rows appended since the last batch.
    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    pub fn is_full(&self) -> bool {
        self.rows >= self.limits.rows
            || self.var_bytes + self.rows * self.fixed_row_bytes >= self.limits.bytes
    }

    /// Appends the row fetched last; blobs are read through its transaction.
    pub fn append_row(&mut self, row: &Row<'_>) -> Result<(), DecodeError> {
        let tr = row.transaction();
        self.append_with_arrays(
            |i| row.value(i),
            |id, segment| tr.read_blob_segments(id, segment),
            |id, shape, out| tr.read_array(id, shape, out),
        )
    }

    /// Appends one row given as raw column values (`None` is NULL) in
    /// Firebird's in-memory layout, blobs read through `read_blob` (as
    /// `Transaction::read_blob_segments` does). Split from
    /// [`Self::append_row`] so the decoding can be tested without a
    /// database.
    pub fn append_with<'v>(
        &mut self,
        value: impl Fn(usize) -> Option<&'v [u8]>,
        read_blob: impl FnMut(&BlobId, &mut Segments<'_>) -> Result<(), ClientError>,
    ) -> Result<(), DecodeError> {
        self.append_with_arrays(value, read_blob, |_, _, _| {
            unreachable!("no ARRAY columns here")
        })
    }

    /// [`Self::append_with`], arrays read through `read_slice` (as
    /// `Transaction::read_array` does).
    pub fn append_with_arrays<'v>(
        &mut self,
        value: impl Fn(usize) -> Option<&'v [u8]>,
        mut read_blob: impl FnMut(&BlobId, &mut Segments<'_>) -> Result<(), ClientError>,
        mut read_slice: impl FnMut(&BlobId, &ArrayShape, &mut [u8]) -> Result<(), ClientError>,
    ) -> Result<(), DecodeError> {
        for i in 0..self.columns.len() {
            let raw = value(i);
            let result = match raw {
                None => {
                    append_null(&mut self.builders[i]);
                    Ok(())
                }
                Some(bytes) => self.append_value(i, bytes, &mut read_blob, &mut read_slice),
            };
            result?;
        }
        self.rows += 1;
        Ok(())
    }

    fn append_value(
        &mut self,
        i: usize,
        bytes: &[u8],
        read_blob: &mut impl FnMut(&BlobId, &mut Segments<'_>) -> Result<(), ClientError>,
        read_slice: &mut impl FnMut(&BlobId, &ArrayShape, &mut [u8]) -> Result<(), ClientError>,
    ) -> Result<(), DecodeError> {
        let column = &self.columns[i];
        match &mut self.builders[i] {
            Builder::List(list) => {
                let id: &BlobId =
                    bytes
                        .get(..8)
                        .and_then(|b| b.try_into().ok())
                        .ok_or_else(|| DecodeError::Value {
                            column: column.name.clone(),
                            message: format!("value of {} bytes is too short", bytes.len()),
                        })?;
                list.append(id, &mut self.scratch, &mut self.var_bytes, read_slice)
            }
            builder => append_scalar(
                builder,
                column,
                bytes,
                &mut self.scratch,
                &mut self.var_bytes,
                read_blob,
            ),
        }
    }

    /// Finishes the rows appended so far into a batch (possibly empty).
    ///
    /// Each column's buffers are cut to what the batch holds. A builder
    /// grows by doubling, and the first batch's are made for the row limit
    /// (8,192 rows) though the byte cap may end it far sooner, so a batch
    /// held up to twice its bytes, counted nowhere, in the writer queue, in
    /// units held for their turn and in groups being encoded: 500-column
    /// Parquet peaked over what docs/PERFORMANCE.md promises. The cut is
    /// a `realloc` to a smaller size, which glibc does in place.
    pub fn take_batch(&mut self) -> Result<RecordBatch, DecodeError> {
        let arrays: Vec<ArrayRef> = self
            .builders
            .iter_mut()
            .map(|builder| {
                let mut array = finish(builder);
                if let Some(own) = Arc::get_mut(&mut array) {
                    own.shrink_to_fit();
                }
                array
            })
            .collect();
        let options = arrow_array::RecordBatchOptions::new().with_row_count(Some(self.rows));
        let batch = RecordBatch::try_new_with_options(self.schema.clone(), arrays, &options)?;
        self.rows = 0;
        self.var_bytes = 0;
        Ok(batch)
    }
}

/// Appends one value (not NULL) of a column of any kind but ARRAY.
fn append_scalar(
    builder: &mut Builder,
    column: &OutputColumn,
    bytes: &[u8],
    scratch: &mut String,
    var_bytes: &mut usize,
    read_blob: &mut impl FnMut(&BlobId, &mut Segments<'_>) -> Result<(), ClientError>,
) -> Result<(), DecodeError> {
    let kind = column.kind;
    let bad = |message: String| DecodeError::Value {
        column: column.name.clone(),
        message,
    };
    let short = || bad(format!("value of {} bytes is too short", bytes.len()));
    macro_rules! ne {
        ($t:ty) => {
            <$t>::from_ne_bytes(
                bytes
                    .get(..std::mem::size_of::<$t>())
                    .ok_or_else(short)?
                    .try_into()
                    .unwrap(),
            )
        };
    }
    match (builder, kind) {
        (Builder::Int16(b), _) => b.append_value(ne!(i16)),
        (Builder::Int32(b), _) => b.append_value(ne!(i32)),
        (Builder::Int64(b), _) => b.append_value(ne!(i64)),
        (Builder::Decimal(b), ColumnKind::Decimal { width, scale, .. }) => {
            b.append_value(match width {
                2 => ne!(i16) as i128,
                4 => ne!(i32) as i128,
                8 => ne!(i64) as i128,
                _ => {
                    let value = ne!(i128);
                    if value.unsigned_abs() > DECIMAL128_MAX {
                        return Err(bad(beyond_decimal128(value, scale, &column.type_name)));
                    }
                    value
                }
            })
        }
        // INT128, or a narrower integer with more decimals than Decimal128
        // holds.
        (Builder::Decimal256(b), ColumnKind::Decimal { width, .. }) => {
            b.append_value(arrow_buffer::i256::from_i128(match width {
                2 => ne!(i16) as i128,
                4 => ne!(i32) as i128,
                8 => ne!(i64) as i128,
                _ => ne!(i128),
            }))
        }
        (Builder::Float32(b), _) => b.append_value(ne!(f32)),
        (Builder::Float64(b), _) => b.append_value(ne!(f64)),
        (Builder::Date(b), _) => b.append_value(ne!(i32) - MJD_UNIX_EPOCH),
        (Builder::Time(b), _) => b.append_value(ne!(u32) as i64 * MICROS_PER_FB_TICK),
        (Builder::Timestamp(b), _) => {
            let date = ne!(i32);
            let time = u32::from_ne_bytes(bytes.get(4..8).ok_or_else(short)?.try_into().unwrap());
            b.append_value(
                (date - MJD_UNIX_EPOCH) as i64 * MICROS_PER_DAY + time as i64 * MICROS_PER_FB_TICK,
            )
        }
        (Builder::Boolean(b), _) => b.append_value(*bytes.first().ok_or_else(short)? != 0),
        (Builder::Binary(b), ColumnKind::Octets) => {
            *var_bytes += bytes.len();
            b.append_value(bytes)
        }
        (Builder::Text(b), ColumnKind::Text { padded }) => {
            let bytes = if padded { trim_padding(bytes) } else { bytes };
            *var_bytes += bytes.len();
            append_text(b, &column.text, bytes, scratch).map_err(|at| bad(not_text(at)))?
        }
        (builder, ColumnKind::TextBlob | ColumnKind::BinaryBlob) => {
            let id: &BlobId = bytes.get(..8).ok_or_else(short)?.try_into().unwrap();
            let failed = |source| DecodeError::Blob {
                column: column.name.clone(),
                source,
            };
            let mut size = 0;
            match builder {
                Builder::Binary(b) => {
                    read_blob(id, &mut |segment| {
                        size += segment.len();
                        b.write_all(segment).expect("a builder takes every byte");
                        ControlFlow::Continue(())
                    })
                    .map_err(failed)?;
                    // Ends the value written above.
                    b.append_value(b"");
                }
                Builder::Text(b) => {
                    let mut text = column.text.stream();
                    let mut write = |s: &str| b.write_str(s).expect("a builder takes every string");
                    let mut invalid = None;
                    read_blob(id, &mut |segment| {
                        size += segment.len();
                        match text.push(segment, &mut write) {
                            Ok(()) => ControlFlow::Continue(()),
                            Err(at) => {
                                invalid = Some(at);
                                ControlFlow::Break(())
                            }
                        }
                    })
                    .map_err(failed)?;
                    if let Some(at) = invalid {
                        return Err(bad(not_text(at)));
                    }
                    text.finish(&mut write).map_err(|at| bad(not_text(at)))?;
                    b.append_value("");
                }
                _ => unreachable!("blob columns get text or binary builders"),
            }
            *var_bytes += size;
        }
        _ => unreachable!("builders are created from the column kind"),
    }
    Ok(())
}

/// Bytes a value of `column` takes in its builder's fixed-width buffers:
/// the value itself, or the offset of a variable-length one (whose data
/// `var_bytes` counts).
fn fixed_bytes(column: &OutputColumn) -> usize {
    match column.kind {
        ColumnKind::Boolean => 1,
        ColumnKind::Int16 => 2,
        ColumnKind::Int32 | ColumnKind::Float32 | ColumnKind::Date => 4,
        ColumnKind::Int64
        | ColumnKind::Float64
        | ColumnKind::Time
        | ColumnKind::TimeTz
        | ColumnKind::Timestamp
        | ColumnKind::TimestampTz => 8,
        ColumnKind::Decimal { precision, .. } if precision > DECIMAL128_DIGITS => 32,
        ColumnKind::Decimal { .. } => 16,
        ColumnKind::Text { .. }
        | ColumnKind::Octets
        | ColumnKind::TextBlob
        | ColumnKind::BinaryBlob => 4,
        ColumnKind::Array => column
            .array
            .as_ref()
            .map_or(0, |a| 4 + a.shape.len() * fixed_bytes(&a.element)),
    }
}

/// How a blob reaches the decoder: each segment in turn, until `Break`.
pub type Segments<'a> = dyn FnMut(&[u8]) -> ControlFlow<()> + 'a;

/// The largest magnitude of Arrow's Decimal128: 38 nines.
const DECIMAL128_MAX: u128 = 10u128.pow(DECIMAL128_DIGITS as u32) - 1;

/// An INT128 value of 39 digits: Decimal128, INT128's Arrow type unless
/// `--decimal256`, cannot hold it, and a file holding it anyway would be
/// refused or misread by its readers. A NUMERIC/DECIMAL holding one has
/// more digits than it can be declared with; a bare INT128 may.
fn beyond_decimal128(value: i128, scale: i8, type_name: &str) -> String {
    let digits = value.unsigned_abs().to_string();
    let point = digits.len().saturating_sub(scale.max(0) as usize);
    let sign = if value < 0 { "-" } else { "" };
    let text = match scale {
        1.. => format!("{sign}{}.{}", &digits[..point], &digits[point..]),
        _ => format!("{sign}{digits}"),
    };
    let beyond = if type_name.starts_with("NUMERIC") || type_name.starts_with("DECIMAL") {
        format!("has more digits than {type_name} declares and")
    } else {
        format!("is an {type_name} of {} digits, more than", digits.len())
    };
    format!(
        "value {text} {beyond} Arrow's decimal128({DECIMAL128_DIGITS}, {scale}) holds, the \
         type every reader takes; rerun with --decimal256 for decimal256({INT128_DIGITS}, \
         {scale}) (pyarrow reads it, DuckDB as a DOUBLE, polars and Spark not at all), or \
         write csv or jsonl, which are exact"
    )
}

/// Only UTF-8 can be invalid: the other decoders map every byte.
fn not_text(offset: usize) -> String {
    format!(
        "bytes at offset {offset} are not valid UTF-8 (a CHARACTER SET NONE column holding \
         another encoding, or a UTF8 column holding bytes that are not UTF-8?); rerun with \
         --charset naming the encoding CHARACTER SET NONE text is in, e.g. WIN1252"
    )
}

/// CHAR values are blank-padded to their width; the blanks are not data.
/// A UTF8 CHAR(n) is padded to 4n bytes, so most of a short value is
/// padding: skip it eight bytes at a time.
fn trim_padding(bytes: &[u8]) -> &[u8] {
    const BLANKS: u64 = u64::from_ne_bytes([b' '; 8]);
    let mut end = bytes.len();
    while end >= 8 && u64::from_ne_bytes(bytes[end - 8..end].try_into().unwrap()) == BLANKS {
        end -= 8;
    }
    while end > 0 && bytes[end - 1] == b' ' {
        end -= 1;
    }
    &bytes[..end]
}

fn append_text(
    builder: &mut StringBuilder,
    text: &TextDecoder,
    bytes: &[u8],
    scratch: &mut String,
) -> Result<(), usize> {
    if text.is_utf8() {
        // The common case: validate in place, no copy.
        let s = std::str::from_utf8(bytes).map_err(|e| e.valid_up_to())?;
        builder.append_value(s);
    } else {
        scratch.clear();
        text.decode_into(bytes, scratch)?;
        builder.append_value(scratch.as_str());
    }
    Ok(())
}

fn new_builder(column: &OutputColumn, rows: usize) -> Builder {
    match column.kind {
        ColumnKind::Array => Builder::List(Box::new(ArrayValues::new(
            column
                .array
                .clone()
                .expect("ARRAY columns are made with their shape"),
            rows,
        ))),
        ColumnKind::Int16 => Builder::Int16(Int16Builder::with_capacity(rows)),
        ColumnKind::Int32 => Builder::Int32(Int32Builder::with_capacity(rows)),
        ColumnKind::Int64 => Builder::Int64(Int64Builder::with_capacity(rows)),
        ColumnKind::Decimal {
            precision, scale, ..
        } if precision > crate::types::DECIMAL128_DIGITS => Builder::Decimal256(
            Decimal256Builder::with_capacity(rows)
                .with_precision_and_scale(precision, scale)
                .expect("types.rs makes precision and scale that Arrow takes"),
        ),
        ColumnKind::Decimal {
            precision, scale, ..
        } => Builder::Decimal(
            Decimal128Builder::with_capacity(rows)
                .with_precision_and_scale(precision, scale)
                .expect("types.rs makes precision and scale that Arrow takes"),
        ),
        ColumnKind::Float32 => Builder::Float32(Float32Builder::with_capacity(rows)),
        ColumnKind::Float64 => Builder::Float64(Float64Builder::with_capacity(rows)),
        ColumnKind::Date => Builder::Date(Date32Builder::with_capacity(rows)),
        ColumnKind::Time | ColumnKind::TimeTz => {
            Builder::Time(Time64MicrosecondBuilder::with_capacity(rows))
        }
        ColumnKind::Timestamp => {
            Builder::Timestamp(TimestampMicrosecondBuilder::with_capacity(rows))
        }
        ColumnKind::TimestampTz => Builder::Timestamp(
            TimestampMicrosecondBuilder::with_capacity(rows).with_timezone("UTC"),
        ),
        ColumnKind::Boolean => Builder::Boolean(BooleanBuilder::with_capacity(rows)),
        ColumnKind::Text { .. } | ColumnKind::TextBlob => Builder::Text(StringBuilder::new()),
        ColumnKind::Octets | ColumnKind::BinaryBlob => Builder::Binary(BinaryBuilder::new()),
    }
}

/// Runs the same expression on whichever builder a column has.
macro_rules! each_builder {
    ($builder:expr, $b:ident => $body:expr) => {
        match $builder {
            Builder::Int16($b) => $body,
            Builder::Int32($b) => $body,
            Builder::Int64($b) => $body,
            Builder::Decimal($b) => $body,
            Builder::Decimal256($b) => $body,
            Builder::Float32($b) => $body,
            Builder::Float64($b) => $body,
            Builder::Date($b) => $body,
            Builder::Time($b) => $body,
            Builder::Timestamp($b) => $body,
            Builder::Boolean($b) => $body,
            Builder::Text($b) => $body,
            Builder::Binary($b) => $body,
            Builder::List(_) => unreachable!("lists are matched first"),
        }
    };
}

fn append_null(builder: &mut Builder) {
    match builder {
        Builder::List(list) => list.append_null(),
        builder => each_builder!(builder, b => b.append_null()),
    }
}

/// `finish` resets a builder but keeps its data type (precision, time
/// zone), so the same builders serve every batch.
fn finish(builder: &mut Builder) -> ArrayRef {
    use arrow_array::builder::ArrayBuilder;
    match builder {
        Builder::List(list) => list.finish(),
        builder => each_builder!(builder, b => ArrayBuilder::finish(b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Date32Type, Decimal128Type, Int32Type, TimestampMicrosecondType};

    fn column(name: &str, kind: ColumnKind) -> OutputColumn {
        OutputColumn {
            name: name.into(),
            kind,
            nullable: true,
            type_name: String::new(),
            text: TextDecoder::UTF8,
            array: None,
        }
    }

    fn decoder(columns: Vec<OutputColumn>) -> RowDecoder {
        RowDecoder::new(columns, BatchLimits::default())
    }

    fn no_blobs(_: &BlobId, _: &mut Segments<'_>) -> Result<(), ClientError> {
        panic!("no blob expected")
    }

    #[test]
    fn fixed_width_values_decode_from_native_bytes() {
        let mut dec = decoder(vec![
            column("I", ColumnKind::Int32),
            column(
                "N",
                ColumnKind::Decimal {
                    width: 8,
                    precision: 19,
                    scale: 2,
                },
            ),
            column("D", ColumnKind::Date),
            column("TS", ColumnKind::Timestamp),
        ]);
        let int = 42i32.to_ne_bytes();
        let num = (-12345i64).to_ne_bytes();
        let date = 40_587i32.to_ne_bytes(); // 1970-01-01
        let mut ts = 40_588i32.to_ne_bytes().to_vec(); // 1970-01-02 ...
        ts.extend_from_slice(&36_000_001u32.to_ne_bytes()); // ... 01:00:00.0001
        let values: [&[u8]; 4] = [&int, &num, &date, &ts];
        dec.append_with(|i| Some(values[i]), no_blobs).unwrap();
        dec.append_with(|_| None, no_blobs).unwrap();
        let batch = dec.take_batch().unwrap();
        assert_eq!(batch.num_rows(), 2);
        assert_eq!(batch.column(0).as_primitive::<Int32Type>().value(0), 42);
        assert_eq!(
            batch.column(1).as_primitive::<Decimal128Type>().value(0),
            -12345
        );
        assert_eq!(batch.column(2).as_primitive::<Date32Type>().value(0), 0);
        assert_eq!(
            batch
                .column(3)
                .as_primitive::<TimestampMicrosecondType>()
                .value(0),
            MICROS_PER_DAY + 3_600_000_100
        );
        assert!(batch.column(0).is_null(1));
    }

    #[test]
    fn a_numeric_of_39_digits_is_refused_at_once_naming_column_and_value() {
        let numeric = ColumnKind::Decimal {
            width: 16,
            precision: DECIMAL128_DIGITS,
            scale: 6,
        };
        let mut dec = decoder(vec![OutputColumn {
            type_name: "NUMERIC(38,6)".into(),
            ..column("N", numeric)
        }]);
        let largest = (10i128.pow(38) - 1).to_ne_bytes();
        dec.append_with(|_| Some(&largest[..]), no_blobs).unwrap();
        let beyond = i128::MAX.to_ne_bytes();
        let err = dec
            .append_with(|_| Some(&beyond[..]), no_blobs)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "column N: value 170141183460469231731687303715884.105727 has more digits than \
                 NUMERIC(38,6) declares"
            ) && err.contains("--decimal256")
                && !err.contains('\n'),
            "{err}"
        );
        let smallest = i128::MIN.to_ne_bytes();
        let err = dec
            .append_with(|_| Some(&smallest[..]), no_blobs)
            .unwrap_err();
        assert!(err
            .to_string()
            .contains("value -170141183460469231731687303715884.105728 "));
    }

    #[test]
    fn a_bare_int128_of_39_digits_is_refused_naming_the_option() {
        let int128 = ColumnKind::Decimal {
            width: 16,
            precision: DECIMAL128_DIGITS,
            scale: 0,
        };
        let mut dec = decoder(vec![OutputColumn {
            type_name: "INT128".into(),
            ..column("I", int128)
        }]);
        let largest = (10i128.pow(38) - 1).to_ne_bytes();
        dec.append_with(|_| Some(&largest[..]), no_blobs).unwrap();
        let beyond = i128::MIN.to_ne_bytes();
        let err = dec
            .append_with(|_| Some(&beyond[..]), no_blobs)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with(
                "column I: value -170141183460469231731687303715884105728 is an INT128 of 39 \
                 digits, more than Arrow's decimal128(38, 0) holds"
            ) && err.contains("rerun with --decimal256")
                && !err.contains('\n'),
            "{err}"
        );
    }

    /// Whatever scale the server describes an integer with (Firebird
    /// allows more decimals than digits: `0.00000000000000000001` is a
    /// BIGINT of scale -20), the column maps exactly or is refused with
    /// a message: never a panic, and every storage value decodes.
    #[test]
    fn every_scale_the_server_gives_maps_exactly_or_is_refused() {
        use crate::types::{TypeOptions, DECIMAL256_MAX_SCALE};
        use arrow_array::types::Decimal256Type;
        use fbunload_client::{sql_type, ColumnDesc};
        for (sql, width) in [
            (sql_type::SHORT, 2usize),
            (sql_type::LONG, 4),
            (sql_type::INT64, 8),
            (sql_type::INT128, 16),
        ] {
            for decimal256 in [false, true] {
                for scale in -200i16..=200 {
                    let desc = ColumnDesc {
                        name: "C".into(),
                        sql_type: sql,
                        scale,
                        subtype: 1,
                        length: width as u16,
                        nullable: true,
                    };
                    let options = TypeOptions {
                        none_text: TextDecoder::UTF8,
                        decimal256,
                    };
                    let column = match OutputColumn::new("C", &desc, None, &options) {
                        Ok(column) => column,
                        Err(e) => {
                            assert!(
                                scale > 0 || -scale > DECIMAL256_MAX_SCALE as i16,
                                "{sql} scale {scale}: {e}"
                            );
                            assert!(!e.contains('\n'), "{e}");
                            continue;
                        }
                    };
                    let mut dec = decoder(vec![column]);
                    // The largest magnitude the storage holds (Decimal128
                    // refuses a 39-digit INT128 with a message instead).
                    let mut value = vec![0x7fu8; width];
                    value[..width - 1].fill(0xff);
                    if cfg!(target_endian = "big") {
                        value.reverse();
                    }
                    let appended = dec.append_with(|_| Some(&value[..]), no_blobs);
                    let batch = dec.take_batch().unwrap();
                    let expected = match width {
                        2 => i16::MAX as i128,
                        4 => i32::MAX as i128,
                        8 => i64::MAX as i128,
                        _ => i128::MAX,
                    };
                    match batch.schema().field(0).data_type() {
                        DataType::Int16 | DataType::Int32 | DataType::Int64 => assert_eq!(scale, 0),
                        DataType::Decimal128(_, s) => {
                            assert_eq!(*s as i16, -scale);
                            if appended.is_ok() {
                                let got = batch.column(0).as_primitive::<Decimal128Type>();
                                assert_eq!(got.value(0), expected, "{sql} scale {scale}");
                            } else {
                                assert_eq!(width, 16);
                            }
                        }
                        DataType::Decimal256(_, s) => {
                            assert_eq!(*s as i16, -scale);
                            appended.unwrap();
                            let got = batch.column(0).as_primitive::<Decimal256Type>();
                            assert_eq!(got.value(0).as_i128(), expected, "{sql} scale {scale}");
                        }
                        other => panic!("{sql} scale {scale}: {other}"),
                    }
                }
            }
        }
    }

    #[test]
    fn padding_is_trimmed_at_every_length() {
        for value in ["", "a", " a", "abcdefgh", "abcdefghi"] {
            for pad in 0..20 {
                let padded = format!("{value}{}", " ".repeat(pad));
                assert_eq!(trim_padding(padded.as_bytes()), value.trim_end().as_bytes());
            }
        }
        assert_eq!(trim_padding(b"        "), b"");
    }

    #[test]
    fn char_padding_is_trimmed_but_varchar_blanks_are_kept() {
        let mut dec = decoder(vec![
            column("C", ColumnKind::Text { padded: true }),
            column("V", ColumnKind::Text { padded: false }),
        ]);
        let values: [&[u8]; 2] = [b" ab  ", b" ab  "];
        dec.append_with(|i| Some(values[i]), no_blobs).unwrap();
        let batch = dec.take_batch().unwrap();
        assert_eq!(batch.column(0).as_string::<i32>().value(0), " ab");
        assert_eq!(batch.column(1).as_string::<i32>().value(0), " ab  ");
    }

    #[test]
    fn blobs_are_read_through_the_callback() {
        let mut dec = decoder(vec![column("B", ColumnKind::TextBlob)]);
        let id = [7u8; 8];
        dec.append_with(
            |_| Some(&id[..]),
            |got, segment| {
                assert_eq!(got, &[7u8; 8]);
                let _ = segment("blob é".as_bytes());
                Ok(())
            },
        )
        .unwrap();
        let batch = dec.take_batch().unwrap();
        assert_eq!(batch.column(0).as_string::<i32>().value(0), "blob é");
    }

    /// Hands `blob` over in segments of `segment` bytes, as the client
    /// does, and counts the segments taken.
    fn segments<'b>(
        blob: &'b [u8],
        segment: usize,
        taken: &'b std::cell::Cell<usize>,
    ) -> impl FnMut(&BlobId, &mut Segments<'_>) -> Result<(), ClientError> + 'b {
        move |_, out| {
            for piece in blob.chunks(segment) {
                taken.set(taken.get() + 1);
                if out(piece).is_break() {
                    break;
                }
            }
            Ok(())
        }
    }

    impl RowDecoder {
        /// Bytes the decoder holds on to between batches.
        fn retained(&self) -> usize {
            let builders: usize = self
                .builders
                .iter()
                .map(|b| match b {
                    Builder::Text(b) => b.values_capacity(),
                    Builder::Binary(b) => b.values_capacity(),
                    _ => 0,
                })
                .sum();
            builders + self.scratch.capacity()
        }
    }

    #[test]
    fn big_blobs_go_straight_into_the_batch_and_leave_nothing_behind() {
        let text: String = (0..100_000).map(|i| format!("{i}: é€😀\n")).collect();
        let binary: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 % 251) as u8).collect();
        let latin1: Vec<u8> = (0..=255u8).cycle().take(1_000_000).collect();
        let mut dec = decoder(vec![
            column("T", ColumnKind::TextBlob),
            column("B", ColumnKind::BinaryBlob),
            OutputColumn {
                text: TextDecoder::for_charset("ISO8859_1").unwrap(),
                ..column("L", ColumnKind::TextBlob)
            },
        ]);
        let ids = [[0u8; 8], [1; 8], [2; 8]];
        let blobs = [text.as_bytes(), &binary[..], &latin1[..]];
        let taken = std::cell::Cell::new(0);
        let mut which = 0;
        dec.append_with(
            |i| Some(&ids[i][..]),
            |id, out| {
                assert_eq!(id, &ids[which]);
                which += 1;
                // Odd-sized segments cut characters in two.
                segments(blobs[id[0] as usize], 32_767, &taken)(id, out)
            },
        )
        .unwrap();
        let batch = dec.take_batch().unwrap();
        assert_eq!(batch.column(0).as_string::<i32>().value(0), text);
        assert_eq!(batch.column(1).as_binary::<i32>().value(0), binary);
        let expected: String = latin1.iter().map(|&b| b as char).collect();
        assert_eq!(batch.column(2).as_string::<i32>().value(0), expected);
        // The blobs live in the batch only: a decoder that copied each
        // through a buffer of its own kept that buffer, as big as the
        // biggest blob, until it was dropped.
        assert!(dec.retained() < 64 * 1024, "{} bytes kept", dec.retained());
    }

    #[test]
    fn a_blob_that_is_not_utf8_stops_its_reading_and_names_the_offset() {
        let mut bytes = vec![b'a'; 100_000];
        bytes[70_000] = 0xff;
        let mut dec = decoder(vec![column("NOTES", ColumnKind::TextBlob)]);
        let taken = std::cell::Cell::new(0);
        let id = [0u8; 8];
        let err = dec
            .append_with(|_| Some(&id[..]), segments(&bytes, 32_768, &taken))
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("NOTES") && text.contains("offset 70000"),
            "{text}"
        );
        assert_eq!(taken.get(), 3, "segments read");
    }

    #[test]
    fn text_is_decoded_in_each_columns_character_set() {
        let mut dec = decoder(vec![
            OutputColumn {
                text: TextDecoder::for_charset("WIN1252").unwrap(),
                ..column("W", ColumnKind::Text { padded: true })
            },
            column("U", ColumnKind::Text { padded: false }),
        ]);
        let values: [&[u8]; 2] = [b"\xe9\x80  ", "é€".as_bytes()];
        dec.append_with(|i| Some(values[i]), no_blobs).unwrap();
        let batch = dec.take_batch().unwrap();
        assert_eq!(batch.column(0).as_string::<i32>().value(0), "é€");
        assert_eq!(batch.column(1).as_string::<i32>().value(0), "é€");
    }

    #[test]
    fn invalid_utf8_names_the_column_and_the_fix() {
        let mut dec = decoder(vec![column("LEGACY", ColumnKind::Text { padded: false })]);
        let err = dec
            .append_with(|_| Some(&b"caf\xe9"[..]), no_blobs)
            .unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("LEGACY") && text.contains("--charset"),
            "{text}"
        );
    }

    /// A nullable ARRAY column named A, as the server describes one (its
    /// 8 bytes: the array's id).
    fn array_column_a() -> fbunload_client::ColumnDesc {
        fbunload_client::ColumnDesc {
            name: "A".into(),
            sql_type: fbunload_client::sql_type::ARRAY,
            scale: 0,
            subtype: 0,
            length: 8,
            nullable: true,
        }
    }

    /// Bounds the catalog gives that multiply past any buffer (or past
    /// `usize`) are refused with a message, never an overflow or an
    /// allocation.
    #[test]
    fn an_array_too_big_to_read_is_refused() {
        use fbunload_client::ElementType;
        for bounds in [
            vec![(i32::MIN, i32::MAX); 3],
            vec![(1, 70_000), (1, 70_000)],
            vec![(-2_000_000_000, 2_000_000_000)],
        ] {
            let shape = ArrayShape {
                relation: "T".into(),
                field: "A".into(),
                element: ElementType {
                    code: element::INT64,
                    scale: 0,
                    length: 8,
                    charset: 0,
                },
                bounds,
            };
            let desc = array_column_a();
            let options = crate::types::TypeOptions::default();
            let err =
                OutputColumn::with_array("A", &desc, None, Some(&shape), &options).unwrap_err();
            assert!(err.contains("more than 2 GiB"), "{err}");
        }
    }

    #[test]
    fn arrays_become_one_list_per_dimension_and_null_stays_null() {
        use fbunload_client::ElementType;
        let shape = ArrayShape {
            relation: "T".into(),
            field: "A".into(),
            element: ElementType {
                code: element::VARYING,
                scale: 0,
                length: 3,
                charset: 4,
            },
            bounds: vec![(0, 1), (1, 2)],
        };
        let desc = array_column_a();
        let options = crate::TypeOptions::default();
        let column = OutputColumn::with_array("A", &desc, None, Some(&shape), &options).unwrap();
        let mut dec = decoder(vec![column]);
        // Four VARCHAR elements, each NUL-terminated in 5 bytes.
        let slice = b"ab\0\0\0\0\0\0\0\0xyz\0\0\xc3\xa9\0\0\0";
        let id = [9u8; 8];
        let reads = std::cell::Cell::new(0);
        let read_slice = |got: &BlobId, s: &ArrayShape, out: &mut [u8]| {
            assert_eq!((got, s.len()), (&[9u8; 8], 4));
            reads.set(reads.get() + 1);
            out.copy_from_slice(slice);
            Ok(())
        };
        dec.append_with_arrays(|_| Some(&id[..]), no_blobs, read_slice)
            .unwrap();
        dec.append_with_arrays(|_| None, no_blobs, read_slice)
            .unwrap();
        dec.append_with_arrays(|_| Some(&id[..]), no_blobs, read_slice)
            .unwrap();
        assert_eq!(reads.get(), 2);
        let batch = dec.take_batch().unwrap();
        let outer = batch.column(0).as_list::<i32>();
        assert_eq!(outer.len(), 3);
        assert!(outer.is_null(1) && outer.value_length(1) == 0);
        let row = outer.value(2);
        let inner = row.as_list::<i32>();
        assert_eq!(inner.len(), 2);
        let text = |i: usize| {
            let items = inner.value(i);
            let items = items.as_string::<i32>();
            (0..items.len())
                .map(|j| items.value(j).to_string())
                .collect::<Vec<_>>()
        };
        assert_eq!(text(0), ["ab", ""]);
        assert_eq!(text(1), ["xyz", "é"]);
        assert_eq!(
            batch.schema().field(0).metadata()[crate::types::ARRAY_BOUNDS_METADATA_KEY],
            "[0:1, 1:2]"
        );
    }

    #[test]
    fn many_workers_share_one_cap_and_fixed_width_rows_count_toward_it() {
        let one = BatchLimits::default();
        assert_eq!(one.shared_by(1).bytes, one.bytes);
        assert_eq!(one.shared_by(64).bytes, 1 << 20);
        assert_eq!(one.shared_by(100_000).bytes, BatchLimits::SMALLEST_SHARE);
        // 64-bit integers only: 1 MiB holds 131,072 of them, 16,384 rows
        // of eight columns.
        let columns = (0..8).map(|i| column(&format!("C{i}"), ColumnKind::Int64));
        let mut dec = RowDecoder::new(
            columns.collect(),
            BatchLimits {
                rows: 1 << 20,
                ..one.shared_by(64)
            },
        );
        let v = 7i64.to_ne_bytes();
        let mut rows = 0;
        while !dec.is_full() {
            dec.append_with(|_| Some(&v[..]), no_blobs).unwrap();
            rows += 1;
        }
        assert_eq!(rows, 16_384);
    }

    #[test]
    fn a_batch_cut_by_its_bytes_holds_no_room_beyond_its_values() {
        // 1 MiB of 3,000-byte texts and an integer a row: the byte cap ends
        // the batch after 349 rows, where the integers' builder was made
        // for 8,192 and the texts' had grown by doubling.
        let mut dec = RowDecoder::new(
            vec![
                column("I", ColumnKind::Int64),
                column("T", ColumnKind::Text { padded: false }),
            ],
            BatchLimits {
                rows: 8192,
                bytes: 1 << 20,
            },
        );
        let int = 7i64.to_ne_bytes();
        let text = vec![b'x'; 3000];
        for _ in 0..3 {
            let mut rows = 0;
            while !dec.is_full() {
                let values: [&[u8]; 2] = [&int, &text];
                dec.append_with(|i| Some(values[i]), no_blobs).unwrap();
                rows += 1;
            }
            let batch = dec.take_batch().unwrap();
            let values = rows * (8 + 4 + 3000) + 4;
            let held = batch.get_array_memory_size();
            assert!(
                held < values + 4096,
                "{rows} rows of {values} bytes held {held}"
            );
        }
    }

    #[test]
    fn a_first_batch_asks_for_less_than_32_kib_a_column() {
        // A table of a few rows has one batch: columns made for the
        // batch's 8,192 rows were 64-128 KiB each, mapped and unmapped by
        // the binary's malloc for each of thousands of small tables.
        let decimal = ColumnKind::Decimal {
            width: 8,
            precision: 18,
            scale: 2,
        };
        let dec = decoder(vec![
            column("I", ColumnKind::Int64),
            column("D", decimal),
            column("T", ColumnKind::Timestamp),
        ]);
        for (builder, name) in dec.builders.iter().zip(["I", "D", "T"]) {
            let bytes = match builder {
                Builder::Int64(b) => b.capacity() * 8,
                Builder::Decimal(b) => b.capacity() * 16,
                Builder::Timestamp(b) => b.capacity() * 8,
                _ => unreachable!(),
            };
            assert!(bytes < 32 << 10, "{name}: {bytes} bytes");
            assert!(bytes > 0, "{name}");
        }
    }

    #[test]
    fn batches_are_cut_at_the_row_limit() {
        let mut dec = RowDecoder::new(
            vec![column("I", ColumnKind::Int32)],
            BatchLimits {
                rows: 2,
                bytes: 1 << 20,
            },
        );
        let v = 1i32.to_ne_bytes();
        dec.append_with(|_| Some(&v[..]), no_blobs).unwrap();
        assert!(!dec.is_full());
        dec.append_with(|_| Some(&v[..]), no_blobs).unwrap();
        assert!(dec.is_full());
        assert_eq!(dec.take_batch().unwrap().num_rows(), 2);
        assert!(dec.is_empty());
    }

    #[test]
    fn batches_carry_a_shared_schema_only_when_it_is_the_same() {
        let columns = || vec![column("I", ColumnKind::Int32)];
        let table = RowDecoder::new(columns(), BatchLimits::default()).schema();
        let v = 1i32.to_ne_bytes();
        let mut dec = decoder(columns());
        assert!(dec.share_schema(&table));
        dec.append_with(|_| Some(&v[..]), no_blobs).unwrap();
        assert!(Arc::ptr_eq(&dec.take_batch().unwrap().schema(), &table));
        // Another type, or the same column with other metadata: its own.
        let mut named = column("I", ColumnKind::Int32);
        named.type_name = "INTEGER".into();
        for other in [vec![column("I", ColumnKind::Int64)], vec![named]] {
            let mut dec = decoder(other);
            assert!(!dec.share_schema(&table));
            assert!(!Arc::ptr_eq(&dec.schema(), &table));
        }
    }
}
