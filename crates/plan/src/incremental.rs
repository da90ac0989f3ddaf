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
//! So the earlier run keeps a bound in transaction numbers.
//!
//! The bound. Right before its snapshot is taken, a run starts a probe
//! transaction; the engine gives it the *oldest snapshot*
//! (`isc_info_tra_oldest_snapshot`): the least of what every transaction
//! alive then took as its oldest active one, its own included, so no
//! transaction alive then (active, or prepared in a two-phase commit) is
//! below it. A transaction below it had ended before the snapshot:
//! committed (the snapshot saw it) or rolled back, or it died with its
//! process (it can never commit). Its rows are in the earlier run, or
//! never were. The oldest *interesting* transaction, the bound before,
//! stays at the first dead or rolled-back transaction until a sweep, so
//! one process killed inside a transaction made every later run read
//! almost every row written since. From that oldest snapshot up to the
//! snapshot's transaction, the run then asks each transaction's commit
//! number ([`oldest_unseen_sql`]) while the probe lives, and lists those
//! it cannot show committed at or before the snapshot (running then, in
//! limbo, or committed after it): the next run reads the rows of those
//! and of every transaction from the snapshot's own on (or, past
//! [`UNSEEN_LISTED`] of them, every row from the oldest on; past
//! [`UNSEEN_SCAN_LIMIT`] asked, every row from where the asking
//! stopped). A superset of the changed rows, never fewer. A
//! transaction left in limbo by a two-phase commit whose coordinator
//! died (no process holds it) below the oldest snapshot, committed later
//! by `gfix -commit`, would be missed; the oldest interesting
//! transaction, which stops at limbo, is recorded too.
//!
//! Rows deleted since are the previous run's keys the new snapshot lacks.
//! A run that keeps keys reads, with each table's rows, their DB_KEY, and
//! keeps each key with the place of its row ([`RowPlaces`]). Reading every
//! key again would cost a second pass over every row fetched from the
//! engine (about 60% of a full unload's fetch); counting costs far less.
//! So an incremental run reads, per unit of a table: the changed rows with
//! their keys and places, and how many rows of the unit are unchanged
//! ([`Role::UnchangedCount`]), both in one pass over the unit's pages
//! ([`crate::ChangesByKey`]: the count with the changed rows' DB_KEYs,
//! then those rows by key). A row the new snapshot shows unchanged is
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

use crate::catalog::{int, query, text};

/// An earlier run that an incremental one starts from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Since {
    /// Its snapshot number.
    pub snapshot_number: u64,
    /// The oldest interesting transaction its snapshot's transaction saw
    /// (module docs).
    pub oldest_interesting: u64,
    /// The oldest transaction its snapshot may not have seen committed
    /// (module docs, "The bound"): rows written from it on are read.
    /// A manifest from before it was kept gives `oldest_interesting`.
    pub oldest_unseen: u64,
    /// Transactions below `oldest_unseen` that its snapshot did not see
    /// committed either (running then): their rows are read too.
    pub unseen_below: Vec<u64>,
    /// Its snapshot transaction's own number: a database whose numbers
    /// are below it now was restored or replaced since.
    pub transaction: u64,
    /// The database's GUID then.
    pub database_guid: String,
    /// Its file's id then, if recorded.
    pub database_file_id: Option<String>,
    /// A transaction of that run that committed, and its commit number.
    pub commit_mark: Option<(u64, i64)>,
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
    /// Its relation id and format number then, if recorded.
    pub format: Option<(u16, u32)>,
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
    /// row (module docs, "Deletes"). Where `of` reads its changes by key
    /// ([`crate::ChangesByKey`]), its units count in the same scan and this
    /// entry has no units: it only says where the counts go.
    UnchangedCount { of: usize },
    /// The keys and record numbers of the unchanged rows of table `of`,
    /// read only for units whose count says a row is gone: it has no
    /// planned units, the destination asks for them.
    UnchangedKeys { of: usize },
    /// Per unit of table `of` that a stopped `--resumable` run finished,
    /// the rows there now and how many of them changed since that run's
    /// snapshot: one row of two counts ([`Resumable`]).
    ResumeCheck { of: usize },
}

impl Role {
    /// Whether the entry is a helper read of another table's, which the
    /// manifest and the summary do not list.
    pub fn is_helper(&self) -> bool {
        matches!(
            self,
            Role::UnchangedCount { .. } | Role::UnchangedKeys { .. } | Role::ResumeCheck { .. }
        )
    }

    /// Whether each unit of the entry returns one row (of counts).
    pub fn reads_one_row(&self) -> bool {
        matches!(self, Role::UnchangedCount { .. } | Role::ResumeCheck { .. })
    }
}

/// A run that can be resumed (`--resumable`), and what it resumes from.
///
/// A unit a stopped run finished holds the rows of its DB_KEY range at
/// that run's snapshot. At a later snapshot the range holds the same rows
/// when none of its rows changed since (no row meets
/// [`changed_condition`]) and it has as many rows: every row it has then
/// is one of the earlier run's (unchanged rows do not move), and none is
/// gone. So such a unit is counted, not read; any other is read again.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Resumable {
    /// The stopped run's snapshot; `None` for a first run, which only
    /// takes its marks. Its `tables` are not used.
    pub first: Option<Since>,
    /// The units it finished: table name, first slot, end slot.
    pub finished: Vec<(String, u64, Option<u64>)>,
}

/// The two counts a [`Role::ResumeCheck`] entry reads of a unit of table
/// `table`: its rows, and those changed since `since`.
pub fn resume_check_select(table: &str, since: &Since) -> String {
    format!(
        "SELECT COUNT(*), COUNT(IIF({}, 1, NULL)) FROM {}",
        changed_condition(since),
        crate::quote_identifier(table)
    )
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
    match since.unseen_below.as_slice() {
        [] => format!("RDB$RECORD_VERSION >= {}", since.oldest_unseen),
        below => format!(
            "RDB$RECORD_VERSION >= {} OR RDB$RECORD_VERSION IN ({})",
            since.oldest_unseen,
            list(below)
        ),
    }
}

/// The condition an unchanged row meets: every row meets one of the two.
pub fn unchanged_condition(since: &Since) -> String {
    match since.unseen_below.as_slice() {
        [] => format!("RDB$RECORD_VERSION < {}", since.oldest_unseen),
        below => format!(
            "RDB$RECORD_VERSION < {} AND RDB$RECORD_VERSION NOT IN ({})",
            since.oldest_unseen,
            list(below)
        ),
    }
}

fn list(numbers: &[u64]) -> String {
    let numbers: Vec<String> = numbers.iter().map(u64::to_string).collect();
    numbers.join(", ")
}

/// At most this many transactions unseen by a snapshot are listed (an
/// `IN` list takes 1,500 on Firebird 4); with more, the next run reads
/// every row from the oldest of them on.
pub const UNSEEN_LISTED: usize = 1000;

/// Transactions at most this many are asked about one by one to narrow
/// the bound (a PSQL loop asks about 400,000 a second, embedded); past
/// them it stays where the asking stopped.
pub const UNSEEN_SCAN_LIMIT: u64 = 100_000;

/// What a run's snapshot holder knows of the transactions around its
/// snapshot, to bound the next run's change set (module docs, "The
/// bound").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Around {
    /// A transaction started (and still alive) before the snapshot was
    /// taken: its number, and its oldest active and oldest snapshot.
    pub probe: u64,
    pub probe_oldest_active: u64,
    pub probe_oldest_snapshot: u64,
    /// The snapshot's transaction and number.
    pub transaction: u64,
    pub snapshot_number: u64,
}

/// A row `X` for each transaction from `around.probe_oldest_snapshot` on
/// that the snapshot may not have seen committed, in order, asked of
/// `RDB$GET_TRANSACTION_CN` one by one up to the snapshot's transaction
/// or [`UNSEEN_SCAN_LIMIT`] of them ([`unseen_until`]), and at most
/// [`UNSEEN_LISTED`] + 1 rows. Run while the probe lives.
///
/// A commit number of 0 (active), -1 (limbo) or above the snapshot's
/// (committed after it) is unseen; -2 (dead) never commits. 1 (Firebird's
/// `CN_PREHISTORIC`) is seen: the engine gives it to a transaction below
/// its oldest kept state (the least of the oldest interesting transaction,
/// below which every transaction committed or was swept away rolled back,
/// and the oldest snapshot, which cannot pass the probe's oldest active
/// while the probe lives), or to one that committed before the engine
/// last opened the database (`TipCache::cacheState`, `initializeTpc`):
/// either way it ended before the probe started, so before the snapshot. Marking
/// it unseen would be harmless for a scan, which reads a superset, but
/// would make a follow apply a transaction the load already holds. (A
/// transaction left in limbo at the snapshot, committed by `gfix` in the
/// milliseconds before this runs and passed by the oldest state in them,
/// reads 1 too: the module docs' limbo limit.)
pub fn oldest_unseen_sql(around: &Around) -> String {
    let Around {
        probe,
        probe_oldest_snapshot,
        transaction,
        snapshot_number,
        ..
    } = *around;
    let from = probe_oldest_snapshot.min(transaction);
    let until = unseen_until(around);
    let most = UNSEEN_LISTED + 1;
    format!(
        "EXECUTE BLOCK RETURNS (X BIGINT) AS \
         DECLARE N INTEGER = 0; DECLARE C BIGINT; \
         BEGIN \
           X = {from}; \
           WHILE (X < {until} AND N < {most}) DO \
           BEGIN \
             IF (X <> {probe}) THEN \
             BEGIN \
               C = RDB$GET_TRANSACTION_CN(X); \
               IF (C IS NULL OR C = 0 OR C = -1 OR C > {snapshot_number}) THEN \
               BEGIN N = N + 1; SUSPEND; END \
             END \
             X = X + 1; \
           END \
         END"
    )
}

/// Where [`oldest_unseen_sql`] stops asking: the snapshot's transaction,
/// or [`UNSEEN_SCAN_LIMIT`] transactions on.
pub fn unseen_until(around: &Around) -> u64 {
    let from = around.probe_oldest_snapshot.min(around.transaction);
    around
        .transaction
        .min(from.saturating_add(UNSEEN_SCAN_LIMIT))
}

/// The next run's bound from the unseen transactions found below
/// `until`: `(oldest_unseen, unseen_below)` (module docs, "The bound").
pub fn unseen_bound(unseen: &[u64], until: u64) -> (u64, Vec<u64>) {
    if unseen.len() > UNSEEN_LISTED {
        (unseen[0], Vec::new())
    } else {
        (until, unseen.to_vec())
    }
}

/// The database as a run finds it, to compare with the earlier run's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatabaseNow {
    pub guid: String,
    pub file_id: String,
    /// A transaction of this run's, started after everything the earlier
    /// run's snapshot saw.
    pub transaction: u64,
    /// `RDB$GET_TRANSACTION_CN` of the earlier run's commit mark's
    /// transaction, now (`None`: not reached, or nothing to ask).
    pub mark_commit_number: Option<i64>,
}

/// Why every table must be read whole, if it must: a database restored
/// (another GUID), replaced by an older copy (transaction numbers below
/// the earlier run's), or another copy of it (another file, or a
/// transaction of the earlier run's that did not commit here as it did
/// there).
pub fn whole_database_reason(since: &Since, now: &DatabaseNow) -> Option<String> {
    let guid = &now.guid;
    if since.database_guid != *guid {
        return Some(format!(
            "the database's GUID is {guid}, not {} as in the previous run: it was restored \
             from a backup or replaced since, so transaction numbers do not compare",
            since.database_guid
        ));
    }
    let transaction = now.transaction;
    if transaction <= since.transaction {
        return Some(format!(
            "the database's transaction numbers went back (now {transaction}, {} in the \
             previous run): it was replaced by an older copy since",
            since.transaction
        ));
    }
    if let Some(then) = since.database_file_id.as_deref() {
        if then != now.file_id {
            return Some(format!(
                "the database is another file than the previous run read (file id {}, \
                 then {then}): a copy, whose history may have gone its own way since",
                now.file_id
            ));
        }
    }
    if let Some((mark, then)) = since.commit_mark.filter(|(_, then)| *then >= 2) {
        // 1 says only "committed before the engine's oldest kept state"
        // (or before it last opened the database): no proof either way.
        let differs = match now.mark_commit_number {
            Some(1) => false,
            Some(cn) => cn != then,
            None => true,
        };
        if differs {
            let state = match now.mark_commit_number {
                None => "not reached".to_string(),
                Some(0) => "active".into(),
                Some(-1) => "in limbo".into(),
                Some(-2) => "rolled back".into(),
                Some(cn) => format!("committed as number {cn}"),
            };
            return Some(format!(
                "transaction {mark}, which committed as number {then} in the previous run, \
                 is {state} here: this is a copy of the database with a history of its own"
            ));
        }
    }
    None
}

/// How table `name`, with these columns, primary key and (relation id,
/// format number) now, is read.
pub fn table_mode(
    since: &Since,
    name: &str,
    columns: &[(String, String, String)],
    primary_key: &[String],
    format: Option<(u16, u32)>,
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
    // A change of its record layout (a column dropped and added again,
    // moved, given a default that fills old rows) changes what its rows
    // read as without writing them.
    match (previous.format, format) {
        (Some((id, _)), Some((now, _))) if id != now => TableMode::Whole(format!(
            "it was dropped and created again since the previous run (relation id {now}, \
             then {id})"
        )),
        (Some((_, then)), Some((_, now))) if then != now => TableMode::Whole(format!(
            "it was altered since the previous run (format {now}, then {then}): its rows may \
             read differently though none was written"
        )),
        (Some(_), Some(_)) => TableMode::Changes,
        _ => TableMode::Whole(
            "the previous run did not record its format (an earlier fbunload), so an ALTER \
             since could not be told"
                .into(),
        ),
    }
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

/// Each user table's relation id and format number (`RDB$FORMAT`).
pub fn read_table_formats(
    tr: &Transaction,
) -> Result<std::collections::BTreeMap<String, (u16, u32)>, ClientError> {
    let mut formats = std::collections::BTreeMap::new();
    query(
        tr,
        "SELECT RDB$RELATION_NAME, RDB$RELATION_ID, RDB$FORMAT FROM RDB$RELATIONS \
         WHERE RDB$RELATION_ID IS NOT NULL AND RDB$FORMAT IS NOT NULL",
        |row| {
            let id = int(row, 1).and_then(|n| u16::try_from(n).ok());
            let format = int(row, 2).and_then(|n| u32::try_from(n).ok());
            if let (Some(id), Some(format)) = (id, format) {
                formats.insert(text(row, 0), (id, format));
            }
        },
    )?;
    Ok(formats)
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

/// The next run's bound, `(oldest_unseen, unseen_below)`, asked in `tr`
/// (the snapshot's holder) while the probe lives.
pub fn read_unseen(tr: &Transaction, around: &Around) -> Result<(u64, Vec<u64>), ClientError> {
    let mut unseen = Vec::new();
    let mut bad = false;
    query(tr, &oldest_unseen_sql(around), |row| {
        match int(row, 0).and_then(|n| u64::try_from(n).ok()) {
            Some(n) => unseen.push(n),
            None => bad = true,
        }
    })?;
    if bad {
        return Err(ClientError::Invalid(
            "the unseen transactions came back unreadable".into(),
        ));
    }
    Ok(unseen_bound(&unseen, unseen_until(around)))
}

/// The database as this run finds it, to hold against an earlier run's
/// marks (`commit_mark`: that run's mark transaction and its commit
/// number then, whose commit number now is read).
pub fn read_database_now(
    tr: &Transaction,
    guid: &str,
    file_id: &str,
    commit_mark: Option<(u64, i64)>,
) -> Result<DatabaseNow, ClientError> {
    let mark_commit_number = match commit_mark {
        Some((mark, _)) => read_commit_number(tr, mark)?,
        None => None,
    };
    Ok(DatabaseNow {
        guid: guid.to_string(),
        file_id: file_id.to_string(),
        transaction: tr.number()?,
        mark_commit_number,
    })
}

/// `RDB$GET_TRANSACTION_CN(number)` now: `None` for a number the
/// database has not reached.
pub fn read_commit_number(tr: &Transaction, number: u64) -> Result<Option<i64>, ClientError> {
    let mut cn = None;
    query(
        tr,
        &format!("SELECT RDB$GET_TRANSACTION_CN({number}) FROM RDB$DATABASE"),
        |row| cn = int(row, 0),
    )?;
    Ok(cn)
}

/// The database's file as the server's file system knows it (device and
/// inode on Unix): a copy of the file has another.
pub fn read_database_file_id(tr: &Transaction) -> Result<String, ClientError> {
    let mut id = String::new();
    query(
        tr,
        "SELECT RDB$GET_CONTEXT('SYSTEM', 'DB_FILE_ID') FROM RDB$DATABASE",
        |row| id = text(row, 0),
    )?;
    Ok(id)
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
            oldest_unseen: 90,
            unseen_below: Vec::new(),
            transaction: 120,
            database_guid: "{G}".into(),
            database_file_id: Some("F".into()),
            commit_mark: Some((118, 499)),
            tables: vec![PreviousTable {
                name: "T".into(),
                columns: vec![("ID".into(), "INTEGER".into(), "Int32".into())],
                primary_key: vec!["ID".into()],
                keys: true,
                format: Some((130, 2)),
            }],
        }
    }

    #[test]
    fn the_condition_keeps_every_transaction_from_the_bound_on() {
        let mut s = since();
        s.oldest_unseen = 110;
        assert_eq!(changed_condition(&s), "RDB$RECORD_VERSION >= 110");
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
        let mut s = since();
        s.oldest_unseen = 110;
        assert_eq!(unchanged_condition(&s), "RDB$RECORD_VERSION < 110");
    }

    #[test]
    fn a_restored_older_or_copied_database_is_read_whole() {
        let s = since();
        let now = DatabaseNow {
            guid: "{G}".into(),
            file_id: "F".into(),
            transaction: 121,
            mark_commit_number: Some(499),
        };
        let why = |edit: &dyn Fn(&mut DatabaseNow)| {
            let mut now = now.clone();
            edit(&mut now);
            whole_database_reason(&s, &now)
        };
        assert_eq!(why(&|_| {}), None);
        assert!(why(&|n| n.guid = "{H}".into()).unwrap().contains("GUID"));
        assert!(why(&|n| n.transaction = 100).unwrap().contains("went back"));
        assert!(why(&|n| n.file_id = "E".into())
            .unwrap()
            .contains("another file"));
        // The mark: prehistoric tells nothing; anything else but the same
        // number is another history.
        assert_eq!(why(&|n| n.mark_commit_number = Some(1)), None);
        for cn in [None, Some(0), Some(-1), Some(-2), Some(498)] {
            assert!(why(&|n| n.mark_commit_number = cn)
                .unwrap()
                .contains("history of its own"));
        }
        // A run before marks were kept: nothing to compare.
        let mut old = s.clone();
        old.database_file_id = None;
        old.commit_mark = None;
        let mut other = now.clone();
        other.file_id = "E".into();
        other.mark_commit_number = Some(3);
        assert_eq!(whole_database_reason(&old, &other), None);
    }

    #[test]
    fn the_bound_is_asked_from_the_oldest_snapshot_to_the_snapshot() {
        let around = Around {
            probe: 117,
            probe_oldest_active: 100,
            probe_oldest_snapshot: 95,
            transaction: 120,
            snapshot_number: 500,
        };
        let sql = oldest_unseen_sql(&around);
        assert!(sql.contains("X = 95;"), "{sql}");
        assert!(sql.contains("WHILE (X < 120 AND N < 1001)"), "{sql}");
        assert!(sql.contains("X <> 117") && sql.contains("C > 500"), "{sql}");
        // 1 (prehistoric) ended before the probe: seen, wherever it is.
        assert!(!sql.contains("C = 1"), "{sql}");
        // Far below: asked up to the limit only.
        let far = Around {
            probe_oldest_snapshot: 3,
            transaction: 5_000_000,
            ..around
        };
        let sql = oldest_unseen_sql(&far);
        assert!(
            sql.contains(&format!("WHILE (X < {} ", 3 + UNSEEN_SCAN_LIMIT)),
            "{sql}"
        );
        // Few unseen: listed, the rest from where the asking stopped;
        // many: everything from the oldest of them.
        assert_eq!(unseen_bound(&[97, 110], 120), (120, vec![97, 110]));
        assert_eq!(unseen_bound(&[], 120), (120, vec![]));
        let many: Vec<u64> = (10..10 + UNSEEN_LISTED as u64 + 1).collect();
        assert_eq!(unseen_bound(&many, 5000), (10, vec![]));
    }

    #[test]
    fn transactions_unseen_below_the_bound_are_read_too() {
        let mut s = since();
        s.oldest_unseen = 120;
        s.unseen_below = vec![97, 110];
        assert_eq!(
            changed_condition(&s),
            "RDB$RECORD_VERSION >= 120 OR RDB$RECORD_VERSION IN (97, 110)"
        );
        assert_eq!(
            unchanged_condition(&s),
            "RDB$RECORD_VERSION < 120 AND RDB$RECORD_VERSION NOT IN (97, 110)"
        );
    }

    #[test]
    fn tables_without_key_new_or_altered_are_read_whole() {
        let s = since();
        let cols = s.tables[0].columns.clone();
        let pk = vec!["ID".to_string()];
        let f = Some((130, 2));
        assert_eq!(table_mode(&s, "T", &cols, &pk, f), TableMode::Changes);
        let whole = |m: TableMode| matches!(m, TableMode::Whole(_));
        assert!(whole(table_mode(&s, "T", &cols, &[], f)));
        assert!(whole(table_mode(&s, "U", &cols, &pk, f)));
        let mut other = cols.clone();
        other[0].1 = "BIGINT".into();
        assert!(whole(table_mode(&s, "T", &other, &pk, f)));
        assert!(whole(table_mode(&s, "T", &cols, &["X".to_string()], f)));
        // Same columns, another layout or another table of the same name.
        let why = |m: TableMode| match m {
            TableMode::Whole(why) => why,
            TableMode::Changes => String::new(),
        };
        assert!(why(table_mode(&s, "T", &cols, &pk, Some((130, 3)))).contains("altered"));
        assert!(why(table_mode(&s, "T", &cols, &pk, Some((131, 2)))).contains("created again"));
        let mut old = s.clone();
        old.tables[0].format = None;
        assert!(why(table_mode(&old, "T", &cols, &pk, f)).contains("did not record"));
    }
}
