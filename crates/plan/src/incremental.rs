//! Incremental unloads (`--since`): which rows of a table changed since
//! an earlier run's snapshot, and which tables must be read whole.
//!
//! Every record version carries the number of the transaction that wrote
//! it (`RDB$RECORD_VERSION`). A row whose version, as the new snapshot
//! sees it, was written by a transaction that committed at or before the
//! earlier snapshot is the row that snapshot saw (a newer committed
//! version would be seen instead); every other row is new or changed.
//!
//! Which transactions committed after the earlier snapshot cannot be
//! asked of the engine: commit numbers (`RDB$GET_TRANSACTION_CN`, and
//! snapshot numbers) live in the engine's shared memory, and start again
//! from 1 whenever the database is next opened (a restarted server, or
//! the last attachment gone), while transaction numbers are on disk; and
//! within one lifetime the engine answers 1 ("prehistoric") for every
//! transaction below the oldest interesting and oldest snapshot
//! transactions of the moment (Firebird's
//! `TipCache::updateOldestTransaction`), whenever it committed. Both
//! would make a change committed after the earlier snapshot look older.
//! So the earlier run keeps a bound in transaction numbers: the oldest
//! interesting transaction its snapshot's transaction read from the header
//! page when it started (`isc_info_tra_oldest_interesting`), before its
//! snapshot was taken. No transaction below it was still uncommitted then
//! (the engine's scans that move it, a sweep's included, stop at the
//! first transaction active, in limbo or dead), so none of them can have
//! committed after the snapshot. A row is read as changed when its
//! version's transaction is at or above that bound: a superset of the
//! changed rows (those written by transactions that were running when the
//! earlier snapshot was taken, or committed just before it), never fewer.
//!
//! Rows deleted since are the previous run's keys the new snapshot lacks.
//! A run that keeps keys reads, with each table's rows, their DB_KEY, and
//! keeps each key with the place of its row ([`RowPlaces`]). Reading every
//! key again would cost a second pass over every row fetched from the
//! engine (about 60% of a full unload's fetch); counting costs far less.
//! So an incremental run reads, per unit of a table: the changed rows with
//! their keys and places, and how many rows of the unit are unchanged
//! ([`Role::UnchangedCount`]). A row the new snapshot shows unchanged is
//! the one the previous run read, where it read it: Firebird does not move
//! a record while it lives (a backup and restore does, and changes the
//! GUID). So each unchanged row of a unit is one of the previous run's
//! rows there whose key was not read again and whose place no changed row
//! took; when the count equals the number of those, none of them is gone.
//! A unit whose count falls short (or, should places ever move, exceeds
//! it) has its unchanged keys read ([`Role::UnchangedKeys`]), which tells
//! exactly; a table whose rows were deleted all over reads its keys, as
//! it would without the counts. A table without a primary key, one the
//! earlier run did not have, or whose columns changed, is read whole
//! ([`TableMode::Whole`]).

use std::collections::HashMap;

use fbunload_client::{ClientError, Transaction};

use crate::catalog::{query, text};

/// An earlier run that an incremental one starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// Its snapshot number.
    pub snapshot_number: u64,
    /// The oldest interesting transaction its snapshot's transaction saw
    /// (module docs).
    pub oldest_interesting: u64,
    /// Its snapshot transaction's own number: a database whose numbers
    /// are below it now was restored or replaced since.
    pub transaction: u64,
    /// The database's GUID then.
    pub database_guid: String,
    /// Its tables, as its manifest lists them.
    pub tables: Vec<PreviousTable>,
}

/// A table of the earlier run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviousTable {
    pub name: String,
    /// `(name, declared type, Arrow type)` of each column, in order.
    pub columns: Vec<(String, String, String)>,
    /// Its primary key's columns; empty when it had none.
    pub primary_key: Vec<String>,
    /// Whether its keys are there to compare with, checked.
    pub keys: bool,
}

/// What an incremental plan asks for: the change of each table since
/// `since`, or (`since` `None`) a full unload that keeps the keys for the
/// next run (`--keep-keys`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Incremental {
    pub since: Option<Since>,
}

/// How an entry of an incremental plan is read and written.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub enum Role {
    /// An ordinary entry: the table, view or query whole.
    #[default]
    Whole,
    /// A table read whole in an incremental run, and why.
    WholeBecause(String),
    /// A table's rows changed since the earlier run (`T.upserts.<ext>`).
    Upserts,
    /// Per unit of table `of` (an index into the plan's tables), how many
    /// of its rows are unchanged since the earlier run: one `COUNT(*)`
    /// row (module docs, "Deletes").
    UnchangedCount { of: usize },
    /// The keys and record numbers of the unchanged rows of table `of`,
    /// read only for units whose count says a row is gone: it has no
    /// planned units, the destination asks for them.
    UnchangedKeys { of: usize },
}

impl Role {
    /// Whether the entry is a helper read of another table's, which the
    /// manifest and the summary do not list.
    pub fn is_helper(&self) -> bool {
        matches!(
            self,
            Role::UnchangedCount { .. } | Role::UnchangedKeys { .. }
        )
    }
}

/// The pseudo-column a table that keeps its keys also reads, last.
pub const DB_KEY_COLUMN: &str = "RDB$DB_KEY";

/// How this server lays out the bytes of a DB_KEY (Firebird's
/// `RecordNumber::Packed`, in the server's byte order): a 16-bit relation
/// id, a reserved byte and the top byte of a 40-bit record number, then
/// its low 32 bits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum DbKeyLayout {
    LittleEndian,
    BigEndian,
}

impl DbKeyLayout {
    /// The layout, told by where relation id 1 lies in `MAKE_DBKEY(1, 0)`.
    pub fn from_probe(db_key: &[u8]) -> Option<DbKeyLayout> {
        match db_key {
            [1, 0, _, _, _, _, _, _] => Some(DbKeyLayout::LittleEndian),
            [_, _, 0, 1, _, _, _, _] => Some(DbKeyLayout::BigEndian),
            _ => None,
        }
    }

    /// The number a DB_KEY holds: its record number plus one, as
    /// `MAKE_DBKEY` makes it; `None` for anything but 8 bytes.
    pub fn number(self, db_key: &[u8]) -> Option<u64> {
        let bytes: [u8; 8] = db_key.try_into().ok()?;
        let (up, low) = match self {
            DbKeyLayout::LittleEndian => (
                bytes[3],
                u32::from_le_bytes(bytes[4..8].try_into().unwrap()),
            ),
            DbKeyLayout::BigEndian => (
                bytes[0],
                u32::from_be_bytes(bytes[4..8].try_into().unwrap()),
            ),
        };
        Some(u64::from(up) << 32 | u64::from(low))
    }
}

/// Where rows lie, to tell which of an earlier run's rows a unit holds:
/// DB_KEY numbers of the rows of data-page slot `s` are from
/// `s * records_per_page + 1` on (Firebird's `MAKE_DBKEY(r, 0, s)`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RowPlaces {
    pub layout: DbKeyLayout,
    pub records_per_page: u64,
}

impl RowPlaces {
    /// From `MAKE_DBKEY(1, 0, 1, 0)`, as the server returned it.
    pub fn from_probe(db_key: &[u8]) -> Option<RowPlaces> {
        let layout = DbKeyLayout::from_probe(db_key)?;
        let records_per_page = layout.number(db_key)?.checked_sub(1)?;
        (1..=1 << 20)
            .contains(&records_per_page)
            .then_some(RowPlaces {
                layout,
                records_per_page,
            })
    }

    /// The first DB_KEY number at data-page slot `slot`.
    pub fn first_number_at(&self, slot: u64) -> u64 {
        slot.saturating_mul(self.records_per_page).saturating_add(1)
    }
}

/// Whether a table of an incremental run is read for its changes or whole.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TableMode {
    Changes,
    Whole(String),
}

/// The condition a changed row meets (module docs).
pub fn changed_condition(since: &Since) -> String {
    format!("RDB$RECORD_VERSION >= {}", since.oldest_interesting)
}

/// The condition an unchanged row meets: every row meets one of the two.
pub fn unchanged_condition(since: &Since) -> String {
    format!("RDB$RECORD_VERSION < {}", since.oldest_interesting)
}

/// Why every table must be read whole, if it must: a database restored or
/// replaced since `since` (another GUID, or transaction numbers below the
/// earlier run's).
pub fn whole_database_reason(since: &Since, guid: &str, transaction: u64) -> Option<String> {
    if since.database_guid != guid {
        return Some(format!(
            "the database's GUID is {guid}, not {} as in the previous run: it was restored \
             from a backup or replaced since, so transaction numbers do not compare",
            since.database_guid
        ));
    }
    if transaction <= since.transaction {
        return Some(format!(
            "the database's transaction numbers went back (now {transaction}, {} in the \
             previous run): it was replaced by an older copy since",
            since.transaction
        ));
    }
    None
}

/// How table `name`, with these columns and primary key now, is read.
pub fn table_mode(
    since: &Since,
    name: &str,
    columns: &[(String, String, String)],
    primary_key: &[String],
) -> TableMode {
    if primary_key.is_empty() {
        return TableMode::Whole("it has no primary key".into());
    }
    let Some(previous) = since.tables.iter().find(|t| t.name == name) else {
        return TableMode::Whole("it was not in the previous run".into());
    };
    if previous.columns != columns {
        return TableMode::Whole("its columns changed since the previous run".into());
    }
    if previous.primary_key != primary_key {
        return TableMode::Whole("its primary key changed since the previous run".into());
    }
    if !previous.keys {
        return TableMode::Whole("the previous run kept no keys of it".into());
    }
    TableMode::Changes
}

/// The primary key columns of each table that has one, in key order.
pub fn read_primary_keys(tr: &Transaction) -> Result<HashMap<String, Vec<String>>, ClientError> {
    let mut keys: HashMap<String, Vec<String>> = HashMap::new();
    query(
        tr,
        "SELECT rc.RDB$RELATION_NAME, s.RDB$FIELD_NAME \
         FROM RDB$RELATION_CONSTRAINTS rc \
         JOIN RDB$INDEX_SEGMENTS s ON s.RDB$INDEX_NAME = rc.RDB$INDEX_NAME \
         WHERE rc.RDB$CONSTRAINT_TYPE = 'PRIMARY KEY' \
         ORDER BY rc.RDB$RELATION_NAME, s.RDB$FIELD_POSITION",
        |row| keys.entry(text(row, 0)).or_default().push(text(row, 1)),
    )?;
    Ok(keys)
}

/// Where this server puts rows, from the DB_KEY it makes of relation 1,
/// slot 1; `None` (and the bytes) for a layout fbunload does not know.
pub fn read_row_places(tr: &Transaction) -> Result<(Option<RowPlaces>, Vec<u8>), ClientError> {
    let mut probe = Vec::new();
    query(
        tr,
        "SELECT MAKE_DBKEY(1, 0, 1, 0) FROM RDB$DATABASE",
        |row| probe = row.value(0).unwrap_or_default().to_vec(),
    )?;
    Ok((RowPlaces::from_probe(&probe), probe))
}

/// The database's GUID (Firebird 4+), which a restore from a backup
/// changes.
pub fn read_database_guid(tr: &Transaction) -> Result<String, ClientError> {
    let mut guid = String::new();
    query(
        tr,
        "SELECT RDB$GET_CONTEXT('SYSTEM', 'DB_GUID') FROM RDB$DATABASE",
        |row| guid = text(row, 0),
    )?;
    Ok(guid)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn since() -> Since {
        Since {
            snapshot_number: 500,
            oldest_interesting: 90,
            transaction: 120,
            database_guid: "{G}".into(),
            tables: vec![PreviousTable {
                name: "T".into(),
                columns: vec![("ID".into(), "INTEGER".into(), "Int32".into())],
                primary_key: vec!["ID".into()],
                keys: true,
            }],
        }
    }

    #[test]
    fn the_condition_keeps_every_transaction_from_the_bound_on() {
        assert_eq!(changed_condition(&since()), "RDB$RECORD_VERSION >= 90");
    }

    #[test]
    fn db_keys_are_read_in_the_servers_byte_order() {
        // MAKE_DBKEY(1, 0, 1, 0) of an 8 KiB page on x86: relation 1, slot
        // 1 at record 480 (the key holds the record number plus one).
        let little = [1, 0, 0, 0, 0xe1, 1, 0, 0];
        let places = RowPlaces::from_probe(&little).unwrap();
        assert_eq!(places.layout, DbKeyLayout::LittleEndian);
        assert_eq!(places.records_per_page, 480);
        assert_eq!(places.first_number_at(1632), 1632 * 480 + 1);
        let big = [0, 0, 0, 1, 0, 0, 1, 0xe1];
        assert_eq!(
            RowPlaces::from_probe(&big),
            Some(RowPlaces {
                layout: DbKeyLayout::BigEndian,
                records_per_page: 480
            })
        );
        // The top byte of a 40-bit record number.
        let key = [0x80, 0, 0, 5, 9, 0, 0, 0];
        assert_eq!(DbKeyLayout::LittleEndian.number(&key), Some(5 << 32 | 9));
        assert_eq!(
            DbKeyLayout::BigEndian.number(&[5, 0, 0, 0x80, 0, 0, 0, 9]),
            Some(5 << 32 | 9)
        );
        // Anything else is not guessed at.
        assert_eq!(RowPlaces::from_probe(&[7; 8]), None);
        assert_eq!(RowPlaces::from_probe(&[1, 0, 0, 0, 1, 0, 0, 0]), None);
        assert_eq!(DbKeyLayout::LittleEndian.number(&[1, 2, 3]), None);
    }

    #[test]
    fn every_row_meets_one_condition_of_the_two() {
        assert_eq!(unchanged_condition(&since()), "RDB$RECORD_VERSION < 90");
    }

    #[test]
    fn a_restored_or_older_database_is_read_whole() {
        let s = since();
        assert_eq!(whole_database_reason(&s, "{G}", 121), None);
        assert!(whole_database_reason(&s, "{H}", 121)
            .unwrap()
            .contains("GUID"));
        assert!(whole_database_reason(&s, "{G}", 100)
            .unwrap()
            .contains("went back"));
    }

    #[test]
    fn tables_without_key_new_or_altered_are_read_whole() {
        let s = since();
        let cols = s.tables[0].columns.clone();
        let pk = vec!["ID".to_string()];
        assert_eq!(table_mode(&s, "T", &cols, &pk), TableMode::Changes);
        let whole = |m: TableMode| matches!(m, TableMode::Whole(_));
        assert!(whole(table_mode(&s, "T", &cols, &[])));
        assert!(whole(table_mode(&s, "U", &cols, &pk)));
        let mut other = cols.clone();
        other[0].1 = "BIGINT".into();
        assert!(whole(table_mode(&s, "T", &other, &pk)));
        assert!(whole(table_mode(&s, "T", &cols, &["X".to_string()])));
    }
}
