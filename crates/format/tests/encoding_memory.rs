//! What encoding holds beside the rows it is given: a Parquet row group
//! of a wide table one column's writer at a time, not one per column; a
//! text batch of blobs one piece's text at a time, not the whole batch's.
//! Measured by this test binary's own allocator, so these tests run alone
//! in their file, one at a time.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use arrow_array::{ArrayRef, BinaryArray, Decimal128Array, Int32Array, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use fbunload_format::columnar::ParquetFormat;
use fbunload_format::{
    encode_in_pieces, BatchFormat, ByteFormat, CsvFormat, CsvOptions, FileInfo, TableWriter,
};

/// The system allocator, counting the bytes held now and the most held.
struct Counting;

static HELD: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = HELD.fetch_add(layout.size(), Ordering::SeqCst) + layout.size();
            PEAK.fetch_max(now, Ordering::SeqCst);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) };
        HELD.fetch_sub(layout.size(), Ordering::SeqCst);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// One measurement at a time: the counts are the whole binary's.
static ALONE: Mutex<()> = Mutex::new(());

/// The most bytes `work` held at once beyond what was held before it.
fn peak_of<T>(work: impl FnOnce() -> T) -> (T, usize) {
    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let result = work();
    (result, PEAK.load(Ordering::SeqCst) - before)
}

/// A Parquet writer of `format` for `schema` that writes to nowhere.
fn to_sink(format: &ParquetFormat, schema: Arc<Schema>) -> Box<dyn TableWriter> {
    format
        .writer(
            schema,
            &FileInfo::default(),
            Box::new(|| Ok(Box::new(io::sink()) as Box<dyn Write + Send>)),
        )
        .unwrap()
}

/// The format with one row group of up to `rows` rows, whatever its bytes.
fn one_group_of(rows: usize) -> ParquetFormat {
    ParquetFormat {
        row_group_rows: rows,
        row_group_bytes: None,
        ..ParquetFormat::default()
    }
}

#[test]
fn a_row_group_of_500_columns_holds_one_column_writer_at_a_time() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    const COLUMNS: usize = 500;
    const ROWS: i32 = 100;
    let schema = Arc::new(Schema::new(
        (0..COLUMNS)
            .map(|c| Field::new(format!("C{c}"), DataType::Int32, true))
            .collect::<Vec<_>>(),
    ));
    let columns: Vec<ArrayRef> = (0..COLUMNS)
        .map(|c| {
            Arc::new(Int32Array::from_iter_values(
                (0..ROWS).map(|r| r * c as i32),
            )) as _
        })
        .collect();
    let batch = RecordBatch::try_new(schema.clone(), columns).unwrap();
    let mut writer = to_sink(&ParquetFormat::default(), schema);
    let encoder = writer.encoder();

    let (group, peak) = peak_of(|| encoder.encode(0, vec![batch]).unwrap());
    writer.append(group).unwrap();
    writer.finish().unwrap();

    // 500 columns of 100 numbers are 200 KB of values. Every column's
    // writer made at once (each with its zstd contexts) held 38 MB here,
    // whatever the rows; one at a time, 2.2 MB.
    assert!(
        peak < 8 << 20,
        "encoding 500 x 100 numbers held {peak} bytes at most"
    );
}

#[test]
fn an_encoded_row_group_holds_its_pages_at_their_compressed_size() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // 200,000 distinct texts of 64 bytes that compress well: 644 KB
    // compressed, which in the codec's buffers held 2.7 MB.
    let schema = Arc::new(Schema::new(vec![Field::new("T", DataType::Utf8, false)]));
    let texts = StringArray::from_iter_values((0..200_000).map(|r| format!("{r:08}").repeat(8)));
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(texts) as ArrayRef]).unwrap();
    let mut writer = to_sink(&one_group_of(200_000), schema);
    let encoder = writer.encoder();
    let before = HELD.load(Ordering::SeqCst);
    // The rows stay held outside: what is held after is the group's.
    let group = encoder.encode(0, vec![batch.clone()]).unwrap();
    let held = HELD.load(Ordering::SeqCst) - before;
    let bytes = group.memory_size();
    assert!(bytes < 4 << 20, "{bytes} bytes compressed");
    assert!(
        held < bytes + (1 << 20),
        "a group of {bytes} bytes held {held} until appended"
    );
    writer.append(group).unwrap();
    writer.finish().unwrap();
}

#[test]
fn a_file_keeps_nothing_of_a_decimal_column_s_rows_for_its_footer() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // 200,000 DECIMAL(38,4), Parquet's FIXED_LEN_BYTE_ARRAY of 16 bytes
    // (INT128, NUMERIC beyond 18 digits): arrow-rs converts each piece of
    // 65,536 rows into one buffer of their bytes (1 MiB), and the chunk's
    // min and max, kept for the footer, were views into those buffers.
    let schema = Arc::new(Schema::new(vec![Field::new(
        "D",
        DataType::Decimal128(38, 4),
        false,
    )]));
    let values = Decimal128Array::from_iter_values((0..200_000).map(|r| (r * 7919) % 1_000_003))
        .with_precision_and_scale(38, 4)
        .unwrap();
    let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(values) as ArrayRef]).unwrap();
    let mut writer = to_sink(&one_group_of(200_000), schema);
    let encoder = writer.encoder();
    let before = HELD.load(Ordering::SeqCst);
    // The rows stay held outside: what is held after is the file's.
    let group = encoder.encode(0, vec![batch.clone()]).unwrap();
    writer.append(group).unwrap();
    let kept = HELD.load(Ordering::SeqCst) as isize - before as isize;
    assert!(
        kept < 64 << 10,
        "the file kept {kept} bytes of a written group for its footer"
    );
    writer.finish().unwrap();
}

#[test]
fn a_batch_of_blobs_is_written_as_text_a_piece_at_a_time() {
    let _alone = ALONE.lock().unwrap_or_else(|e| e.into_inner());
    // 64 rows of a 128 KiB text and a 128 KiB binary value: 16 MB, as the
    // decoder cuts a batch of blobs; in CSV the binary goes out in hex.
    const ROWS: usize = 64;
    const VALUE: usize = 128 << 10;
    let schema = Arc::new(Schema::new(vec![
        Field::new("NOTE", DataType::Utf8, true),
        Field::new("IMAGE", DataType::Binary, true),
    ]));
    let notes: Vec<String> = (0..ROWS)
        .map(|r| format!("{r:x}").repeat(VALUE / 2))
        .collect();
    let images: Vec<Vec<u8>> = (0..ROWS).map(|r| vec![r as u8; VALUE]).collect();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(StringArray::from_iter_values(&notes)) as ArrayRef,
            Arc::new(BinaryArray::from_iter_values(&images)) as ArrayRef,
        ],
    )
    .unwrap();
    let format = CsvFormat::new(CsvOptions::default());
    let mut whole = Vec::new();
    format
        .encoder(schema.clone())
        .encode(&batch, &mut whole)
        .unwrap();

    let mut written = Vec::with_capacity(whole.len());
    let mut encoder = format.encoder(schema);
    let (_, peak) = peak_of(|| {
        let mut buffer = Vec::new();
        encode_in_pieces(encoder.as_mut(), &batch, &mut buffer, &mut |bytes| {
            written.extend_from_slice(bytes);
            Ok(())
        })
        .unwrap();
    });
    assert!(
        written == whole,
        "the same bytes as the batch encoded whole"
    );
    // The whole batch's text is 24 MB; a piece's, about 1 MB of values.
    assert!(
        peak < 4 << 20,
        "writing {} bytes of text held {peak}",
        whole.len()
    );
}
