//! Cutting a table's rows into groups at fixed rows.
//!
//! A group is the unit of parallel encoding of a [`crate::BatchFormat`]: a
//! Parquet row group, an Arrow IPC record batch. Groups are counted from
//! the table's first row, never from a unit's, so where they fall depends
//! on the rows alone, not on the units, the decoder's batch size or the
//! number of workers. Cutting slices: no value is copied (but see below).
//!
//! A format may also end a group once it holds so many bytes of data
//! ([`GroupCutter::with_group_bytes`]): a row's bytes are counted from its
//! values alone (their widths, the lengths of text and binary values,
//! the elements of arrays), so those groups too fall at the same rows
//! whatever the units were. Wide rows then make groups of fewer rows, and
//! a group being encoded holds no more than that in memory.
//!
//! A few rows held in buffers sized for many are copied out of them,
//! though ([`SMALL_PIECE_ROWS`]): the decoder sizes a batch's buffers for
//! 8,192 rows, and a group waiting to be filled held each unit's last,
//! short batch with them. A `--since` run's changed rows, a few in each
//! of 912 units of a 5,000,000-row table, held 170 MB that way.
//!
//! A table written as parts of so many rows (`--max-rows`) has its groups
//! counted from each part's first row instead, so that no group straddles
//! two files: parts of 1,000 rows in groups of 300 hold groups of 300,
//! 300, 300 and 100 rows.

use arrow_array::cast::AsArray;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use crate::{FormatError, TableWriter};

/// A piece of at most this many rows is held copied, when its batch's
/// buffers take more than [`SMALL_PIECE_BYTES`]: the copy costs little,
/// and the rest of those buffers is let go.
pub const SMALL_PIECE_ROWS: usize = 1024;
/// See [`SMALL_PIECE_ROWS`].
pub const SMALL_PIECE_BYTES: usize = 64 << 10;

/// Small pieces (of at most [`SMALL_PIECE_ROWS`] rows) a group holds one
/// after another before they are put together in one: each piece holds
/// its arrays' own allocations and bookkeeping, whatever its rows, and a
/// `--since` run's changed rows, a few in each unit, waited for a group
/// as a piece a unit (2.6 KB a unit of a 17-column table, 980 units of a
/// 1,000,000-row STOCK at --unit-pages 50: measured with heaptrack).
/// The encoders read a group's rows whatever its pieces, so the files are
/// the same.
const MERGED_PIECES: usize = 64;

/// `piece` in buffers of its own if it is a few rows of a batch whose
/// buffers are big (see [`SMALL_PIECE_ROWS`]), else as it is.
fn held(piece: RecordBatch, batch_bytes: usize) -> RecordBatch {
    if piece.num_rows() > SMALL_PIECE_ROWS || batch_bytes <= SMALL_PIECE_BYTES {
        return piece;
    }
    let rows = arrow_array::UInt32Array::from_iter_values(0..piece.num_rows() as u32);
    arrow_select::take::take_record_batch(&piece, &rows).unwrap_or(piece)
}

/// One group's rows, in order, in pieces sliced from the batches that
/// held them.
#[derive(Debug)]
pub struct CutGroup {
    /// The group's position in its table.
    pub index: usize,
    pub batches: Vec<RecordBatch>,
    /// Whether its last row is the last of a part of
    /// [`GroupCutter::with_part_rows`] rows.
    pub ends_part: bool,
}

/// Cuts a stream of batches into groups of `group_rows` rows.
#[derive(Debug)]
pub struct GroupCutter {
    group_rows: usize,
    group_bytes: Option<usize>,
    /// Bytes of data in the pending rows (with `group_bytes`).
    pending_bytes: usize,
    part_rows: Option<u64>,
    /// Rows cut so far in the current part.
    rows_in_part: u64,
    pending: Vec<RecordBatch>,
    pending_rows: usize,
    next_index: usize,
}

impl GroupCutter {
    pub fn new(group_rows: usize) -> Self {
        assert!(group_rows > 0, "a group has rows");
        GroupCutter {
            group_rows,
            group_bytes: None,
            pending_bytes: 0,
            part_rows: None,
            rows_in_part: 0,
            pending: Vec::new(),
            pending_rows: 0,
            next_index: 0,
        }
    }

    /// Also ends a group at every multiple of `part_rows` rows.
    pub fn with_part_rows(mut self, part_rows: Option<u64>) -> Self {
        assert!(part_rows != Some(0), "a part has rows");
        self.part_rows = part_rows;
        self
    }

    /// Also ends a group at the row that brings its data to `bytes` (see
    /// the module docs); `None` cuts by rows only.
    pub fn with_group_bytes(mut self, bytes: Option<usize>) -> Self {
        self.group_bytes = bytes.map(|b| b.max(1));
        self
    }

    /// Adds the table's next batch; returns the groups it completed.
    pub fn push(&mut self, batch: RecordBatch) -> Vec<CutGroup> {
        let mut complete = Vec::new();
        let rows = batch.num_rows();
        let sizes = self.group_bytes.map(|_| row_data_sizes(&batch));
        let batch_bytes = batch.get_array_memory_size();
        let mut offset = 0;
        while offset < rows {
            let part_left = self.part_rows.map_or(usize::MAX, |part| {
                usize::try_from(part - self.rows_in_part).unwrap_or(usize::MAX)
            });
            let mut take = (self.group_rows - self.pending_rows)
                .min(rows - offset)
                .min(part_left);
            let mut full_of_bytes = false;
            if let (Some(cap), Some(sizes)) = (self.group_bytes, &sizes) {
                let mut n = 0;
                while n < take && !full_of_bytes {
                    self.pending_bytes += sizes[offset + n];
                    n += 1;
                    full_of_bytes = self.pending_bytes >= cap;
                }
                take = n;
            }
            let piece = if take == rows {
                batch.clone()
            } else {
                batch.slice(offset, take)
            };
            self.pending.push(held(piece, batch_bytes));
            self.merge_small_pieces();
            self.pending_rows += take;
            self.rows_in_part += take as u64;
            offset += take;
            if self.pending_rows == self.group_rows || take == part_left || full_of_bytes {
                complete.push(self.take());
            }
        }
        complete
    }

    /// The table is complete: the last, shorter group, if rows are left.
    pub fn finish(&mut self) -> Option<CutGroup> {
        (self.pending_rows > 0).then(|| self.take())
    }

    /// Groups cut so far.
    pub fn groups_cut(&self) -> usize {
        self.next_index
    }

    /// The last [`MERGED_PIECES`] pending pieces in one, if they are all
    /// small: a row is copied again only while its piece is small, so a
    /// few times at most.
    fn merge_small_pieces(&mut self) {
        let small = self
            .pending
            .iter()
            .rev()
            .take_while(|p| p.num_rows() <= SMALL_PIECE_ROWS)
            .count();
        if small < MERGED_PIECES {
            return;
        }
        let from = self.pending.len() - small;
        let schema = self.pending[from].schema();
        if let Ok(merged) = arrow_select::concat::concat_batches(&schema, &self.pending[from..]) {
            self.pending.truncate(from);
            self.pending.push(merged);
        }
    }

    fn take(&mut self) -> CutGroup {
        let ends_part = self.part_rows == Some(self.rows_in_part);
        if ends_part {
            self.rows_in_part = 0;
        }
        let group = CutGroup {
            index: self.next_index,
            batches: std::mem::take(&mut self.pending),
            ends_part,
        };
        self.next_index += 1;
        self.pending_rows = 0;
        self.pending_bytes = 0;
        group
    }
}

/// Each row's bytes of data, from its values alone: fixed widths, the
/// lengths of text and binary values, the elements of lists.
pub(crate) fn row_data_sizes(batch: &RecordBatch) -> Vec<usize> {
    let mut sizes = vec![0; batch.num_rows()];
    for column in batch.columns() {
        add_data_sizes(column.as_ref(), &mut sizes);
    }
    sizes
}

fn add_data_sizes(array: &dyn Array, sizes: &mut [usize]) {
    fn add_lengths<O: arrow_array::OffsetSizeTrait>(offsets: &[O], sizes: &mut [usize]) {
        for (size, pair) in sizes.iter_mut().zip(offsets.windows(2)) {
            *size += (pair[1] - pair[0]).as_usize() + std::mem::size_of::<O>();
        }
    }
    match array.data_type() {
        DataType::Utf8 => add_lengths(array.as_string::<i32>().value_offsets(), sizes),
        DataType::LargeUtf8 => add_lengths(array.as_string::<i64>().value_offsets(), sizes),
        DataType::Binary => add_lengths(array.as_binary::<i32>().value_offsets(), sizes),
        DataType::LargeBinary => add_lengths(array.as_binary::<i64>().value_offsets(), sizes),
        DataType::List(_) => {
            let list = array.as_list::<i32>();
            let offsets = list.value_offsets();
            let (first, last) = (offsets[0] as usize, offsets[sizes.len()] as usize);
            let items = list.values().slice(first, last - first);
            let mut item_sizes = vec![0; last - first];
            add_data_sizes(items.as_ref(), &mut item_sizes);
            for (size, pair) in sizes.iter_mut().zip(offsets.windows(2)) {
                let (from, to) = (pair[0] as usize - first, pair[1] as usize - first);
                *size += item_sizes[from..to].iter().sum::<usize>() + 4;
            }
        }
        other => {
            let width = other.primitive_width().unwrap_or(1);
            sizes.iter_mut().for_each(|size| *size += width);
        }
    }
}

/// Writes a whole table on the calling thread: cuts, encodes and appends
/// each group in turn, then finishes the file.
pub fn write_in_order(
    mut writer: Box<dyn TableWriter>,
    batches: impl IntoIterator<Item = RecordBatch>,
) -> Result<(), FormatError> {
    let encoder = writer.encoder();
    let mut cutter = GroupCutter::new(writer.group_rows()).with_group_bytes(writer.group_bytes());
    for batch in batches {
        for group in cutter.push(batch) {
            writer.append(encoder.encode(group.index, group.batches)?)?;
        }
    }
    if let Some(group) = cutter.finish() {
        writer.append(encoder.encode(group.index, group.batches)?)?;
    }
    writer.finish()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{ArrayRef, Int32Array};
    use arrow_schema::{Field, Schema};
    use std::sync::Arc;

    fn batch(from: i32, rows: i32) -> RecordBatch {
        let array: ArrayRef = Arc::new(Int32Array::from_iter_values(from..from + rows));
        RecordBatch::try_from_iter([("i", array)]).unwrap()
    }

    fn values(group: &CutGroup) -> Vec<i32> {
        group
            .batches
            .iter()
            .flat_map(|b| {
                let a = b.column(0).as_any().downcast_ref::<Int32Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    }

    /// Every group `cutter` cuts from batches of `sizes` rows, numbered on.
    fn cut_all(mut cutter: GroupCutter, sizes: &[i32]) -> Vec<CutGroup> {
        let mut groups = Vec::new();
        let mut from = 0;
        for &n in sizes {
            groups.extend(cutter.push(batch(from, n)));
            from += n;
        }
        groups.extend(cutter.finish());
        groups
    }

    #[test]
    fn groups_fall_at_the_same_rows_whatever_the_batches() {
        let cut = |sizes: &[i32]| {
            cut_all(GroupCutter::new(10), sizes)
                .iter()
                .enumerate()
                .map(|(i, g)| {
                    assert_eq!(g.index, i);
                    values(g)
                })
                .collect::<Vec<_>>()
        };
        let expected: Vec<Vec<i32>> = vec![(0..10).collect(), (10..20).collect(), vec![20, 21]];
        assert_eq!(cut(&[22]), expected);
        assert_eq!(cut(&[1, 0, 9, 3, 9]), expected);
        assert_eq!(cut(&[10, 10, 2]), expected);
        assert_eq!(cut(&[21, 1]), expected);
        assert!(cut(&[0, 0]).is_empty());
    }

    #[test]
    fn small_pieces_are_held_together_and_keep_their_rows() {
        // A row a unit, in batches whose buffers are big.
        let big = |from: i32| {
            let mut builder = arrow_array::builder::Int32Builder::with_capacity(32 << 10);
            builder.append_value(from);
            let array: ArrayRef = Arc::new(builder.finish());
            RecordBatch::try_from_iter([("i", array)]).unwrap()
        };
        let mut cutter = GroupCutter::new(100_000);
        let mut groups = Vec::new();
        for i in 0..1000 {
            groups.extend(cutter.push(big(i)));
            assert!(
                cutter.pending.len() < MERGED_PIECES,
                "{} pieces held",
                cutter.pending.len()
            );
        }
        // 1,000 rows, a piece of more than SMALL_PIECE_ROWS, then a big one.
        groups.extend(cutter.push(batch(1000, 2000)));
        groups.extend(cutter.push(big(3000)));
        let last = cutter.finish().unwrap();
        assert!(groups.is_empty());
        let mut expected: Vec<i32> = (0..3000).collect();
        expected.push(3000);
        assert_eq!(values(&last), expected);
    }

    #[test]
    fn groups_restart_at_every_part_whatever_the_batches() {
        for sizes in [&[25][..], &[1, 9, 0, 15], &[7, 7, 7, 4]] {
            let groups = cut_all(GroupCutter::new(4).with_part_rows(Some(10)), sizes);
            let shape: Vec<(usize, bool)> = groups
                .iter()
                .map(|g| (values(g).len(), g.ends_part))
                .collect();
            let (end, more) = (true, false);
            assert_eq!(
                shape,
                [
                    (4, more),
                    (4, more),
                    (2, end),
                    (4, more),
                    (4, more),
                    (2, end),
                    (4, more),
                    (1, more)
                ],
                "{sizes:?}"
            );
            let all: Vec<i32> = groups.iter().flat_map(values).collect();
            assert_eq!(all, (0..25).collect::<Vec<_>>());
        }
    }

    fn text_batch(values: &[&str]) -> RecordBatch {
        let array: ArrayRef = Arc::new(arrow_array::StringArray::from(values.to_vec()));
        RecordBatch::try_from_iter([("s", array)]).unwrap()
    }

    #[test]
    fn groups_end_at_the_row_that_fills_them_with_bytes_whatever_the_batches() {
        // Row sizes: 4 offset bytes plus the text.
        let rows: Vec<String> = (0..12).map(|i| "x".repeat(i % 4 * 10)).collect();
        let shape = |sizes: &[usize]| {
            let mut cutter = GroupCutter::new(100).with_group_bytes(Some(50));
            let mut groups = Vec::new();
            let mut from = 0;
            for &n in sizes {
                let texts: Vec<&str> = rows[from..from + n].iter().map(String::as_str).collect();
                groups.extend(cutter.push(text_batch(&texts)));
                from += n;
            }
            groups.extend(cutter.finish());
            groups
                .iter()
                .map(|g| g.batches.iter().map(RecordBatch::num_rows).sum::<usize>())
                .collect::<Vec<_>>()
        };
        // 4 + 14 + 24 + 34 = 76 >= 50 at the fourth row, each time.
        let expected = vec![4, 4, 4];
        assert_eq!(shape(&[12]), expected);
        assert_eq!(shape(&[1, 1, 5, 0, 5]), expected);
        assert_eq!(shape(&[2, 2, 2, 2, 2, 2]), expected);
        let sizes = row_data_sizes(&text_batch(&["", "abc"]).slice(1, 1));
        assert_eq!(sizes, [7]);
    }

    #[test]
    fn a_few_rows_in_big_buffers_are_held_in_buffers_of_their_own() {
        // As the decoder makes them: buffers for 8,192 rows, 5 filled.
        let mut builder = arrow_array::builder::Int64Builder::with_capacity(8192);
        builder.append_slice(&[1, 2, 3, 4, 5]);
        let schema = Arc::new(Schema::new(vec![Field::new("A", DataType::Int64, false)]));
        let short = RecordBatch::try_new(schema, vec![Arc::new(builder.finish())]).unwrap();
        assert!(short.get_array_memory_size() >= 8192 * 8);
        let mut cutter = GroupCutter::new(1000);
        assert!(cutter.push(short.clone()).is_empty());
        let group = cutter.finish().unwrap();
        assert_eq!(group.batches, vec![short]);
        let held: usize = group
            .batches
            .iter()
            .map(|b| b.get_array_memory_size())
            .sum();
        assert!(held < 4096, "{held} bytes held for 5 rows");
    }

    #[test]
    fn a_batch_that_fits_whole_is_not_sliced() {
        let mut cutter = GroupCutter::new(4);
        let whole = batch(0, 4);
        let groups = cutter.push(whole.clone());
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].batches, vec![whole]);
        assert_eq!(cutter.groups_cut(), 1);
        assert!(cutter.finish().is_none());
    }
}
