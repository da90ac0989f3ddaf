//! The PostgreSQL side of a follow: the hand-off a `--keep-keys` load
//! left, the follow's position (`_fbunload_journal`), and each change as
//! a statement whose values are SQL literals, applied with the position
//! in one transaction.
//!
//! Values go in as literals, not parameters: an untyped literal takes the
//! type of the column it meets, so one renderer serves every column type
//! the load made. `standard_conforming_strings` is set on, so a quote
//! doubled is the only escape a text needs (a hostile value is tested).

use std::collections::{BTreeMap, HashMap};

use fbunload_dest_postgres::{ident, pg_name, Target as PgTarget, RUNS_TABLE};
use fbunload_journal::{BlobId, Change, ChangeKind, Journal, Position, Value};
use postgres::Client;

use crate::source::Table;
use crate::{FollowError, FollowOptions};

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
                &[&options.schema],
            )
            .map_err(|e| pg("locking the schema", e))?
            .get(0);
        if !locked {
            return Err(FollowError::Usage(format!(
                "schema {}: another fbunload follow applies the journal to it; stop that one first",
                options.schema
            )));
        }
        Ok(Target {
            client,
            schema: options.schema.clone(),
            sequences: BTreeMap::new(),
            state: String::new(),
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

    fn position_update(&self, end: Position, restart: Position, applied: bool) -> String {
        format!(
            "UPDATE {} SET applied_sequence = {}, applied_offset = {}, restart_sequence = {}, \
             restart_offset = {}, transactions = transactions + {}, updated = now() \
             WHERE state = {}",
            self.position_table(),
            end.sequence,
            end.offset,
            restart.sequence,
            restart.offset,
            u8::from(applied),
            literal(&self.state)
        )
    }

    /// Records a transaction passed over (the load saw it, or it rolled
    /// back without sequences).
    pub fn record_position(&mut self, end: Position, restart: Position) -> Result<(), FollowError> {
        let sql = self.position_update(end, restart, false);
        self.client
            .batch_execute(&sql)
            .map_err(|e| pg("recording the follow's position", e))
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

    /// One transaction's statements and sequences, and the new position,
    /// in one PostgreSQL transaction; each row change must touch one row.
    /// `statements` are made as they are sent, a round trip's worth at a
    /// time, so a big transaction's SQL is never held whole.
    pub fn apply(
        &mut self,
        transaction: u64,
        statements: &mut dyn Iterator<Item = Result<Statement, FollowError>>,
        sequences: &[String],
        end: Position,
        restart: Position,
    ) -> Result<u64, FollowError> {
        let position = self.position_update(end, restart, true);
        let mut tr = self
            .client
            .transaction()
            .map_err(|e| pg("starting a transaction", e))?;
        let mut sent = 0;
        // Many statements to a round trip (the simple query protocol runs
        // them in order and says how many rows each touched).
        loop {
            let chunk = (&mut *statements)
                .take(STATEMENTS_PER_TRIP)
                .collect::<Result<Vec<_>, _>>()?;
            if chunk.is_empty() {
                break;
            }
            sent += chunk.len() as u64;
            // Inserts in a row into one table: one statement, many rows.
            let mut text = String::new();
            let mut expected: Vec<(u64, &Statement)> = Vec::new();
            for (i, statement) in chunk.iter().enumerate() {
                let previous = i.checked_sub(1).map(|p| &chunk[p]);
                match (&statement.insert, previous.and_then(|p| p.insert.as_ref())) {
                    (Some((start, values)), Some((previous_start, _)))
                        if start == previous_start =>
                    {
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
                expected.push((1, statement));
            }
            let replies = tr.simple_query(&text).map_err(|e| {
                let what = match &chunk[..] {
                    [one] => one.what.clone(),
                    _ => format!("one of {} row changes", chunk.len()),
                };
                pg(&format!("transaction {transaction}, {what}"), e)
            })?;
            let touched = replies.iter().filter_map(|reply| match reply {
                postgres::SimpleQueryMessage::CommandComplete(rows) => Some(*rows),
                _ => None,
            });
            for ((rows_expected, statement), rows) in expected.iter().zip(touched) {
                if rows != *rows_expected {
                    return Err(FollowError::Target(format!(
                        "transaction {transaction}, {}: the row is not in PostgreSQL as Firebird \
                         had it (the target was changed by hand?); load it again with \
                         --overwrite --keep-keys",
                        statement.what
                    )));
                }
            }
        }
        for sql in sequences {
            tr.batch_execute(sql)
                .map_err(|e| pg(&format!("transaction {transaction}, sequences"), e))?;
        }
        tr.batch_execute(&position)
            .map_err(|e| pg("recording the follow's position", e))?;
        tr.commit()
            .map_err(|e| pg(&format!("committing transaction {transaction}"), e))?;
        Ok(sent)
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
    let text = |bytes: &[u8], charset: u8| -> Result<String, FollowError> {
        let out = crate::source::text_of(table, column, bytes, charset)?;
        if out.contains('\0') {
            return Err(FollowError::Source(format!(
                "table {table} column {column}: text with a NUL character, which PostgreSQL text \
                 cannot hold"
            )));
        }
        Ok(literal(&out))
    };
    let bytea = |bytes: &[u8]| {
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        format!("'\\x{hex}'")
    };
    Ok(match value {
        Value::Null => "NULL".into(),
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
        Value::Float(f) => literal(&f.to_string()),
        other => literal(&other.to_text().unwrap_or_default()),
    })
}
