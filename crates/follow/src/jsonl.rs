//! `fbunload follow -o - --format jsonl`: one JSON object per row change
//! on standard output, for consumers other than PostgreSQL (Kafka and
//! friends): `op` (insert, update, delete; `sequence` for a sequence
//! moved, `sql` for a statement such as DDL, with its text), `table`, `key` (the primary key's columns, of the row before
//! an update or delete; every column in a table without one), `after`
//! (the new row; null for a delete), `transaction`, `position` (where the
//! transaction ends in the journal) and `resume` (give the last one
//! handled to `--from` to go on after it). The journal holds no commit
//! times, so events carry none. Exactly once is the consumer's to keep,
//! by storing `resume` with what it did with the event.

use std::collections::HashMap;
use std::io::Write;

use base64::Engine;
use fbunload_journal::{BlobId, ChangeKind, Committed, Position, Value};
use serde_json::{json, Map, Value as Json};

use crate::source::{Source, Table};
use crate::FollowError;

/// The writer of events.
pub struct JsonLines<W: Write> {
    out: W,
}

/// `resume` as `--from` takes it: where to read again from, and the end
/// of the last transaction handled.
pub fn resume_text(restart: Position, end: Position) -> String {
    format!("{restart}/{end}")
}

/// A `--from` value: `RESTART/APPLIED` (an event's `resume`) or one
/// position for both.
pub fn parse_resume(text: &str) -> Result<(Position, Position), String> {
    let position = |part: &str| -> Result<Position, String> {
        let (sequence, offset) = part.split_once(':').ok_or_else(|| bad(text))?;
        Ok(Position {
            sequence: sequence.parse().map_err(|_| bad(text))?,
            offset: offset.parse().map_err(|_| bad(text))?,
        })
    };
    match text.split_once('/') {
        Some((restart, applied)) => Ok((position(restart)?, position(applied)?)),
        None => {
            let at = position(text)?;
            Ok((at, at))
        }
    }
}

fn bad(text: &str) -> String {
    format!(
        "--from {text:?}: give the `resume` of the last event handled (SEQUENCE:OFFSET/\
         SEQUENCE:OFFSET)"
    )
}

impl<W: Write> JsonLines<W> {
    pub fn new(out: W) -> Self {
        JsonLines { out }
    }

    /// The events of one ended transaction; returns the row changes.
    pub fn write(
        &mut self,
        source: &mut Source,
        ended: &Committed,
        restart: Position,
    ) -> Result<u64, FollowError> {
        let resume = resume_text(restart, ended.end);
        let position = ended.end.to_string();
        let mut lines = Vec::new();
        // DDL goes out as it was run: a stream's consumer decides.
        for (user, _, sql) in &ended.statements {
            lines.push(json!({
                "op": "sql",
                "statement": String::from_utf8_lossy(sql),
                "user": user,
                "transaction": ended.transaction,
                "position": position,
                "resume": resume,
            }));
        }
        let stdout = |e: std::io::Error| FollowError::Target(format!("standard output: {e}"));
        // Each change written as it is read: a big transaction is never
        // held whole.
        for change in ended.changes() {
            let change = change?;
            let table = source.table(&change.table)?;
            let blobs = ended.blobs_of(&table.format, &change)?;
            let before = row(&table, change.before.as_deref(), &blobs)?;
            let after = row(&table, change.after.as_deref(), &blobs)?;
            let keyed = if change.kind == ChangeKind::Insert {
                &after
            } else {
                &before
            };
            let key: Map<String, Json> = match &table.key[..] {
                [] => keyed.clone().unwrap_or_default(),
                key => key
                    .iter()
                    .filter_map(|id| table.fields.get(*id).cloned().flatten())
                    .filter_map(|name| {
                        let value = keyed.as_ref()?.get(&name)?.clone();
                        Some((name, value))
                    })
                    .collect(),
            };
            let op = match change.kind {
                ChangeKind::Insert => "insert",
                ChangeKind::Update => "update",
                ChangeKind::Delete => "delete",
            };
            let event = json!({
                "op": op,
                "table": table.name,
                "key": key,
                "after": after.map(Json::Object).unwrap_or(Json::Null),
                "transaction": ended.transaction,
                "position": position,
                "resume": resume,
            });
            // The statements (DDL) came first.
            for line in lines.drain(..) {
                write_line(&mut self.out, &line).map_err(stdout)?;
            }
            write_line(&mut self.out, &event).map_err(stdout)?;
        }
        for (name, value) in &ended.sequences {
            lines.push(json!({
                "op": "sequence",
                "name": name,
                "value": value,
                "transaction": ended.transaction,
                "position": position,
                "resume": resume,
            }));
        }
        for line in &lines {
            write_line(&mut self.out, line).map_err(stdout)?;
        }
        self.out.flush().map_err(stdout)?;
        Ok(ended.change_count() as u64)
    }
}

fn write_line(out: &mut impl Write, line: &Json) -> std::io::Result<()> {
    serde_json::to_writer(&mut *out, line)?;
    out.write_all(b"\n")
}

fn row(
    table: &Table,
    image: Option<&[u8]>,
    blobs: &HashMap<BlobId, Vec<u8>>,
) -> Result<Option<Map<String, Json>>, FollowError> {
    let Some(image) = image else { return Ok(None) };
    let values = table
        .format
        .decode(image, blobs)
        .map_err(|e| FollowError::Source(format!("table {}: {e}", table.name)))?;
    let mut out = Map::new();
    for (id, value) in values.iter().enumerate() {
        let (Some(value), Some(Some(name))) = (value, table.fields.get(id)) else {
            continue;
        };
        if let Some(json) = json_value(&table.name, name, value)? {
            out.insert(name.clone(), json);
        }
    }
    Ok(Some(out))
}

/// A value in JSON: integers without decimals as numbers, exact decimals,
/// dates and times as text (as `Value::to_text`), binary as base64;
/// `None` for a blob of the row before that the journal does not carry.
fn json_value(table: &str, column: &str, value: &Value) -> Result<Option<Json>, FollowError> {
    let text = |bytes: &[u8], charset: u8| {
        crate::source::text_of(table, column, bytes, charset).map(Json::String)
    };
    let base64 =
        |bytes: &[u8]| Json::String(base64::engine::general_purpose::STANDARD.encode(bytes));
    Ok(Some(match value {
        Value::Null => Json::Null,
        Value::BlobNotCarried(_) => return Ok(None),
        Value::Boolean(b) => Json::Bool(*b),
        Value::Integer { value, scale: 0 } if i64::try_from(*value).is_ok() => {
            Json::from(*value as i64)
        }
        Value::Float(f) => serde_json::Number::from_f64(f64::from(*f)).map_or_else(
            || Json::String(value.to_text().unwrap_or_default()),
            Json::Number,
        ),
        Value::Double(d) => serde_json::Number::from_f64(*d).map_or_else(
            || Json::String(value.to_text().unwrap_or_default()),
            Json::Number,
        ),
        Value::Text { bytes, charset: 1 } => base64(bytes),
        Value::Text { bytes, charset } => text(bytes, *charset)?,
        Value::Blob {
            bytes,
            sub_type: 1,
            charset,
        } if *charset != 1 => text(bytes, *charset)?,
        Value::Blob { bytes, .. } => base64(bytes),
        Value::ArrayId(_) => {
            return Err(FollowError::Usage(format!(
                "table {table} column {column}: an ARRAY changed, and arrays do not travel in \
                 Firebird's journal"
            )))
        }
        other => Json::String(other.to_text().unwrap_or_default()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resume_goes_round_and_nonsense_is_refused() {
        let restart = Position {
            sequence: 3,
            offset: 48,
        };
        let end = Position {
            sequence: 4,
            offset: 900,
        };
        assert_eq!(parse_resume(&resume_text(restart, end)), Ok((restart, end)));
        assert_eq!(parse_resume("4:900"), Ok((end, end)));
        assert!(parse_resume("4;900").unwrap_err().contains("resume"));
    }
}
