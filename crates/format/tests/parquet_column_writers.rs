//! What encoding a Parquet row group of a wide table holds: one column's
//! writer at a time, not one per column. Measured by this test binary's
//! own allocator, so it runs alone in its file.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Write};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use arrow_array::{ArrayRef, Int32Array, RecordBatch};
use arrow_schema::{DataType, Field, Schema};
use fbunload_format::columnar::ParquetFormat;
use fbunload_format::{BatchFormat, FileInfo};

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

#[test]
fn a_row_group_of_500_columns_holds_one_column_writer_at_a_time() {
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
    let mut writer = ParquetFormat::default()
        .writer(
            schema,
            &FileInfo::default(),
            Box::new(|| Ok(Box::new(io::sink()) as Box<dyn Write + Send>)),
        )
        .unwrap();
    let encoder = writer.encoder();

    let before = HELD.load(Ordering::SeqCst);
    PEAK.store(before, Ordering::SeqCst);
    let group = encoder.encode(0, vec![batch]).unwrap();
    let peak = PEAK.load(Ordering::SeqCst) - before;
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
