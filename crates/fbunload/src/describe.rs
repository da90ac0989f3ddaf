//! The manifest a run into a directory leaves behind, built from what the
//! run was asked (the builder's options) and what it did (its plan,
//! schemas and summary).
//!
//! It names the database as given and nothing else of the connection: no
//! user, role or password, so a manifest can be shared with the files.

use std::collections::BTreeMap;
use std::time::SystemTime;

use arrow_schema::SchemaRef;
use fbunload_dest::{Manifest, ManifestColumn, ManifestTable, MANIFEST_VERSION};
use fbunload_format::{Format, PartLimits, Setting};
use fbunload_plan::{Plan, TableFilter};
use serde_json::Value;

use crate::{Consistency, RunOptions, Summary};

/// What a run was asked, beyond the plan it made.
pub(crate) struct Request<'a> {
    pub database: &'a str,
    pub filter: &'a TableFilter,
    pub options: &'a RunOptions,
    pub format: &'a Format,
    pub part_limits: PartLimits,
    pub started: SystemTime,
}

pub(crate) fn manifest(
    request: &Request<'_>,
    plan: &Plan,
    schemas: &[SchemaRef],
    summary: &Summary,
) -> Manifest {
    let tables = plan
        .tables
        .iter()
        .zip(schemas)
        .zip(&summary.tables)
        .map(|((table, schema), written)| ManifestTable {
            name: table.name.clone(),
            kind: table.kind.as_str().into(),
            query: table.query.clone(),
            split_by: table.split_by.clone(),
            rows: written.rows,
            bytes: written.bytes,
            verified: summary.verified,
            condition: table.condition.clone(),
            columns: table
                .columns
                .iter()
                .zip(&table.declared_types)
                .zip(schema.fields())
                .map(|((name, declared), field)| ManifestColumn {
                    name: name.clone(),
                    firebird_type: declared.clone(),
                    arrow_type: field.data_type().to_string(),
                })
                .collect(),
            files: written.files.iter().cloned().map(Into::into).collect(),
            change: None,
        })
        .collect();
    Manifest {
        manifest_version: MANIFEST_VERSION,
        fbunload_version: env!("CARGO_PKG_VERSION").into(),
        server_version: Some(summary.start.server_version.clone())
            .filter(|version| !version.is_empty()),
        database: request.database.into(),
        snapshot_number: summary.start.snapshot_number,
        consistency: match summary.start.consistency {
            Consistency::SharedSnapshot => "one snapshot",
            Consistency::OneTransaction => "one transaction",
            Consistency::SnapshotPerReader => "a snapshot per worker",
        }
        .into(),
        started: rfc3339(request.started),
        finished: rfc3339(SystemTime::now()),
        options: options(request, plan, summary),
        tables,
        files: Vec::new(),
        incremental: None,
        state_of: None,
        resumed: None,
    }
}

/// The options the links of a chain of incremental runs must agree on:
/// those that change a value as written (a --charset decodes text
/// otherwise) or which tables a run holds (a table a narrower --tables
/// leaves out is not dropped). Absent from a manifest, each is as the
/// command line's default.
pub(crate) const CHAIN_OPTIONS: &[(&str, Option<&str>)] = &[
    ("format", None),
    ("charset", Some("\"UTF8\"")),
    ("decimal256", Some("false")),
    ("null", None),
    ("binary", None),
    ("tables", None),
    ("exclude", None),
];

/// The run's options, named as on the command line.
fn options(request: &Request<'_>, plan: &Plan, summary: &Summary) -> BTreeMap<String, Value> {
    let mut options = requested(request);
    let mut set = |name: &str, value: Value| {
        options.insert(name.to_string(), value);
    };
    set("workers", summary.start.workers.into());
    set("processes", summary.start.processes.into());
    set("unit_pages", plan.unit_pages.into());
    options
}

/// The options a run was asked for, as [`options`] records them: known
/// before it starts.
pub(crate) fn requested(request: &Request<'_>) -> BTreeMap<String, Value> {
    let mut options = BTreeMap::new();
    let mut set = |name: &str, value: Value| {
        options.insert(name.to_string(), value);
    };
    for (name, setting) in request.format.settings() {
        set(
            name,
            match setting {
                Setting::Flag(on) => Value::from(on),
                Setting::Count(n) => Value::from(n),
                Setting::Text(text) => Value::from(text),
            },
        );
    }
    if let Some(rows) = request.part_limits.rows {
        set("max_rows", rows.into());
    }
    if let Some(bytes) = request.part_limits.bytes {
        set("max_bytes", bytes.into());
    }
    if let Some(pattern) = &request.filter.include {
        set("tables", pattern.as_str().into());
    }
    if let Some(pattern) = &request.filter.exclude {
        set("exclude", pattern.as_str().into());
    }
    if let Some(pattern) = &request.filter.views {
        set("views", pattern.as_str().into());
    }
    let run = request.options;
    set("parallel", run.parallel.into());
    set("verify", run.verify.into());
    set("allow_inconsistent", run.allow_inconsistent.into());
    set("decimal256", run.types.decimal256.into());
    set("charset", run.types.none_text.charset_name().into());
    options
}

/// `2025-01-31T09:30:00.123Z`.
fn rfc3339(time: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(time).to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_rfc3339_in_utc() {
        let time = SystemTime::UNIX_EPOCH + std::time::Duration::from_millis(1_700_000_000_123);
        assert_eq!(rfc3339(time), "2023-11-14T22:13:20.123Z");
    }
}
