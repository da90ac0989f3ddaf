//! A table's rows and bytes, estimated from its pages without reading it.
//!
//! The catalog gives a table's pointer pages (`RDB$PAGES`), each with
//! `dp_per_pp` data-page slots, filled in order. Every pointer page but
//! the last is taken as full; in the last, the slots in use end at the
//! last that holds a row, which a search finds ([`used_slots_end`]: two
//! one-row queries of [`PROBES`] `EXISTS` each at 8 KiB pages). Those
//! slots are the table's data pages ([`Estimate::data_pages`], counting
//! any that were freed in between).
//!
//! Rows per page come from a sample: [`SAMPLE_RANGES`] ranges of
//! [`RANGE_PAGES`] slots spread evenly over the slots in use, each
//! counted with `COUNT(*)` over its DB_KEY range, which Firebird 5 reads
//! as those pages only. So a table costs three queries and at most 128
//! pages read (and the pages the search reads, about one a probe),
//! whatever its size. A table of no more
//! pages than the sample is counted whole, exactly. BLOB columns' bytes
//! are sampled the same way (`OCTET_LENGTH`, which a blob's header
//! gives without reading its pages).
//!
//! Most tables of a database of thousands are small, and there each
//! `EXISTS` of the search costs the server a lookup of the table while
//! the statement is prepared: with 5,000 tables, preparing the search's
//! queries took most of `--plan`'s time. So a table of one pointer page
//! is first counted over its first [`SAMPLE_RANGES`] × [`RANGE_PAGES`]
//! slots in one query ([`TablePlan::small_table_sql`]) that also gives
//! the last slot holding a row there (decoded from the rows' DB_KEYs) and
//! whether any row lies beyond: if none does, that count is the whole
//! count the search and the sample would have made, and the slots in use
//! are the ones they would have found; else the table is searched and
//! sampled as above.
//!
//! Older servers read a DB_KEY range by scanning the table up to it, so
//! there only a table of one pointer page (a bounded read) is counted,
//! and no table's pages are known ([`Estimate::without_page_ranges`]).

use crate::identifier::quote_identifier;
use crate::incremental::{DbKeyLayout, RowPlaces};
use crate::planner::TablePlan;

/// The slots a small table's first query counts ([`TablePlan::small_table_sql`]):
/// as many as a sample holds, so a table within them is counted whole
/// either way.
pub const SMALL_TABLE_SLOTS: u64 = SAMPLE_RANGES * RANGE_PAGES;

/// Ranges of data-page slots a table's sample counts.
pub const SAMPLE_RANGES: u64 = 16;
/// Slots in each range (an extent: Firebird allocates data pages by 8).
pub const RANGE_PAGES: u64 = 8;

/// Slots a search of the slots in use probes at once (one query): two
/// rounds find where a pointer page's rows end (1,632 slots at 8 KiB
/// pages), three at 32 KiB (6,544).
pub const PROBES: u64 = 40;

/// The end of the slots that hold rows, searched between `from` and `to`
/// (taken as having none at `to` or after); `None` if no row lies at
/// `from` or after. `rows_from(slots)`, given slots in ascending order,
/// says at how many of them or after them a row lies: those are the
/// first ones, since a row after a slot lies after every slot before it.
pub fn used_slots_end<E>(
    from: u64,
    to: u64,
    mut rows_from: impl FnMut(&[u64]) -> Result<usize, E>,
) -> Result<Option<u64>, E> {
    // Rows at `low` or after, once the first round has found some; none
    // at `high` or after.
    let (mut low, mut high) = (from, to.max(from + 1));
    // The first round probes `from` too.
    let mut probes = vec![from];
    let mut first_round = true;
    loop {
        let gap = high - low;
        for j in 1..=PROBES {
            let slot = low + gap * j / (PROBES + 1);
            if slot > low && probes.last() != Some(&slot) {
                probes.push(slot);
            }
        }
        if probes.is_empty() {
            return Ok(Some(high));
        }
        let with_rows = rows_from(&probes)?.min(probes.len());
        if first_round && with_rows == 0 {
            return Ok(None);
        }
        first_round = false;
        if with_rows > 0 {
            low = probes[with_rows - 1];
        }
        if with_rows < probes.len() {
            high = probes[with_rows];
        }
        probes.clear();
    }
}

/// What an estimate stands on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Basis {
    /// Every row counted: the table has no more pages than a sample.
    Counted,
    /// Rows counted on [`Estimate::sampled_pages`] pages, scaled by the
    /// data pages.
    Sampled,
    /// Nothing known but the pointer pages (a server before Firebird 5,
    /// a table of more than one).
    Unknown,
}

impl Basis {
    /// `counted`, `sampled`, `pointer pages`: as `--plan` says it.
    pub fn as_str(self) -> &'static str {
        match self {
            Basis::Counted => "counted",
            Basis::Sampled => "sampled",
            Basis::Unknown => "unknown",
        }
    }
}

/// A table's estimated size, at the snapshot of the transaction that
/// made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Estimate {
    /// Rows; `None` where only pointer pages were read.
    pub rows: Option<u64>,
    /// Data-page slots in use (module docs); `None` where unknown (a
    /// server before Firebird 5).
    pub data_pages: Option<u64>,
    pub page_size: u32,
    /// Pages read to count rows (all of a counted table's).
    pub sampled_pages: u64,
    /// Bytes of the BLOB columns read, by `OCTET_LENGTH`; `None` for a
    /// table without BLOB columns or rows.
    pub blob_bytes: Option<u64>,
    pub basis: Basis,
}

impl Estimate {
    /// The bytes its data pages take in the database: data pages × page
    /// size. Rows, their back versions and free space, and BLOBs small
    /// enough to lie on data pages; not bigger BLOBs, which have pages of
    /// their own (see [`Estimate::blob_bytes`]).
    pub fn bytes(&self) -> Option<u64> {
        self.data_pages.map(|pages| pages * self.page_size as u64)
    }

    /// A table without pointer pages: never filled, no rows.
    pub fn empty(page_size: u32) -> Estimate {
        Estimate {
            rows: Some(0),
            data_pages: Some(0),
            page_size,
            sampled_pages: 0,
            blob_bytes: None,
            basis: Basis::Counted,
        }
    }

    /// Where the server cannot read a range of pages alone: rows only if
    /// counted (a table of one pointer page), pages unknown.
    pub fn without_page_ranges(page_size: u32, counted: Option<Counts>) -> Estimate {
        Estimate {
            rows: counted.map(|c| c.rows),
            data_pages: None,
            page_size,
            sampled_pages: 0,
            blob_bytes: counted.filter(|c| c.rows > 0).and_then(|c| c.blob_bytes),
            basis: if counted.is_some() {
                Basis::Counted
            } else {
                Basis::Unknown
            },
        }
    }

    /// From the slots in use and what the [`Sample`] of them counted.
    pub fn from_sample(sample: &Sample, counts: Counts, page_size: u32) -> Estimate {
        let (rows, blob_bytes, basis) = if sample.is_whole() {
            (counts.rows, counts.blob_bytes, Basis::Counted)
        } else {
            let scale = |n: u64| scaled(n, sample.used_slots, sample.sampled_pages());
            (
                scale(counts.rows),
                counts.blob_bytes.map(scale),
                Basis::Sampled,
            )
        };
        Estimate {
            rows: Some(rows),
            data_pages: Some(sample.used_slots),
            page_size,
            sampled_pages: sample.sampled_pages(),
            blob_bytes: blob_bytes.filter(|_| rows > 0),
            basis,
        }
    }
}

/// `n` counted on `of` pages, for `pages` pages, rounded.
fn scaled(n: u64, pages: u64, of: u64) -> u64 {
    if of == 0 {
        return 0;
    }
    ((n as u128 * pages as u128 + of as u128 / 2) / of as u128) as u64
}

/// What a sample's query counted, summed over its ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    pub rows: u64,
    /// `None` for a table without BLOB columns.
    pub blob_bytes: Option<u64>,
}

/// The slot ranges a table's sample counts: [`SAMPLE_RANGES`] of
/// [`RANGE_PAGES`] slots each, centred in as many equal shares of the
/// slots in use; or, for a table of no more slots than that, one range
/// over the whole table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sample {
    pub used_slots: u64,
    /// (first, end) slots of each range; empty to count the whole table.
    pub ranges: Vec<(u64, u64)>,
}

impl Sample {
    pub fn new(used_slots: u64) -> Sample {
        if used_slots <= SAMPLE_RANGES * RANGE_PAGES {
            return Sample {
                used_slots,
                ranges: Vec::new(),
            };
        }
        let ranges = (0..SAMPLE_RANGES)
            .map(|i| {
                let centre = (2 * i + 1) * used_slots / (2 * SAMPLE_RANGES);
                let first = centre
                    .saturating_sub(RANGE_PAGES / 2)
                    .min(used_slots - RANGE_PAGES);
                (first, first + RANGE_PAGES)
            })
            .collect();
        Sample { used_slots, ranges }
    }

    /// Whether it counts every row.
    pub fn is_whole(&self) -> bool {
        self.ranges.is_empty()
    }

    /// The slots its ranges cover (all for a whole count).
    pub fn sampled_pages(&self) -> u64 {
        if self.is_whole() {
            return self.used_slots;
        }
        self.ranges.iter().map(|(first, end)| end - first).sum()
    }
}

impl TablePlan {
    /// The indices of its BLOB columns (not ARRAY ones, also stored as
    /// blobs, whose declared type is their element's).
    pub fn blob_columns(&self) -> Vec<usize> {
        self.declared_types
            .iter()
            .enumerate()
            .filter(|(_, t)| t.starts_with("BLOB"))
            .map(|(i, _)| i)
            .collect()
    }

    /// The query of a small table's estimate (module docs): one row of
    /// the rows and BLOB bytes on its first [`SMALL_TABLE_SLOTS`] slots,
    /// the last of those slots that holds a row (NULL for none), and 1 if
    /// a row lies beyond them, else 0; all BIGINT.
    pub fn small_table_sql(&self, places: RowPlaces) -> String {
        // The row's DB_KEY number (see `DbKeyLayout::number`), a byte at a
        // time: the top byte of the record number, then its low 32 bits.
        let byte = |n: u32| format!("ASCII_VAL(SUBSTRING(a.RDB$DB_KEY FROM {n} FOR 1))");
        let (top, low) = match places.layout {
            DbKeyLayout::LittleEndian => (4, [8, 7, 6, 5]),
            DbKeyLayout::BigEndian => (1, [5, 6, 7, 8]),
        };
        let number = format!(
            "({} * 4294967296 + {} * 16777216 + {} * 65536 + {} * 256 + {})",
            byte(top),
            byte(low[0]),
            byte(low[1]),
            byte(low[2]),
            byte(low[3])
        );
        let table = quote_identifier(&self.name);
        let end = self.db_key(SMALL_TABLE_SLOTS);
        // The check for rows beyond stays out of the count: a subquery of
        // the same table inside the aggregate is refused.
        format!(
            "SELECT c.N, c.B, c.L, \
             CAST(IIF(EXISTS(SELECT 1 FROM {table} b WHERE b.RDB$DB_KEY >= {end}), 1, 0) \
             AS BIGINT) \
             FROM (SELECT COUNT(*) AS N, {} AS B, \
             CAST(MAX(({number} - 1) / {}) AS BIGINT) AS L \
             FROM {table} a WHERE a.RDB$DB_KEY < {end}) c",
            self.blob_bytes_sql(),
            places.records_per_page
        )
    }

    /// The sum of the BLOB columns' bytes, BIGINT (0 without any).
    fn blob_bytes_sql(&self) -> String {
        let blobs: Vec<String> = self
            .blob_columns()
            .into_iter()
            .map(|i| {
                format!(
                    "COALESCE(OCTET_LENGTH({}), 0)",
                    quote_identifier(&self.columns[i])
                )
            })
            .collect();
        if blobs.is_empty() {
            "CAST(0 AS BIGINT)".to_string()
        } else {
            format!("CAST(COALESCE(SUM({}), 0) AS BIGINT)", blobs.join(" + "))
        }
    }

    /// The query that counts `sample`: a row per range (one for a whole
    /// count) of its rows and its BLOB columns' bytes (0 without any).
    pub fn sample_sql(&self, sample: &Sample) -> String {
        let bytes = self.blob_bytes_sql();
        let count = format!(
            "SELECT COUNT(*), {bytes} FROM {}",
            quote_identifier(&self.name)
        );
        if sample.is_whole() {
            return count;
        }
        sample
            .ranges
            .iter()
            .map(|&(first, end)| {
                format!(
                    "{count} WHERE RDB$DB_KEY >= {} AND RDB$DB_KEY < {}",
                    self.db_key(first),
                    self.db_key(end)
                )
            })
            .collect::<Vec<_>>()
            .join("\nUNION ALL ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{blr, Column, Table};
    use crate::planner::{Plan, PlanOptions};

    fn table_plan(columns: &[(&str, i16)]) -> TablePlan {
        let table = Table {
            relation_id: 130,
            name: "Docs".into(),
            columns: columns
                .iter()
                .map(|&(name, field_type)| Column {
                    name: name.into(),
                    field_type,
                    ..Column::default()
                })
                .collect(),
            computed: Vec::new(),
            pointer_pages: 3,
            readable_by_user: false,
        };
        Plan::new(&[table], PlanOptions::default()).tables.remove(0)
    }

    #[test]
    fn a_sample_counts_each_range_apart_with_its_blob_bytes() {
        let plan = table_plan(&[("ID", blr::INTEGER), ("Body", blr::BLOB)]);
        assert_eq!(plan.blob_columns(), [1]);
        let whole = plan.sample_sql(&Sample::new(10));
        assert_eq!(
            whole,
            "SELECT COUNT(*), CAST(COALESCE(SUM(COALESCE(OCTET_LENGTH(\"Body\"), 0)), 0) \
             AS BIGINT) FROM \"Docs\""
        );
        let sampled = plan.sample_sql(&Sample::new(3 * 1632));
        let branches: Vec<&str> = sampled.split("\nUNION ALL ").collect();
        assert_eq!(branches.len() as u64, SAMPLE_RANGES);
        // The first range, slots 149 to 157 of the first pointer page.
        assert!(
            branches[0].ends_with(
                "WHERE RDB$DB_KEY >= MAKE_DBKEY(130, 0, 149, 0) \
                 AND RDB$DB_KEY < MAKE_DBKEY(130, 0, 157, 0)"
            ),
            "{sampled}"
        );
        let plain = table_plan(&[("ID", blr::INTEGER)]);
        assert!(plain.blob_columns().is_empty());
        assert!(plain
            .sample_sql(&Sample::new(10))
            .starts_with("SELECT COUNT(*), CAST(0 AS BIGINT) FROM"));
    }

    /// A table whose rows end at slot `end`: the probes it answers.
    fn search(from: u64, to: u64, end: u64) -> (Option<u64>, usize) {
        let mut rounds = 0;
        let found = used_slots_end(from, to, |slots| {
            rounds += 1;
            assert!(slots.windows(2).all(|w| w[0] < w[1]), "{slots:?}");
            assert!(slots.len() as u64 <= PROBES + 1);
            Ok::<_, ()>(slots.iter().filter(|&&s| s < end).count())
        });
        (found.unwrap(), rounds)
    }

    #[test]
    fn the_search_finds_where_rows_end_in_few_rounds() {
        for end in [1, 2, 3, 40, 41, 800, 1631, 1632] {
            assert_eq!(search(0, 1632, end), (Some(end), 2), "{end}");
        }
        // In the last of 3 pointer pages.
        assert_eq!(search(3248, 4872, 3248 + 999).0, Some(3248 + 999));
        // None from there on.
        assert_eq!(search(3248, 4872, 3248), (None, 1));
        assert_eq!(search(0, 1632, 0), (None, 1));
        // 6,544 slots a pointer page at 32 KiB pages: three rounds.
        assert_eq!(search(0, 6544, 6543), (Some(6543), 3));
        // A range of one slot.
        assert_eq!(search(7, 8, 8), (Some(8), 1));
    }

    #[test]
    fn a_small_table_is_counted_whole() {
        let sample = Sample::new(128);
        assert!(sample.is_whole());
        assert_eq!(sample.sampled_pages(), 128);
        let e = Estimate::from_sample(
            &sample,
            Counts {
                rows: 3000,
                blob_bytes: None,
            },
            8192,
        );
        assert_eq!(e.rows, Some(3000));
        assert_eq!(e.basis, Basis::Counted);
        assert_eq!(e.bytes(), Some(128 * 8192));
    }

    #[test]
    fn ranges_are_spread_apart_and_inside_the_used_slots() {
        for used in [129, 200, 1000, 1632 * 3 + 7, 10_000_000] {
            let sample = Sample::new(used);
            assert_eq!(sample.ranges.len() as u64, SAMPLE_RANGES);
            assert_eq!(sample.sampled_pages(), SAMPLE_RANGES * RANGE_PAGES);
            let mut last_end = 0;
            for &(first, end) in &sample.ranges {
                assert_eq!(end - first, RANGE_PAGES);
                assert!(first >= last_end, "{used}: {:?}", sample.ranges);
                assert!(end <= used);
                last_end = end;
            }
        }
        // The first range near the start, the last near the end.
        let sample = Sample::new(16_000);
        assert_eq!(sample.ranges[0], (496, 504));
        assert_eq!(sample.ranges[15], (15_496, 15_504));
    }

    #[test]
    fn sampled_counts_scale_by_the_used_slots() {
        // 128 pages sampled of 13,056 (8 pointer pages at 8 KiB): 25
        // rows a page.
        let sample = Sample::new(8 * 1632);
        let e = Estimate::from_sample(
            &sample,
            Counts {
                rows: 3200,
                blob_bytes: Some(1_000_000),
            },
            8192,
        );
        assert_eq!(e.basis, Basis::Sampled);
        assert_eq!(e.rows, Some(326_400));
        assert_eq!(e.blob_bytes, Some(102_000_000));
        assert_eq!(e.data_pages, Some(13_056));
        assert_eq!(e.sampled_pages, 128);
        assert_eq!(e.bytes(), Some(13_056 * 8192));
    }

    #[test]
    fn scaling_rounds_and_never_divides_by_zero() {
        assert_eq!(scaled(1, 3, 2), 2);
        assert_eq!(scaled(1, 1, 3), 0);
        assert_eq!(scaled(5, 0, 0), 0);
        assert_eq!(scaled(u64::MAX / 2, 4, 4), u64::MAX / 2);
    }

    #[test]
    fn before_firebird_5_only_a_small_table_is_counted() {
        let e = Estimate::without_page_ranges(8192, None);
        assert_eq!((e.rows, e.bytes()), (None, None));
        assert_eq!(e.basis, Basis::Unknown);
        let counted = Counts {
            rows: 10,
            blob_bytes: None,
        };
        let e = Estimate::without_page_ranges(8192, Some(counted));
        assert_eq!(
            (e.rows, e.bytes(), e.basis),
            (Some(10), None, Basis::Counted)
        );
    }

    #[test]
    fn an_empty_table_has_no_blob_bytes() {
        let e = Estimate::from_sample(
            &Sample::new(0),
            Counts {
                rows: 0,
                blob_bytes: Some(0),
            },
            4096,
        );
        assert_eq!((e.rows, e.blob_bytes, e.bytes()), (Some(0), None, Some(0)));
    }
}
