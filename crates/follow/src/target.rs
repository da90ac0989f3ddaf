//! The PostgreSQL side of a follow: the hand-off a `--keep-keys` load
//! left, the follow's position (`_fbunload_journal`), and a group of
//! journal transactions applied with the position in one transaction.
//!
//! A keyed table's changes go set-based: their net effect per key
//! ([`crate::net`]) is copied (`COPY`, text format) into a temporary
//! staging table typed as the target's columns, then one `DELETE`, one
//! `UPDATE` and one `INSERT` apply it, each counted against what the
//! journal says must be there. Statement per statement, in commit order,
//! stay the tables where the net effect could differ from what the
//! changes one by one would do: no primary key (rows matched by all
//! their values), another unique key (values swapped between rows within
//! one `UPDATE`), a foreign key with an action (`CASCADE` acts at once).
//!
//! Values are the text PostgreSQL's input functions read: as SQL
//! literals in statements (an untyped literal takes the type of the
//! column it meets, so one renderer serves every column type the load
//! made; `standard_conforming_strings` is on, so a doubled quote is the
//! only escape a text needs, and a hostile value is tested), and as
//! COPY's text fields, escaped as COPY reads them.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fbunload_dest_postgres::{ident, pg_name, Target as PgTarget, RUNS_TABLE};
use fbunload_journal::{BlobId, Change, ChangeKind, Committed, Journal, Position, Value};
use postgres::Client;

use crate::net::{Key, Net, NetTable, Op, Row};
use crate::phases;
use crate::source::{Source, Table};
use crate::{FollowError, FollowOptions, Written};

/// Row changes sent to PostgreSQL in one round trip.
const STATEMENTS_PER_TRIP: usize = 500;

/// The follow's own table in the target schema.
pub const POSITION_TABLE: &str = "_fbunload_journal";
const STATE_TABLE: &str = fbunload_dest_postgres::sync::STATE_TABLE;

/// What the `--keep-keys` load's snapshot did not see.
#[derive(Debug, Clone)]
pub struct Handoff {
    /// The load's state (its manifest's SHA-256).
    pub state: String,
    pub database_guid: String,
    /// Transactions from this number on were not seen.
    pub oldest_unseen: u64,
    /// Nor these, below it (running at the snapshot).
    pub unseen_below: Vec<u64>,
    /// PostgreSQL's name of each sequence, by Firebird's.
    pub sequences: BTreeMap<String, String>,
}

impl Handoff {
    /// Whether the load's snapshot did not see `transaction` committed:
    /// then the follow applies it.
    pub fn unseen(&self, transaction: u64) -> bool {
        transaction >= self.oldest_unseen || self.unseen_below.contains(&transaction)
    }
}

/// Where the follow is.
#[derive(Debug, Clone, Copy)]
pub struct Resume {
    pub applied: Position,
    pub restart: Position,
}

/// One row change as SQL, and what it must touch.
#[derive(Debug, Clone)]
pub struct Statement {
    pub sql: String,
    /// The table and key, for a message.
    pub what: String,
    /// An insert's `INSERT INTO t (columns)` and its `(values)`: inserts
    /// in a row with the same start go as one statement of many rows.
    pub insert: Option<(String, String)>,
}

pub struct Target {
    client: Client,
    schema: String,
    sequences: BTreeMap<String, String>,
    state: String,
    /// Bytes of changes a group holds before they go on to PostgreSQL
    /// (in its open transaction).
    memory_budget: usize,
    plans: HashMap<String, TablePlan>,
    group: Group,
}

fn pg(what: &str, e: postgres::Error) -> FollowError {
    let reason = match e.as_db_error() {
        Some(db) => db.message().to_string(),
        None => e.to_string(),
    };
    FollowError::Target(format!("{what}: {reason}"))
}

fn literal(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

impl Target {
    pub fn open(options: &FollowOptions) -> Result<Target, FollowError> {
        let target = PgTarget::parse(&options.target).map_err(FollowError::Usage)?;
        let mut client = target.connect().map_err(FollowError::Target)?;
        client
            .batch_execute("SET standard_conforming_strings = on")
            .map_err(|e| pg("setting up the connection", e))?;
        let locked: bool = client
            .query_one(
                "SELECT pg_try_advisory_lock(hashtext('fbunload follow ' || $1))",
                &[&options.pg_schema()],
            )
            .map_err(|e| pg("locking the schema", e))?
            .get(0);
        if !locked {
            return Err(FollowError::Usage(format!(
                "schema {}: another fbunload follow applies the journal to it; stop that one first",
                options.pg_schema()
            )));
        }
        Ok(Target {
            client,
            schema: options.pg_schema().to_string(),
            sequences: BTreeMap::new(),
            state: String::new(),
            memory_budget: options.memory_budget,
            plans: HashMap::new(),
            group: Group::default(),
        })
    }

    pub fn schema(&self) -> &str {
        &self.schema
    }

    /// The hand-off the schema's latest `--keep-keys` run left.
    pub fn handoff(&mut self) -> Result<Handoff, FollowError> {
        let schema = &self.schema;
        let runs = format!("{}.{}", ident(schema), ident(RUNS_TABLE));
        let states = format!("{}.{}", ident(schema), ident(STATE_TABLE));
        let none = || {
            FollowError::Usage(format!(
                "schema {schema} holds no --keep-keys load to follow from: load it first with \
                 `fbunload -d DB -o postgresql://… --pg-schema {schema} --keep-keys --journal DIR`"
            ))
        };
        let present: bool = self
            .client
            .query_one(
                "SELECT to_regclass($1) IS NOT NULL AND to_regclass($2) IS NOT NULL",
                &[&runs, &states],
            )
            .map_err(|e| pg("reading the target's state", e))?
            .get(0);
        if !present {
            return Err(none());
        }
        let row = self
            .client
            .query_opt(
                &format!(
                    "SELECT r.options->>'state', (r.options->'sequences')::text, s.bytes \
                     FROM {runs} r JOIN {states} s ON s.state = r.options->>'state' \
                     AND s.name = 'manifest.json' \
                     ORDER BY r.finished DESC, r.started DESC LIMIT 1"
                ),
                &[],
            )
            .map_err(|e| pg("reading the target's state", e))?
            .ok_or_else(none)?;
        let state: String = row.get(0);
        let sequences: Option<String> = row.get(1);
        let manifest: Vec<u8> = row.get(2);
        let unreadable = |what: &str| {
            FollowError::Usage(format!(
                "schema {schema}: its state's manifest has no {what}; load it again with \
                 --overwrite --keep-keys"
            ))
        };
        let manifest: serde_json::Value =
            serde_json::from_slice(&manifest).map_err(|_| unreadable("JSON"))?;
        let marks = &manifest["incremental"];
        let number = |key: &str| marks[key].as_u64();
        let transaction = number("transaction").ok_or_else(|| unreadable("snapshot marks"))?;
        let oldest_unseen = number("oldest_unseen").ok_or_else(|| unreadable("oldest_unseen"))?;
        if oldest_unseen < transaction {
            return Err(FollowError::Usage(format!(
                "schema {schema}: so many transactions were running when its load took its \
                 snapshot that the load kept only a bound ({oldest_unseen}), not the list the \
                 journal needs to apply each one once; load it again with --overwrite \
                 --keep-keys when fewer run"
            )));
        }
        let sequences: BTreeMap<String, String> = match sequences {
            Some(text) => serde_json::from_str(&text).map_err(|_| unreadable("sequences"))?,
            None => BTreeMap::new(),
        };
        self.sequences = sequences.clone();
        self.state = state.clone();
        Ok(Handoff {
            state,
            database_guid: marks["database_guid"].as_str().unwrap_or("").to_string(),
            oldest_unseen,
            unseen_below: marks["unseen_below"]
                .as_array()
                .map(|a| a.iter().filter_map(|v| v.as_u64()).collect())
                .unwrap_or_default(),
            sequences,
        })
    }

    fn position_table(&self) -> String {
        format!("{}.{}", ident(&self.schema), ident(POSITION_TABLE))
    }

    /// Where to go on from: the position recorded for this hand-off, or
    /// the journal's first segment on the first follow after a load.
    pub fn position(
        &mut self,
        handoff: &Handoff,
        journal: &Journal,
    ) -> Result<Resume, FollowError> {
        let table = self.position_table();
        self.client
            .batch_execute(&format!(
                "CREATE TABLE IF NOT EXISTS {table} (state text PRIMARY KEY, \
                 applied_sequence bigint NOT NULL, applied_offset bigint NOT NULL, \
                 restart_sequence bigint NOT NULL, restart_offset bigint NOT NULL, \
                 transactions bigint NOT NULL DEFAULT 0, updated timestamptz NOT NULL DEFAULT now())"
            ))
            .map_err(|e| pg("creating the position table", e))?;
        let row = self
            .client
            .query_opt(
                &format!(
                    "SELECT applied_sequence, applied_offset, restart_sequence, restart_offset \
                     FROM {table} WHERE state = $1"
                ),
                &[&handoff.state],
            )
            .map_err(|e| pg("reading the follow's position", e))?;
        let at = |s: i64, o: i64| Position {
            sequence: s as u64,
            offset: o as u64,
        };
        if let Some(row) = row {
            return Ok(Resume {
                applied: at(row.get(0), row.get(1)),
                restart: at(row.get(2), row.get(3)),
            });
        }
        let first = journal.sequences()?.first().copied().unwrap_or(1);
        let resume = Resume {
            applied: Position::default(),
            restart: Position {
                sequence: first,
                offset: 0,
            },
        };
        self.client
            .execute(
                &format!(
                    "INSERT INTO {table} (state, applied_sequence, applied_offset, \
                     restart_sequence, restart_offset) VALUES ($1, 0, 0, $2, 0)"
                ),
                &[&handoff.state, &(first as i64)],
            )
            .map_err(|e| pg("recording the follow's position", e))?;
        Ok(resume)
    }

    fn position_update(&self, end: Position, restart: Position, applied: u64) -> String {
        format!(
            "UPDATE {} SET applied_sequence = {}, applied_offset = {}, restart_sequence = {}, \
             restart_offset = {}, transactions = transactions + {}, updated = now() \
             WHERE state = {}",
            self.position_table(),
            end.sequence,
            end.offset,
            restart.sequence,
            restart.offset,
            applied,
            literal(&self.state)
        )
    }

    /// The statement that moves a sequence forward to `value`, if the load
    /// made it.
    pub fn sequence_statement(&self, name: &str, value: i64) -> Option<String> {
        let pg = self.sequences.get(name)?;
        let qualified = format!("{}.{}", ident(&self.schema), ident(pg));
        // Forward only: a session's sequence values reach the journal with
        // its next commit, so one the load already saw past can come after.
        let sequence = literal(&qualified);
        Some(format!(
            "SELECT setval({sequence}, greatest({value}, last_value), true) FROM {}",
            qualified
        ))
    }

    /// The foreign keys of the schema made deferrable (a load before they
    /// were made so), so a group's tables can go in any order and be
    /// checked at its commit, as a sync does.
    pub fn defer_foreign_keys(&mut self) -> Result<(), FollowError> {
        let rows = self
            .client
            .query(
                "SELECT c.relname::text, k.conname::text FROM pg_catalog.pg_constraint k \
                 JOIN pg_catalog.pg_class c ON c.oid = k.conrelid JOIN pg_catalog.pg_namespace n \
                 ON n.oid = c.relnamespace WHERE n.nspname = $1 AND k.contype = 'f' \
                 AND NOT k.condeferrable",
                &[&self.schema],
            )
            .map_err(|e| pg("reading the foreign keys", e))?;
        let mut sql = String::new();
        for row in rows {
            let (table, constraint): (String, String) = (row.get(0), row.get(1));
            sql += &format!(
                "ALTER TABLE {}.{} ALTER CONSTRAINT {} DEFERRABLE INITIALLY IMMEDIATE;",
                ident(&self.schema),
                ident(&table),
                ident(&constraint)
            );
        }
        self.client
            .batch_execute(&sql)
            .map_err(|e| pg("making the foreign keys deferrable", e))
    }

    /// How `table`'s changes go: set-based where the net effect per key
    /// is what change-by-change would leave, else change by change.
    fn plan(&mut self, table: &Arc<Table>) -> Result<(), FollowError> {
        if self.plans.contains_key(&table.name) {
            return Ok(());
        }
        let name = pg_name(&table.name);
        let qualified = format!("{}.{}", ident(&self.schema), ident(&name));
        let row = self
            .client
            .query_opt(
                "SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid \
                 AND i.indisprimary), \
                 EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid \
                 AND i.indisunique AND NOT i.indisprimary), \
                 EXISTS (SELECT 1 FROM pg_catalog.pg_constraint k WHERE k.contype = 'f' \
                 AND c.oid IN (k.conrelid, k.confrelid) \
                 AND (k.confdeltype <> 'a' OR k.confupdtype <> 'a')) \
                 FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n \
                 ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = $2",
                &[&self.schema, &name],
            )
            .map_err(|e| pg(&format!("table {}: reading its keys", table.name), e))?;
        // Another unique key could be met half-way through one UPDATE of
        // many rows (values swapped), and a referential action (CASCADE,
        // SET NULL, RESTRICT) acts at once, in the order of the changes.
        let set_based = !table.key.is_empty()
            && row.is_some_and(|r| {
                r.get::<_, bool>(0) && !r.get::<_, bool>(1) && !r.get::<_, bool>(2)
            });
        let staged = set_based.then(|| {
            let fields: Vec<usize> = (0..table.format.fields.len())
                .filter(|id| {
                    table.format.fields[*id].is_some()
                        && matches!(table.fields.get(*id), Some(Some(_)))
                })
                .collect();
            let key = table
                .key
                .iter()
                .filter_map(|id| fields.iter().position(|f| f == id))
                .collect();
            Staged {
                stage: ident(&format!("_fbunload_stage_{}", self.plans.len())),
                fields,
                key,
                created: false,
            }
        });
        self.plans.insert(
            table.name.clone(),
            TablePlan {
                table: table.clone(),
                qualified,
                staged,
            },
        );
        Ok(())
    }

    /// Disables `table`'s user triggers for the group's transaction (the
    /// rows come as Firebird's triggers left them) and keeps what enables
    /// them again at its commit. They are read
    /// anew each group, its first change to the table: between groups
    /// someone may have made or dropped one on the target; within one,
    /// the lock taken first keeps them as read (a trigger is made or
    /// altered only under a lock this one excludes).
    fn hold_triggers(&mut self, table: &str) -> Result<(), FollowError> {
        let failed = |e| pg(&format!("table {table}: holding its triggers"), e);
        let name = pg_name(table);
        let qualified = &self.plans[table].qualified;
        self.client
            .batch_execute(&format!(
                "LOCK TABLE {qualified} IN SHARE ROW EXCLUSIVE MODE"
            ))
            .map_err(failed)?;
        let (hold, release) = fbunload_dest_postgres::hold_triggers(
            &mut self.client,
            &self.schema,
            std::slice::from_ref(&name),
        )
        .map_err(failed)?;
        if !hold.is_empty() {
            self.client.batch_execute(&hold).map_err(failed)?;
            self.group.release += &release;
        }
        Ok(())
    }

    fn begin(&mut self) -> Result<(), FollowError> {
        if !self.group.begun {
            self.client
                .batch_execute("BEGIN; SET CONSTRAINTS ALL DEFERRED")
                .map_err(|e| pg("starting a transaction", e))?;
            self.group.begun = true;
            self.group.started = Some(Instant::now());
        }
        Ok(())
    }

    /// Adds an ended transaction's changes and sequences to the group
    /// (`counted`: it committed work the summary counts).
    pub fn add(
        &mut self,
        source: &mut Source,
        ended: &Committed,
        counted: bool,
    ) -> Result<(), FollowError> {
        self.begin()?;
        for change in ended.changes() {
            let change = change?;
            let timed = phases::timed("table format (firebird)");
            let table = source.table(&change.table)?;
            drop(timed);
            let timed = phases::timed("table plan (postgresql)");
            self.plan(&table)?;
            drop(timed);
            if self.group.held.insert(table.name.clone()) {
                self.hold_triggers(&table.name)?;
            }
            self.group.changes += 1;
            if self.plans[&table.name].staged.is_none() {
                // Only this change's blobs, if they went to their file.
                let timed = phases::timed("decode, statements");
                let blobs = ended.blobs_of(&table.format, &change)?;
                let statement = statement(&self.schema, &table, &change, &blobs)?;
                drop(timed);
                self.group.bytes += statement.sql.len();
                self.group.statements.push((ended.transaction, statement));
                if self.group.statements.len() >= STATEMENTS_PER_TRIP {
                    self.send_statements()?;
                }
            } else {
                let plan = &self.plans[&table.name];
                let net = self.group.nets.entry(table.name.clone()).or_default();
                let before = net.bytes;
                let _timed = phases::timed("decode, net per key");
                net_change(plan, net, ended, &change)?;
                self.group.bytes += net.bytes - before;
            }
            if self.group.bytes > self.memory_budget {
                self.send_statements()?;
                self.send_sets()?;
            }
        }
        for (name, value) in &ended.sequences {
            let last = self.group.sequences.entry(name.clone()).or_insert(*value);
            *last = (*last).max(*value);
        }
        self.group.transactions += u64::from(counted);
        Ok(())
    }

    /// The group has gone as far as `end`, a transaction whose commit
    /// was `written`; read again from `restart`.
    pub fn reached(&mut self, end: Position, restart: Position, written: Written) {
        self.group.reached = Some((end, restart));
        self.group.first_written.get_or_insert(written);
        self.group.started.get_or_insert_with(Instant::now);
    }

    /// The group holds enough changes, or has gathered long enough.
    pub fn due(&self) -> bool {
        self.group.changes >= GROUP_CHANGES
            || self
                .group
                .started
                .is_some_and(|s| s.elapsed() >= GROUP_TIME)
    }

    /// Applies the group with its position in one PostgreSQL transaction;
    /// `None` if it held nothing.
    pub fn commit(&mut self) -> Result<Option<Applied>, FollowError> {
        let Some((end, restart)) = self.group.reached else {
            return Ok(None);
        };
        let position = self.position_update(end, restart, self.group.transactions);
        if self.group.begun {
            self.send_statements()?;
            self.send_sets()?;
            let mut sql = String::new();
            for (name, value) in &self.group.sequences {
                if let Some(statement) = self.sequence_statement(name, *value) {
                    sql += &statement;
                    sql += ";";
                }
            }
            let _timed = phases::timed("sequences, position");
            // The deferred foreign keys are checked before the triggers
            // come back (PostgreSQL alters no table with events pending).
            if !self.group.release.is_empty() {
                sql += "SET CONSTRAINTS ALL IMMEDIATE;";
                sql += &self.group.release;
            }
            sql += &position;
            self.client
                .batch_execute(&sql)
                .map_err(|e| pg("recording the follow's position", e))?;
            drop(_timed);
            let _timed = phases::timed("commit");
            self.client
                .batch_execute("COMMIT")
                .map_err(|e| pg("committing the applied transactions", e))?;
        } else {
            // Only transactions passed over (the load saw them).
            self.client
                .batch_execute(&position)
                .map_err(|e| pg("recording the follow's position", e))?;
        }
        let group = std::mem::take(&mut self.group);
        Ok(Some(Applied {
            transactions: group.transactions,
            changes: group.changes,
            end,
            first_written: group.first_written,
        }))
    }

    /// The statement path's changes gathered so far, many to a round trip
    /// (the simple query protocol runs them in order and says how many
    /// rows each touched); each must touch one row.
    fn send_statements(&mut self) -> Result<(), FollowError> {
        let chunk = std::mem::take(&mut self.group.statements);
        if chunk.is_empty() {
            return Ok(());
        }
        // Inserts in a row into one table: one statement, many rows.
        let mut text = String::new();
        let mut expected: Vec<(u64, &(u64, Statement))> = Vec::new();
        for (i, entry) in chunk.iter().enumerate() {
            let statement = &entry.1;
            let previous = i.checked_sub(1).map(|p| &chunk[p].1);
            match (&statement.insert, previous.and_then(|p| p.insert.as_ref())) {
                (Some((start, values)), Some((previous_start, _))) if start == previous_start => {
                    text.push_str(", ");
                    text.push_str(values);
                    expected.last_mut().unwrap().0 += 1;
                    continue;
                }
                _ => {}
            }
            if !text.is_empty() {
                text.push_str(";\n");
            }
            match &statement.insert {
                Some((start, values)) => {
                    text.push_str(start);
                    text.push_str(" VALUES ");
                    text.push_str(values);
                }
                None => text.push_str(&statement.sql),
            }
            expected.push((1, entry));
        }
        let _timed = phases::timed("statements");
        let replies = self.client.simple_query(&text).map_err(|e| {
            let what = match &chunk[..] {
                [(transaction, one)] => format!("transaction {transaction}, {}", one.what),
                _ => format!("one of {} row changes", chunk.len()),
            };
            pg(&what, e)
        })?;
        let touched = replies.iter().filter_map(|reply| match reply {
            postgres::SimpleQueryMessage::CommandComplete(rows) => Some(*rows),
            _ => None,
        });
        for ((rows_expected, (transaction, statement)), rows) in expected.iter().zip(touched) {
            if rows != *rows_expected {
                return Err(not_as_firebird_had_it(*transaction, &statement.what));
            }
        }
        self.group.bytes = 0;
        Ok(())
    }

    /// Each table's net changes through its staging table: one DELETE,
    /// one UPDATE and one INSERT.
    fn send_sets(&mut self) -> Result<(), FollowError> {
        let nets = std::mem::take(&mut self.group.nets);
        for (name, net) in nets {
            let plan = self.plans.get_mut(&name).expect("planned when added");
            let again = !self.group.staged.insert(name.clone());
            apply_net(&mut self.client, plan, &net, again)?;
        }
        self.group.bytes = 0;
        Ok(())
    }
}

/// Row changes a group gathers before its commit.
const GROUP_CHANGES: u64 = 20_000;
/// How long a group gathers: the bound it adds to the lag.
const GROUP_TIME: Duration = Duration::from_millis(100);

/// What a group's commit applied.
#[derive(Debug, Clone, Copy)]
pub struct Applied {
    pub transactions: u64,
    pub changes: u64,
    pub end: Position,
    /// When its first transaction's commit was written to the journal.
    pub first_written: Option<Written>,
}

/// The transactions gathered for one PostgreSQL transaction.
#[derive(Default)]
struct Group {
    /// `BEGIN` sent.
    begun: bool,
    started: Option<Instant>,
    /// Keyed tables' changes, by Firebird's table name.
    nets: BTreeMap<String, NetTable>,
    /// The other tables' changes, in commit order, with their transaction.
    statements: Vec<(u64, Statement)>,
    /// Tables whose triggers are held, and the SQL that releases them.
    held: HashSet<String>,
    release: String,
    /// Tables staged once in this transaction (their staging table is
    /// emptied before the next time).
    staged: HashSet<String>,
    sequences: BTreeMap<String, i64>,
    /// Bytes of SQL and row text held.
    bytes: usize,
    transactions: u64,
    changes: u64,
    reached: Option<(Position, Position)>,
    first_written: Option<Written>,
}

/// How one table's changes go to PostgreSQL.
struct TablePlan {
    table: Arc<Table>,
    qualified: String,
    /// `None`: change by change.
    staged: Option<Staged>,
}

/// A keyed table's staging: a temporary table of its columns, an
/// operation and a row number (for a message).
struct Staged {
    stage: String,
    /// Field ids of the columns, in order.
    fields: Vec<usize>,
    /// Positions of the key's columns in `fields`.
    key: Vec<usize>,
    created: bool,
}

fn not_as_firebird_had_it(transaction: u64, what: &str) -> FollowError {
    FollowError::Target(format!(
        "transaction {transaction}, {what}: the row is not in PostgreSQL as Firebird had it (the \
         target was changed by hand?); load it again with --overwrite --keep-keys"
    ))
}

/// The table and key of a change, as a message names them.
fn change_what(table: &Table, staged: &Staged, kind: ChangeKind, key: &[String]) -> String {
    let keyed = staged
        .key
        .iter()
        .zip(key)
        .map(|(at, value)| {
            let name = table.fields[staged.fields[*at]].as_deref().unwrap_or("");
            format!("{name}={}", literal(value))
        })
        .collect::<Vec<_>>()
        .join(", ");
    let how = match kind {
        ChangeKind::Insert => "insert into",
        ChangeKind::Update => "update of",
        ChangeKind::Delete => "delete of",
    };
    format!("{how} table {} row {keyed}", table.name)
}

/// One change into its table's net changes.
fn net_change(
    plan: &TablePlan,
    net: &mut NetTable,
    ended: &Committed,
    change: &Change,
) -> Result<(), FollowError> {
    let table = &plan.table;
    let staged = plan.staged.as_ref().expect("a staged table");
    let blobs = ended.blobs_of(&table.format, change)?;
    let decode = |image: &Option<Vec<u8>>| {
        table
            .format
            .decode(image.as_deref().unwrap_or_default(), &blobs)
            .map_err(|e| FollowError::Source(format!("table {}: {e}", table.name)))
    };
    // A before image finds its row by key: its other fields are not read.
    let key_fields: Vec<usize> = staged.key.iter().map(|at| staged.fields[*at]).collect();
    let decode_key = |image: &Option<Vec<u8>>| {
        table
            .format
            .decode_fields(image.as_deref().unwrap_or_default(), &blobs, &key_fields)
            .map_err(|e| FollowError::Source(format!("table {}: {e}", table.name)))
    };
    let text = |values: &[Option<Value>], id: usize| -> Result<Option<String>, FollowError> {
        let name = table.fields[id].as_deref().unwrap_or("");
        match &values[id] {
            Some(value) => value_text(&table.name, name, value),
            None => Ok(None),
        }
    };
    let key_of = |values: &[Option<Value>]| -> Result<Key, FollowError> {
        staged
            .key
            .iter()
            .map(|at| text(values, staged.fields[*at]).map(Option::unwrap_or_default))
            .collect()
    };
    let row_of = |values: &[Option<Value>]| -> Result<Row, FollowError> {
        staged.fields.iter().map(|id| text(values, *id)).collect()
    };
    let transaction = ended.transaction;
    let done = match change.kind {
        ChangeKind::Insert => {
            let after = decode(&change.after)?;
            net.insert(transaction, key_of(&after)?, row_of(&after)?)
        }
        ChangeKind::Update => {
            let before = key_of(&decode_key(&change.before)?)?;
            let after = decode(&change.after)?;
            let key = key_of(&after)?;
            if key == before {
                // The staged columns it changed, from the images' bytes.
                let changed = change
                    .before
                    .as_deref()
                    .zip(change.after.as_deref())
                    .and_then(|(b, a)| table.format.changed_fields(b, a))
                    .map(|by_id| staged.fields.iter().map(|id| by_id[*id]).collect());
                net.update(transaction, key, row_of(&after)?, changed)
            } else {
                net.move_key(transaction, before, key, row_of(&after)?)
            }
        }
        ChangeKind::Delete => net.delete(transaction, key_of(&decode_key(&change.before)?)?),
    };
    done.map_err(|c| {
        FollowError::Target(format!(
            "transaction {}, {}: the journal's earlier changes in this group leave no such row \
             (or one already there); the journal or the table's key is not what the follow \
             took it for: load it again with --overwrite --keep-keys",
            c.transaction,
            change_what(table, staged, c.kind, &c.key)
        ))
    })
}

/// Writes `text` as COPY's text format reads it: the runs between the
/// bytes to escape go in whole (pushed byte by byte, the staging text of
/// 22,000 STOCK rows took 136 ms, benches/follow.sh with PHASES=1).
fn copy_escaped(out: &mut Vec<u8>, text: &str) {
    let bytes = text.as_bytes();
    let mut start = 0;
    for (at, byte) in bytes.iter().enumerate() {
        let escaped: &[u8] = match byte {
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..at]);
        out.extend_from_slice(escaped);
        start = at + 1;
    }
    out.extend_from_slice(&bytes[start..]);
}

/// One table's net changes: staged by COPY, then applied with one
/// statement per operation; deletes and updates must each meet their
/// row, an insert must meet none.
fn apply_net(
    client: &mut Client,
    plan: &mut TablePlan,
    net: &NetTable,
    again: bool,
) -> Result<(), FollowError> {
    let entries: Vec<(&Key, &Net, Op)> = net
        .keys
        .iter()
        .filter_map(|(key, n)| n.op().map(|op| (key, n, op)))
        .collect();
    if entries.is_empty() {
        return Ok(());
    }
    let table = plan.table.clone();
    let failed = |what: &str, e: postgres::Error| pg(&format!("table {}: {what}", table.name), e);
    let staged = plan.staged.as_mut().expect("a staged table");
    let stage = staged.stage.clone();
    let qualified = &plan.qualified;
    let column = |id: usize| ident(&pg_name(table.fields[id].as_deref().unwrap_or("")));
    let columns: Vec<String> = staged.fields.iter().map(|id| column(*id)).collect();
    let list = columns.join(", ");
    let timed = phases::timed("staging table");
    if !staged.created {
        // Typed as the target's columns; emptied at each commit.
        client
            .batch_execute(&format!(
                "CREATE TEMPORARY TABLE IF NOT EXISTS {stage} ON COMMIT DELETE ROWS AS \
                 SELECT 0::smallint AS _fbunload_op, 0::integer AS _fbunload_row, \
                 0::integer AS _fbunload_set, {list} FROM {qualified} WITH NO DATA"
            ))
            .map_err(|e| failed("creating its staging table", e))?;
        staged.created = true;
    } else if again {
        client
            .batch_execute(&format!("TRUNCATE {stage}"))
            .map_err(|e| failed("emptying its staging table", e))?;
    }
    drop(timed);
    let timed = phases::timed("staging text");
    let sets = ColumnSets::gather(&entries, staged.fields.len(), &staged.key);
    let mut data = Vec::with_capacity(net.bytes + entries.len() * 8);
    let mut counts = [0u64; 3];
    for (number, (key, n, op)) in entries.iter().enumerate() {
        counts[*op as usize] += 1;
        // The operation (one digit), the row number and its column set.
        data.push(b'0' + *op as u8);
        data.push(b'\t');
        data.extend_from_slice(number.to_string().as_bytes());
        data.push(b'\t');
        let set = sets.row_set[number];
        data.extend_from_slice(set.to_string().as_bytes());
        match &n.after {
            Some(row) => {
                let columns = &sets.sets[set];
                for (at, value) in row.iter().enumerate() {
                    data.push(b'\t');
                    match value {
                        // A column the UPDATE does not set: not parsed.
                        _ if !columns[at] => data.extend_from_slice(b"\\N"),
                        Some(text) => copy_escaped(&mut data, text),
                        None => data.extend_from_slice(b"\\N"),
                    }
                }
            }
            // A delete: its key alone.
            None => {
                for at in 0..staged.fields.len() {
                    data.push(b'\t');
                    match staged.key.iter().position(|k| *k == at) {
                        Some(i) => copy_escaped(&mut data, &key[i]),
                        None => data.extend_from_slice(b"\\N"),
                    }
                }
            }
        }
        data.push(b'\n');
    }
    drop(timed);
    let timed = phases::timed("staging COPY");
    let mut writer = client
        .copy_in(&format!("COPY {stage} FROM STDIN"))
        .map_err(|e| failed("staging its changes", e))?;
    std::io::Write::write_all(&mut writer, &data).map_err(|e| {
        FollowError::Target(format!("table {}: staging its changes: {e}", table.name))
    })?;
    writer
        .finish()
        .map_err(|e| failed("staging its changes", e))?;
    drop(timed);
    let matches = staged
        .key
        .iter()
        .map(|at| format!("t.{0} = s.{0}", columns[*at]))
        .collect::<Vec<_>>()
        .join(" AND ");
    let missing = |number: &str| -> FollowError {
        let number: usize = number.parse().unwrap_or(0);
        let (key, n, _) = entries[number.min(entries.len() - 1)];
        not_as_firebird_had_it(n.first.0, &change_what(&table, staged, n.first.1, key))
    };
    if counts[Op::Delete as usize] > 0 {
        let _timed = phases::timed("DELETE");
        // The rows a delete did not find, from the rows it deleted.
        let replies = client
            .simple_query(&format!(
                "WITH gone AS (DELETE FROM {qualified} t USING {stage} s \
                 WHERE s._fbunload_op = 0 AND {matches} RETURNING s._fbunload_row) \
                 SELECT s._fbunload_row FROM {stage} s WHERE s._fbunload_op = 0 \
                 AND s._fbunload_row NOT IN (SELECT _fbunload_row FROM gone) LIMIT 1"
            ))
            .map_err(|e| failed("deleting rows", e))?;
        for reply in replies {
            if let postgres::SimpleQueryMessage::Row(row) = reply {
                return Err(missing(row.get(0).unwrap_or("0")));
            }
        }
    }
    if counts[Op::Update as usize] > 0 {
        let _timed = phases::timed("UPDATE");
        // One UPDATE per column set in use, each of its rows.
        let mut updated = 0;
        for (number, set) in sets.sets.iter().enumerate() {
            if !sets.used[number] {
                continue;
            }
            let set = columns
                .iter()
                .zip(set)
                .filter(|(_, on)| **on)
                .map(|(c, _)| format!("{c} = s.{c}"))
                .collect::<Vec<_>>()
                .join(", ");
            updated += client
                .execute(
                    &format!(
                        "UPDATE {qualified} t SET {set} FROM {stage} s \
                         WHERE s._fbunload_op = 1 AND s._fbunload_set = {number} AND {matches}"
                    ),
                    &[],
                )
                .map_err(|e| failed("updating rows", e))?;
        }
        if updated != counts[Op::Update as usize] {
            let row = client
                .query_one(
                    &format!(
                        "SELECT s._fbunload_row::text FROM {stage} s WHERE s._fbunload_op = 1 \
                         AND NOT EXISTS (SELECT 1 FROM {qualified} t WHERE {matches}) LIMIT 1"
                    ),
                    &[],
                )
                .map_err(|e| failed("updating rows", e))?;
            return Err(missing(row.get(0)));
        }
    }
    if counts[Op::Insert as usize] > 0 {
        let _timed = phases::timed("INSERT");
        client
            .execute(
                &format!(
                    "INSERT INTO {qualified} ({list}) SELECT {list} FROM {stage} \
                     WHERE _fbunload_op = 2"
                ),
                &[],
            )
            .map_err(|e| match e.as_db_error() {
                Some(db) if *db.code() == postgres::error::SqlState::UNIQUE_VIOLATION => {
                    FollowError::Target(format!(
                        "table {}: a row Firebird inserted is in PostgreSQL already ({}) (the \
                         target was changed by hand?); load it again with --overwrite --keep-keys",
                        table.name,
                        db.detail().unwrap_or(db.message())
                    ))
                }
                _ => failed("inserting rows", e),
            })?;
    }
    Ok(())
}

/// The sets of columns a table's staged rows carry: set 0 is every
/// column (inserts, deletes, and updates whose columns are not known or
/// would make too many sets); the others are what updates changed, each
/// with the key. Each set in use costs an UPDATE (a pass over the
/// staging table), so past [`MAX_COLUMN_SETS`] updates go whole.
struct ColumnSets {
    sets: Vec<Vec<bool>>,
    /// Whether an update uses the set.
    used: Vec<bool>,
    /// Each entry's set, in the order of the entries.
    row_set: Vec<usize>,
}

const MAX_COLUMN_SETS: usize = 8;

impl ColumnSets {
    fn gather(entries: &[(&Key, &Net, Op)], width: usize, key: &[usize]) -> ColumnSets {
        let mut sets = ColumnSets {
            sets: vec![vec![true; width]],
            used: vec![false],
            row_set: Vec::with_capacity(entries.len()),
        };
        let mut index: HashMap<Vec<bool>, usize> = HashMap::new();
        for (_, n, op) in entries {
            let changed = n
                .changed
                .as_ref()
                .filter(|c| *op == Op::Update && c.len() == width);
            let set = match changed {
                Some(changed) => {
                    let mut columns = changed.clone();
                    for at in key {
                        columns[*at] = true;
                    }
                    match index.get(&columns) {
                        Some(at) => *at,
                        None if sets.sets.len() > MAX_COLUMN_SETS => 0,
                        None => {
                            sets.sets.push(columns.clone());
                            sets.used.push(false);
                            index.insert(columns, sets.sets.len() - 1);
                            sets.sets.len() - 1
                        }
                    }
                }
                None => 0,
            };
            if *op == Op::Update {
                sets.used[set] = true;
            }
            sets.row_set.push(set);
        }
        sets
    }
}

/// The statement that applies `change` to `table` in `schema`.
pub fn statement(
    schema: &str,
    table: &Table,
    change: &Change,
    blobs: &HashMap<BlobId, Vec<u8>>,
) -> Result<Statement, FollowError> {
    let qualified = format!("{}.{}", ident(schema), ident(&pg_name(&table.name)));
    let decode = |image: &Option<Vec<u8>>| -> Result<Vec<(String, String)>, FollowError> {
        let image = image.as_deref().unwrap_or_default();
        let values = table
            .format
            .decode(image, blobs)
            .map_err(|e| FollowError::Source(format!("table {}: {e}", table.name)))?;
        let mut columns = Vec::new();
        for (id, value) in values.iter().enumerate() {
            let (Some(value), Some(Some(name))) = (value, table.fields.get(id)) else {
                continue;
            };
            // A before image's blob: not needed to find the row by key,
            // and not comparable without its bytes.
            if matches!(value, Value::BlobNotCarried(_)) && image_is_before(change, image) {
                continue;
            }
            columns.push((name.clone(), sql_value(&table.name, name, value)?));
        }
        Ok(columns)
    };
    let column = |name: &str| ident(&pg_name(name));
    // The row a change meets: by its key, or by every value (the first
    // of equal rows) in a table without one.
    let locate = |before: &[(String, String)]| -> (String, String) {
        let keyed: Vec<&(String, String)> = if table.key.is_empty() {
            before.iter().collect()
        } else {
            table
                .key
                .iter()
                .filter_map(|id| table.fields.get(*id).and_then(|f| f.as_ref()))
                .filter_map(|name| before.iter().find(|(n, _)| n == name))
                .collect()
        };
        // A key's columns are never null, and `=` (unlike IS NOT
        // DISTINCT FROM) finds the row through the key's index.
        let equal = if table.key.is_empty() {
            "IS NOT DISTINCT FROM"
        } else {
            "="
        };
        let condition = keyed
            .iter()
            .map(|(name, value)| format!("{} {equal} {value}", column(name)))
            .collect::<Vec<_>>()
            .join(" AND ");
        let what = format!(
            "table {} row {}",
            table.name,
            keyed
                .iter()
                .map(|(n, v)| format!("{n}={v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let condition = if table.key.is_empty() {
            format!("ctid = (SELECT ctid FROM {qualified} WHERE {condition} LIMIT 1)")
        } else {
            condition
        };
        (condition, what)
    };
    Ok(match change.kind {
        ChangeKind::Insert => {
            let after = decode(&change.after)?;
            let (_, what) = locate(&after);
            let start = format!(
                "INSERT INTO {qualified} ({})",
                after
                    .iter()
                    .map(|(n, _)| column(n))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let values = format!(
                "({})",
                after
                    .iter()
                    .map(|(_, v)| v.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            Statement {
                sql: format!("{start} VALUES {values}"),
                insert: Some((start, values)),
                what: format!("insert into {what}"),
            }
        }
        ChangeKind::Update => {
            let before = decode(&change.before)?;
            let after = decode(&change.after)?;
            let (condition, what) = locate(&before);
            Statement {
                sql: format!(
                    "UPDATE {qualified} SET {} WHERE {condition}",
                    after
                        .iter()
                        .map(|(n, v)| format!("{} = {v}", column(n)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                what: format!("update of {what}"),
                insert: None,
            }
        }
        ChangeKind::Delete => {
            let before = decode(&change.before)?;
            let (condition, what) = locate(&before);
            Statement {
                sql: format!("DELETE FROM {qualified} WHERE {condition}"),
                what: format!("delete of {what}"),
                insert: None,
            }
        }
    })
}

fn image_is_before(change: &Change, image: &[u8]) -> bool {
    change
        .before
        .as_deref()
        .is_some_and(|before| std::ptr::eq(before, image))
}

/// OCTETS: bytes, not text.
const CHARSET_OCTETS: u8 = 1;

/// A value as an SQL literal PostgreSQL reads into the column the load made.
pub fn sql_value(table: &str, column: &str, value: &Value) -> Result<String, FollowError> {
    Ok(match value_text(table, column, value)? {
        Some(text) => literal(&text),
        None => "NULL".into(),
    })
}

/// A value as the text PostgreSQL's input function for the column the
/// load made reads (`None`: NULL).
pub fn value_text(table: &str, column: &str, value: &Value) -> Result<Option<String>, FollowError> {
    let text = |bytes: &[u8], charset: u8| -> Result<String, FollowError> {
        let out = crate::source::text_of(table, column, bytes, charset)?;
        if out.contains('\0') {
            return Err(FollowError::Source(format!(
                "table {table} column {column}: text with a NUL character, which PostgreSQL text \
                 cannot hold"
            )));
        }
        Ok(out)
    };
    let bytea = |bytes: &[u8]| {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("\\x{hex}")
    };
    Ok(Some(match value {
        Value::Null => return Ok(None),
        Value::Text { bytes, charset } if *charset == CHARSET_OCTETS => bytea(bytes),
        Value::Text { bytes, charset } => text(bytes, *charset)?,
        Value::Blob {
            bytes,
            sub_type: 1,
            charset,
        } if *charset != CHARSET_OCTETS => text(bytes, *charset)?,
        Value::Blob { bytes, .. } => bytea(bytes),
        Value::BlobNotCarried(_) => {
            return Err(FollowError::Source(format!(
                "table {table} column {column}: the journal holds a new row whose blob it does not \
                 carry; the journal is incomplete: load the schema again with --keep-keys"
            )))
        }
        Value::ArrayId(_) => {
            return Err(FollowError::Usage(format!(
                "table {table} column {column}: an ARRAY changed, and arrays do not travel in \
                 Firebird's journal; sync this table by scan (fbunload … --keep-keys) instead"
            )))
        }
        Value::Float(f) => f.to_string(),
        other => other.to_text().unwrap_or_default(),
    }))
}

#[cfg(test)]
mod tests {
    use super::copy_escaped;

    #[test]
    fn copy_text_escapes_backslashes_and_line_and_field_breaks() {
        let mut out = Vec::new();
        for text in ["plain", "", "a\\b\tc\nd\re", "\\\n", "ünï\tcode"] {
            copy_escaped(&mut out, text);
            out.push(b'|');
        }
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "plain||a\\\\b\\tc\\nd\\re|\\\\\\n|ünï\\tcode|"
        );
    }
}
