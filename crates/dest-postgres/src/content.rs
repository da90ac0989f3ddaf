//! `--verify` of a PostgreSQL target: its content, not only its counts.
//!
//! Both sides are digested from the same bytes: PostgreSQL's binary COPY
//! form of each value. Firebird's side is the rows as they were sent, at
//! the run's snapshot (hashed while loading, from the very buffer that
//! goes out: no second read of Firebird, and nothing of the load slowed
//! but the hashing); PostgreSQL's side is what `COPY (SELECT ...) TO
//! STDOUT (FORMAT binary)` gives back after the publish. The binary form
//! is canonical for every type the load makes (numeric's digit groups and
//! display scale as PostgreSQL normalises them, floats bit for bit with
//! -0 and NaN, text and bytea as bytes, char(n) padded, time zones as
//! offsets), except one bit: an array's has-NULLs flag, which PostgreSQL
//! sets from its elements; it is left out of the hash.
//!
//! Each row yields its key (the primary key's columns, or every column
//! for a table without one) and one 64-bit hash per column, of the key
//! and the value, so a value moved to another row counts. Each side's
//! rows are sorted by key (bytes in an order of fbunload's own: no
//! collation of either database takes part) and Firebird's cut into
//! ranges of [`RANGE_ROWS`] rows; PostgreSQL's rows fall into the range
//! of their key. A range differs where its rows or a column's sum of
//! hashes differ, and is named by its first and last key.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::io::{BufRead, BufReader, Read};
use std::sync::Arc;

use arrow_array::RecordBatch;
use bytes::BytesMut;
use fbunload_exec::{ExecError, UnitWriter};

use crate::types::{self, Encoding, PgColumn};
use crate::{ident, pg_error, pg_name, PostgresDestination};

/// Rows per compared range.
pub const RANGE_ROWS: usize = 1000;

/// The rows of one table (or of one unit of it), digested.
#[derive(Debug, Default)]
pub struct Digests {
    /// Indices of the key's columns (all columns where the table has no
    /// primary key).
    key: Vec<usize>,
    /// Whether the table has a primary key: each value's hash then
    /// takes in the row's key (without one, the row is its own key).
    keyed: bool,
    /// How each column's values are hashed.
    canon: Vec<Canon>,
    /// The rows' sortable keys, one after the other; `ends` says where
    /// each row's ends.
    keys: Vec<u8>,
    ends: Vec<usize>,
    /// One hash per column per row.
    hashes: Vec<u64>,
}

impl Digests {
    pub fn new(columns: &[PgColumn], key: &[usize]) -> Self {
        let key = if key.is_empty() {
            (0..columns.len()).collect()
        } else {
            key.to_vec()
        };
        Digests {
            keyed: key.len() < columns.len() || columns.is_empty(),
            key,
            canon: columns.iter().map(Canon::of).collect(),
            ..Digests::default()
        }
    }

    pub fn rows(&self) -> usize {
        self.ends.len()
    }

    fn columns(&self) -> usize {
        self.canon.len()
    }

    fn key_of(&self, row: usize) -> &[u8] {
        let start = if row == 0 { 0 } else { self.ends[row - 1] };
        &self.keys[start..self.ends[row]]
    }

    /// Digests binary COPY tuples (no header; a trailer ends them):
    /// `encodings` are the columns' (for the keys' order).
    pub fn add_rows(&mut self, mut rows: &[u8], columns: &[PgColumn]) -> Result<(), String> {
        let broken = || "a binary COPY row cut short".to_string();
        let mut fields: Vec<Option<&[u8]>> = Vec::with_capacity(columns.len());
        while rows.len() >= 2 {
            let count = i16::from_be_bytes([rows[0], rows[1]]);
            rows = &rows[2..];
            if count < 0 {
                break;
            }
            if count as usize != columns.len() {
                return Err(format!(
                    "a row of {count} columns, where the table has {}",
                    columns.len()
                ));
            }
            fields.clear();
            for _ in 0..count {
                let len: [u8; 4] = rows.get(..4).ok_or_else(broken)?.try_into().unwrap();
                let len = i32::from_be_bytes(len);
                rows = &rows[4..];
                if len < 0 {
                    fields.push(None);
                } else {
                    let value = rows.get(..len as usize).ok_or_else(broken)?;
                    fields.push(Some(value));
                    rows = &rows[len as usize..];
                }
            }
            let start = self.keys.len();
            for &k in &self.key {
                sortable(&mut self.keys, &columns[k].encoding, fields[k]);
            }
            self.ends.push(self.keys.len());
            let key_hash = if self.keyed {
                let mut key_hasher = DefaultHasher::new();
                self.keys[start..].hash(&mut key_hasher);
                key_hasher.finish()
            } else {
                0
            };
            for (c, field) in fields.iter().enumerate() {
                let mut h = DefaultHasher::new();
                key_hash.hash(&mut h);
                c.hash(&mut h);
                match field {
                    None => h.write_u8(0),
                    Some(v) => {
                        h.write_u8(1);
                        self.canon[c].hash(v, &mut h);
                    }
                }
                self.hashes.push(h.finish());
            }
        }
        Ok(())
    }

    /// Forgets the rows, keeping how they are digested.
    fn clear_rows(&mut self) {
        self.keys.clear();
        self.ends.clear();
        self.hashes.clear();
    }

    /// Adds `other`'s rows (another unit of the same table).
    pub fn append(&mut self, other: Digests) {
        let offset = self.keys.len();
        self.keys.extend_from_slice(&other.keys);
        self.ends.extend(other.ends.iter().map(|e| e + offset));
        self.hashes.extend_from_slice(&other.hashes);
    }

    /// The rows' indices in key order.
    fn sorted(&self) -> Vec<usize> {
        let mut order: Vec<usize> = (0..self.rows()).collect();
        order.sort_unstable_by(|&a, &b| self.key_of(a).cmp(self.key_of(b)));
        order
    }
}

/// Where PostgreSQL's binary form of a column's values has more than one
/// spelling of one value, the part that does not count is left out.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Canon {
    Bytes,
    /// char(n): PostgreSQL pads to n characters whatever it is given
    /// (and no two values differ in trailing spaces): they are left out.
    Char,
    /// numeric: NaN and the infinities by their sign word alone
    /// (PostgreSQL sends a display scale and weight read from bits of
    /// its short header that mean nothing for them).
    Numeric,
    /// An array: its has-NULLs flag, which PostgreSQL sets from the
    /// elements, is left out; its elements as the element type's.
    Array(Element),
}

/// How an array's elements are hashed.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Element {
    Bytes,
    Char,
    Numeric,
}

impl Canon {
    fn of(column: &PgColumn) -> Canon {
        let char_type = column.sql_type.starts_with("char(");
        match &column.encoding {
            Encoding::Array { element, .. } => Canon::Array(match **element {
                Encoding::Text if char_type => Element::Char,
                Encoding::Decimal | Encoding::DecimalText => Element::Numeric,
                _ => Element::Bytes,
            }),
            Encoding::Text if char_type => Canon::Char,
            Encoding::Decimal | Encoding::DecimalText => Canon::Numeric,
            _ => Canon::Bytes,
        }
    }

    fn hash(self, value: &[u8], h: &mut DefaultHasher) {
        match self {
            Canon::Bytes => h.write(value),
            Canon::Char => h.write(unpadded(value)),
            Canon::Numeric => h.write(numeric(value)),
            Canon::Array(element) => {
                if value.len() < 12 {
                    h.write(value);
                    return;
                }
                let dims = i32::from_be_bytes(value[..4].try_into().unwrap()).max(0) as usize;
                let header = (12 + 8 * dims).min(value.len());
                h.write(&value[..4]);
                h.write(&value[8..header]);
                if element == Element::Bytes {
                    h.write(&value[header..]);
                    return;
                }
                let mut rest = &value[header..];
                while rest.len() >= 4 {
                    let len = i32::from_be_bytes(rest[..4].try_into().unwrap());
                    rest = &rest[4..];
                    if len < 0 {
                        h.write_i32(-1);
                        continue;
                    }
                    let whole = &rest[..(len as usize).min(rest.len())];
                    let kept = match element {
                        Element::Char => unpadded(whole),
                        _ => numeric(whole),
                    };
                    h.write_i32(kept.len() as i32);
                    h.write(kept);
                    rest = &rest[whole.len()..];
                }
            }
        }
    }
}

/// A char(n) value without its padding.
fn unpadded(value: &[u8]) -> &[u8] {
    let spaces = value.iter().rev().take_while(|b| **b == b' ').count();
    &value[..value.len() - spaces]
}

/// A numeric's binary form; of NaN and the infinities, their sign word.
fn numeric(value: &[u8]) -> &[u8] {
    match value.get(4..6) {
        Some([0xc0 | 0xd0 | 0xf0, 0]) => &value[4..6],
        _ => value,
    }
}

/// One range whose rows or columns differ.
#[derive(Debug, PartialEq)]
pub struct Difference {
    /// The first and last key of the range (of either side).
    pub first: String,
    pub last: String,
    pub firebird_rows: u64,
    pub postgres_rows: u64,
    /// The Firebird names of the columns whose values differ.
    pub columns: Vec<String>,
}

impl std::fmt::Display for Difference {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "from {} to {}: ", self.first, self.last)?;
        if self.firebird_rows != self.postgres_rows {
            write!(
                f,
                "{} rows in Firebird, {} in PostgreSQL",
                self.firebird_rows, self.postgres_rows
            )?;
            if !self.columns.is_empty() {
                f.write_str(", ")?;
            }
        }
        match self.columns.len() {
            0 => Ok(()),
            1 => write!(f, "column {} differs", self.columns[0]),
            _ => write!(f, "columns {} differ", self.columns.join(", ")),
        }
    }
}

struct Range {
    rows: u64,
    sums: Vec<u64>,
    first: Option<Vec<u8>>,
    last: Option<Vec<u8>>,
}

impl Range {
    fn new(columns: usize) -> Self {
        Range {
            rows: 0,
            sums: vec![0; columns],
            first: None,
            last: None,
        }
    }

    fn add(&mut self, digests: &Digests, row: usize) {
        self.rows += 1;
        let n = digests.columns();
        for (sum, h) in self
            .sums
            .iter_mut()
            .zip(&digests.hashes[row * n..(row + 1) * n])
        {
            *sum = sum.wrapping_add(*h);
        }
        let key = digests.key_of(row);
        if self.first.as_deref().is_none_or(|f| key < f) {
            self.first = Some(key.to_vec());
        }
        if self.last.as_deref().is_none_or(|l| key > l) {
            self.last = Some(key.to_vec());
        }
    }
}

/// Firebird's rows against PostgreSQL's, range by range (module docs):
/// the ranges that differ, in key order.
pub fn compare(firebird: &Digests, postgres: &Digests, columns: &[PgColumn]) -> Vec<Difference> {
    let mut ranges = Ranges::of(firebird);
    ranges.add(postgres);
    ranges.differences(firebird, columns)
}

/// Firebird's rows cut into ranges, and PostgreSQL's added to them as
/// they come: PostgreSQL's side is never held whole.
pub struct Ranges {
    /// Each range's last key: a range ends after [`RANGE_ROWS`] rows,
    /// where the next row's key differs (a table without a key may
    /// repeat rows).
    bounds: Vec<Vec<u8>>,
    firebird: Vec<Range>,
    postgres: Vec<Range>,
}

impl Ranges {
    pub fn of(firebird: &Digests) -> Ranges {
        let n = firebird.columns();
        let ours = firebird.sorted();
        let mut bounds = Vec::new();
        let mut ranges: Vec<Range> = Vec::new();
        let mut in_range = 0;
        for (i, &row) in ours.iter().enumerate() {
            if ranges.is_empty() || in_range >= RANGE_ROWS {
                ranges.push(Range::new(n));
                in_range = 0;
            }
            ranges.last_mut().unwrap().add(firebird, row);
            in_range += 1;
            let ends = match ours.get(i + 1) {
                None => true,
                Some(&next) => {
                    in_range >= RANGE_ROWS && firebird.key_of(next) != firebird.key_of(row)
                }
            };
            if ends {
                bounds.push(firebird.key_of(row).to_vec());
            } else if in_range >= RANGE_ROWS {
                // Same key as the next row: the range goes on.
                in_range = RANGE_ROWS - 1;
            }
        }
        if ranges.is_empty() {
            ranges.push(Range::new(n));
        }
        Ranges {
            bounds,
            postgres: (0..ranges.len()).map(|_| Range::new(n)).collect(),
            firebird: ranges,
        }
    }

    /// PostgreSQL's rows of `postgres`, each into the range of its key.
    pub fn add(&mut self, postgres: &Digests) {
        let last = self.postgres.len() - 1;
        for row in 0..postgres.rows() {
            let key = postgres.key_of(row);
            let at = self
                .bounds
                .partition_point(|b| b.as_slice() < key)
                .min(last);
            self.postgres[at].add(postgres, row);
        }
    }

    /// The ranges that differ, in key order.
    pub fn differences(&self, firebird: &Digests, columns: &[PgColumn]) -> Vec<Difference> {
        let n = columns.len();
        let mut differences = Vec::new();
        for (fb, pg) in self.firebird.iter().zip(&self.postgres) {
            let differ: Vec<String> = (0..n)
                .filter(|&c| fb.sums[c] != pg.sums[c])
                .map(|c| columns[c].name.clone())
                .collect();
            if fb.rows == pg.rows && differ.is_empty() {
                continue;
            }
            let first = [&fb.first, &pg.first]
                .into_iter()
                .flatten()
                .min()
                .cloned()
                .unwrap_or_default();
            let last = [&fb.last, &pg.last]
                .into_iter()
                .flatten()
                .max()
                .cloned()
                .unwrap_or_default();
            differences.push(Difference {
                first: key_text(&first, &firebird.key, columns),
                last: key_text(&last, &firebird.key, columns),
                firebird_rows: fb.rows,
                postgres_rows: pg.rows,
                // Where rows are missing every column differs: name none.
                columns: if fb.rows == pg.rows {
                    differ
                } else {
                    Vec::new()
                },
            });
        }
        differences
    }
}

/// A unit of `--pg-verify-only`: its rows digested as a load would send
/// them, and nothing sent.
pub(crate) struct VerifyUnit<'a> {
    destination: &'a PostgresDestination,
    table: usize,
    name: String,
    columns: Arc<Vec<PgColumn>>,
    digest: Digests,
    rows: u64,
    buf: BytesMut,
}

impl<'a> VerifyUnit<'a> {
    pub(crate) fn new(
        destination: &'a PostgresDestination,
        table: usize,
        name: &str,
        columns: Arc<Vec<PgColumn>>,
        key: &[usize],
    ) -> Self {
        VerifyUnit {
            destination,
            table,
            name: name.to_string(),
            digest: Digests::new(&columns, key),
            columns,
            rows: 0,
            buf: BytesMut::new(),
        }
    }
}

impl UnitWriter for VerifyUnit<'_> {
    fn write(&mut self, batch: RecordBatch) -> Result<(), ExecError> {
        self.rows += batch.num_rows() as u64;
        let mut row = 0;
        while row < batch.num_rows() {
            self.buf.clear();
            row = types::put_rows(
                batch.columns(),
                &self.columns,
                row,
                256 << 10,
                &mut self.buf,
            )
            .map_err(|e| ExecError::table(&self.name, format!("--verify: {e}")))?;
            self.digest
                .add_rows(&self.buf, &self.columns)
                .map_err(|e| ExecError::table(&self.name, format!("--verify: {e}")))?;
        }
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<bool, ExecError> {
        let this = *self;
        Ok(this
            .destination
            .unit_done(this.table, this.rows, 0, Some(this.digest)))
    }

    fn abort(self: Box<Self>) -> Result<(), ExecError> {
        Ok(())
    }
}

/// PostgreSQL's rows of `schema`.`table` (a Firebird name), read back as
/// binary COPY, against `firebird`'s: the ranges that differ.
pub(crate) fn read_back(
    client: &mut postgres::Client,
    schema: &str,
    table: &str,
    columns: &[PgColumn],
    key: &[usize],
    firebird: &Digests,
) -> Result<Vec<Difference>, ExecError> {
    let fail = |e| pg_error(&format!("reading table {table} back for --verify"), e);
    let relation = format!("{}.{}", ident(schema), ident(&pg_name(table)));
    let present: bool = client
        .query_one(
            "SELECT pg_catalog.to_regclass($1) IS NOT NULL",
            &[&relation],
        )
        .map_err(fail)?
        .get(0);
    if !present {
        return Err(ExecError::Verify(format!(
            "table {table}: {schema}.{} is not in the target: load it (--overwrite replaces              the schema whole)",
            pg_name(table)
        )));
    }
    // As the load typed them: a table of --no-schema may hold a wider
    // type (integer loaded into bigint), whose binary form differs; so
    // may a domain. Where the types are the load's, nothing is cast.
    let types: std::collections::HashMap<String, String> = client
        .query(
            "SELECT a.attname::text, pg_catalog.format_type(a.atttypid, a.atttypmod) \
             FROM pg_catalog.pg_attribute a WHERE a.attrelid = pg_catalog.to_regclass($1) \
             AND a.attnum > 0 AND NOT a.attisdropped",
            &[&relation],
        )
        .map_err(fail)?
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    let list: Vec<String> = columns
        .iter()
        .map(|c| {
            let name = pg_name(&c.name);
            match types.get(&name) {
                Some(theirs) if *theirs == formatted(&c.sql_type) => ident(&name),
                _ => format!("{}::{}", ident(&name), c.sql_type),
            }
        })
        .collect();
    let reader = client
        .copy_out(&format!(
            "COPY (SELECT {} FROM {relation}) TO STDOUT (FORMAT binary)",
            list.join(", ")
        ))
        .map_err(fail)?;
    let mut reader = BufReader::with_capacity(1 << 20, reader);
    let broken = |e: std::io::Error| {
        ExecError::Server(format!(
            "PostgreSQL: reading table {table} back for --verify: {e}"
        ))
    };
    let mut header = [0u8; 19];
    reader.read_exact(&mut header).map_err(broken)?;
    let extension = u32::from_be_bytes(header[15..19].try_into().unwrap());
    std::io::copy(
        &mut (&mut reader).take(extension as u64),
        &mut std::io::sink(),
    )
    .map_err(broken)?;
    let mut ranges = Ranges::of(firebird);
    // A piece at a time: digested, added to its ranges, forgotten.
    let mut digests = Digests::new(columns, key);
    let mut rows = Vec::with_capacity(1 << 20);
    let mut four = [0u8; 4];
    loop {
        let mut two = [0u8; 2];
        if reader.fill_buf().map_err(broken)?.is_empty() {
            break;
        }
        reader.read_exact(&mut two).map_err(broken)?;
        rows.extend_from_slice(&two);
        let count = i16::from_be_bytes(two);
        if count < 0 {
            break;
        }
        for _ in 0..count {
            reader.read_exact(&mut four).map_err(broken)?;
            rows.extend_from_slice(&four);
            let len = i32::from_be_bytes(four);
            if len > 0 {
                let at = rows.len();
                rows.resize(at + len as usize, 0);
                reader.read_exact(&mut rows[at..]).map_err(broken)?;
            }
        }
        if rows.len() >= 1 << 20 {
            digests
                .add_rows(&rows, columns)
                .map_err(|e| ExecError::table(table, format!("--verify: {e}")))?;
            ranges.add(&digests);
            digests.clear_rows();
            rows.clear();
        }
    }
    // To its end, so the connection is ready for the next statement.
    std::io::copy(&mut reader, &mut std::io::sink()).map_err(broken)?;
    digests
        .add_rows(&rows, columns)
        .map_err(|e| ExecError::table(table, format!("--verify: {e}")))?;
    ranges.add(&digests);
    Ok(ranges.differences(firebird, columns))
}

/// A type as the load spells it (`char(5)`, `varchar(9)[]`, `time`), as
/// PostgreSQL's `format_type` spells it (`character(5)`, ...).
fn formatted(sql_type: &str) -> String {
    if let Some(element) = sql_type.strip_suffix("[]") {
        return format!("{}[]", formatted(element));
    }
    if let Some(n) = sql_type.strip_prefix("char(") {
        return format!("character({n}");
    }
    if let Some(n) = sql_type.strip_prefix("varchar(") {
        return format!("character varying({n}");
    }
    match sql_type {
        "time" => "time without time zone".into(),
        "timestamp" => "timestamp without time zone".into(),
        other => other.to_string(),
    }
}

/// Whether values of `encoding` are fixed-width big-endian signed
/// integers (of `width` bytes), whose order a flipped sign bit keeps.
fn signed_width(encoding: &Encoding) -> Option<usize> {
    match encoding {
        Encoding::Int16 => Some(2),
        Encoding::Int32 | Encoding::Date => Some(4),
        Encoding::Int64 | Encoding::Time | Encoding::Timestamp | Encoding::TimestampTz => Some(8),
        _ => None,
    }
}

/// Appends a key column's value in an order-keeping form: a NULL before
/// every value; integers, dates and times by value; any other value by
/// its bytes, escaped so that a shorter value sorts first.
fn sortable(out: &mut Vec<u8>, encoding: &Encoding, value: Option<&[u8]>) {
    let Some(value) = value else {
        out.push(0);
        return;
    };
    out.push(1);
    if signed_width(encoding) == Some(value.len()) {
        out.push(value[0] ^ 0x80);
        out.extend_from_slice(&value[1..]);
        return;
    }
    for &b in value {
        out.push(b);
        if b == 0 {
            out.push(0xff);
        }
    }
    out.extend_from_slice(&[0, 0]);
}

/// A key as the message shows it: `ID 7` or `(PO_NUMBER, ITEM) ('V1', 2)`.
fn key_text(key: &[u8], columns_of_key: &[usize], columns: &[PgColumn]) -> String {
    let mut rest = key;
    let mut values = Vec::new();
    for &c in columns_of_key {
        let (value, after) = value_text(rest, &columns[c].encoding);
        values.push(value);
        rest = after;
    }
    let names: Vec<&str> = columns_of_key
        .iter()
        .map(|&c| columns[c].name.as_str())
        .collect();
    if names.len() == 1 {
        format!("{} {}", names[0], values[0])
    } else {
        format!("({}) = ({})", names.join(", "), values.join(", "))
    }
}

/// One value of a sortable key, shown, and the bytes after it.
fn value_text<'a>(key: &'a [u8], encoding: &Encoding) -> (String, &'a [u8]) {
    match key.split_first() {
        None => ("?".into(), key),
        Some((0, rest)) => ("NULL".into(), rest),
        Some((_, rest)) => {
            if let Some(width) = signed_width(encoding).filter(|w| rest.len() >= *w) {
                let mut bytes = rest[..width].to_vec();
                bytes[0] ^= 0x80;
                let mut wide = [if bytes[0] & 0x80 != 0 { 0xff } else { 0 }; 8];
                wide[8 - width..].copy_from_slice(&bytes);
                let v = i64::from_be_bytes(wide);
                let text = match encoding {
                    Encoding::Date => date_text(v),
                    Encoding::Time => time_text(v),
                    Encoding::Timestamp | Encoding::TimestampTz => {
                        let day = v.div_euclid(86_400_000_000);
                        format!(
                            "'{} {}'",
                            date_text(day).trim_matches('\''),
                            time_text(v.rem_euclid(86_400_000_000)).trim_matches('\'')
                        )
                    }
                    _ => v.to_string(),
                };
                return (text, &rest[width..]);
            }
            let mut value = Vec::new();
            let mut i = 0;
            while i < rest.len() {
                if rest[i] == 0 {
                    if rest.get(i + 1) == Some(&0xff) {
                        value.push(0);
                        i += 2;
                        continue;
                    }
                    i += 2;
                    break;
                }
                value.push(rest[i]);
                i += 1;
            }
            let after = &rest[i.min(rest.len())..];
            let text = match (encoding, std::str::from_utf8(&value)) {
                (Encoding::Decimal | Encoding::DecimalText, _)
                    if numeric_text(&value).is_some() =>
                {
                    numeric_text(&value).unwrap_or_default()
                }
                (Encoding::Text, Ok(text)) => {
                    let shown: String = text.chars().take(40).collect();
                    let more = if shown.len() < text.len() { "…" } else { "" };
                    format!("'{}{more}'", shown.replace('\'', "''"))
                }
                _ => {
                    let hex: String = value.iter().take(32).map(|b| format!("{b:02x}")).collect();
                    let more = if value.len() > 32 { "…" } else { "" };
                    format!("0x{hex}{more}")
                }
            };
            (text, after)
        }
    }
}

/// A numeric's binary form as its text (`-12.50`).
fn numeric_text(v: &[u8]) -> Option<String> {
    let word =
        |i: usize| -> Option<u16> { Some(u16::from_be_bytes(v.get(i..i + 2)?.try_into().ok()?)) };
    let (ndigits, weight, sign, dscale) = (
        word(0)? as usize,
        word(2)? as i16 as i64,
        word(4)?,
        word(6)? as usize,
    );
    match sign {
        0xc000 => return Some("NaN".into()),
        0xd000 => return Some("Infinity".into()),
        0xf000 => return Some("-Infinity".into()),
        _ => {}
    }
    let group = |i: i64| -> Option<u16> {
        if i < 0 || i as usize >= ndigits {
            Some(0)
        } else {
            word(8 + 2 * i as usize)
        }
    };
    let mut text = if sign == 0x4000 {
        "-".to_string()
    } else {
        String::new()
    };
    if weight < 0 {
        text.push('0');
    } else {
        for i in 0..=weight {
            let g = group(i)?;
            if i == 0 {
                text += &g.to_string();
            } else {
                text += &format!("{g:04}");
            }
        }
    }
    if dscale > 0 {
        let mut fraction = String::new();
        let mut i = weight + 1;
        while fraction.len() < dscale {
            fraction += &format!("{:04}", group(i)?);
            i += 1;
        }
        fraction.truncate(dscale);
        text = format!("{text}.{fraction}");
    }
    Some(text)
}

/// Days from 2000-01-01 as `'YYYY-MM-DD'` (the proleptic Gregorian
/// calendar, as both databases count).
fn date_text(days: i64) -> String {
    // Days from 0000-03-01, in 400-year eras of 146097 days.
    let z = days + 730_425;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("'{year:04}-{month:02}-{day:02}'")
}

/// Microseconds of the day as `'HH:MM:SS[.ffffff]'`.
fn time_text(micros: i64) -> String {
    let (s, us) = (micros / 1_000_000, micros % 1_000_000);
    let hms = format!("{:02}:{:02}:{:02}", s / 3600, s / 60 % 60, s % 60);
    if us == 0 {
        format!("'{hms}'")
    } else {
        format!("'{hms}.{us:06}'")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bytes::BufMut;

    fn column(name: &str, encoding: Encoding) -> PgColumn {
        PgColumn {
            name: name.into(),
            sql_type: String::new(),
            encoding,
        }
    }

    /// Rows of (integer key, optional text) as binary COPY tuples.
    fn rows(values: &[(i32, Option<&str>)]) -> Vec<u8> {
        let mut out = bytes::BytesMut::new();
        for (id, text) in values {
            out.put_i16(2);
            out.put_i32(4);
            out.put_i32(*id);
            match text {
                None => out.put_i32(-1),
                Some(t) => {
                    out.put_i32(t.len() as i32);
                    out.put_slice(t.as_bytes());
                }
            }
        }
        out.put_i16(-1);
        out.to_vec()
    }

    fn digests(values: &[(i32, Option<&str>)], columns: &[PgColumn]) -> Digests {
        let mut d = Digests::new(columns, &[0]);
        d.add_rows(&rows(values), columns).unwrap();
        d
    }

    #[test]
    fn ranges_that_differ_are_named_by_their_keys_and_columns() {
        let columns = [
            column("ID", Encoding::Int32),
            column("NAME", Encoding::Text),
        ];
        let many: Vec<(i32, Option<&str>)> = (-1500..1500).map(|i| (i, Some("x"))).collect();
        let fb = digests(&many, &columns);
        let same = digests(&many.iter().rev().cloned().collect::<Vec<_>>(), &columns);
        assert_eq!(compare(&fb, &same, &columns), vec![]);
        // NULL for '' in the second range, which runs from -500 to 499.
        let mut changed = many.clone();
        changed[1700].1 = None;
        let d = compare(&fb, &digests(&changed, &columns), &columns);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!(
            d[0].to_string(),
            "from ID -500 to ID 499: column NAME differs"
        );
        // Values swapped between rows count.
        let mut swapped = many.clone();
        swapped[10].1 = Some("y");
        swapped[11].1 = Some("y");
        let mut other = many.clone();
        other[10].1 = Some("y");
        other[12].1 = Some("y");
        let d = compare(
            &digests(&swapped, &columns),
            &digests(&other, &columns),
            &columns,
        );
        assert_eq!(d.len(), 1, "{d:?}");
        // A row missing: that range only.
        let mut fewer = many.clone();
        fewer.remove(2999);
        let d = compare(&fb, &digests(&fewer, &columns), &columns);
        assert_eq!(
            d[0].to_string(),
            "from ID 500 to ID 1499: 1000 rows in Firebird, 999 in PostgreSQL"
        );
        // Rows PostgreSQL has beyond Firebird's last key.
        let mut more = many.clone();
        more.push((9999, Some("x")));
        let d = compare(&fb, &digests(&more, &columns), &columns);
        assert_eq!(d[0].last, "ID 9999");
    }

    #[test]
    fn keys_sort_by_value_and_show_as_values() {
        let columns = [
            column("D", Encoding::Date),
            column("T", Encoding::Text),
            column("N", Encoding::Int64),
        ];
        let mut a = Vec::new();
        sortable(&mut a, &Encoding::Int64, Some(&(-5i64).to_be_bytes()));
        let mut b = Vec::new();
        sortable(&mut b, &Encoding::Int64, Some(&3i64.to_be_bytes()));
        assert!(a < b);
        let (mut short, mut long) = (Vec::new(), Vec::new());
        sortable(&mut short, &Encoding::Text, Some(b"ab"));
        sortable(&mut long, &Encoding::Text, Some(b"ab\0"));
        assert!(short < long);
        let mut key = Vec::new();
        sortable(&mut key, &Encoding::Date, Some(&(-1i32).to_be_bytes()));
        sortable(&mut key, &Encoding::Text, Some(b"it's"));
        sortable(&mut key, &Encoding::Int64, None);
        assert_eq!(
            key_text(&key, &[0, 1, 2], &columns),
            "(D, T, N) = ('1999-12-31', 'it''s', NULL)"
        );
        assert_eq!(date_text(0), "'2000-01-01'");
        assert_eq!(date_text(-730_485), "'0000-01-01'");
        assert_eq!(date_text(9_190), "'2025-02-28'");
        assert_eq!(time_text(3_723_000_001), "'01:02:03.000001'");
        assert_eq!(formatted("char(5)[]"), "character(5)[]");
        for (negative, digits, scale, text) in [
            (false, "150", 2, "1.50"),
            (true, "12345678", 4, "-1234.5678"),
            (false, "5", 6, "0.000005"),
            (false, "0", 0, "0"),
            (false, "100000000", 0, "100000000"),
        ] {
            let mut out = bytes::BytesMut::new();
            types::put_numeric(&mut out, negative, digits, scale).unwrap();
            assert_eq!(numeric_text(&out).as_deref(), Some(text));
        }
        assert_eq!(formatted("varchar(9)"), "character varying(9)");
        assert_eq!(formatted("numeric(10,2)"), "numeric(10,2)");
        assert_eq!(formatted("timestamp"), "timestamp without time zone");
    }
}
