//! The Firebird side of a follow: the database's identity, whether it
//! publishes, and each table's record format, field names and key, read
//! once per table and kept (a change of a table's format comes with DDL
//! in the journal, which stops the follow).

use std::collections::HashMap;
use std::sync::Arc;

use fbunload_client::{Attachment, Client, ConnectOptions, Transaction, TransactionMode};
use fbunload_journal::RecordFormat;
use fbunload_plan::catalog::{int, query, text};

use crate::{FollowError, FollowOptions};

/// A table as the journal's rows need it.
#[derive(Debug, Clone)]
pub struct Table {
    pub name: String,
    /// Field names by field id (`None`: no such field any more).
    pub fields: Vec<Option<String>>,
    /// The primary key's field ids, in key order; empty without one.
    pub key: Vec<usize>,
    pub format: RecordFormat,
}

pub struct Source {
    attachment: Attachment,
    /// `RDB$GET_CONTEXT('SYSTEM', 'DB_GUID')`.
    pub guid: String,
    /// The database file's name, which starts its segments' names.
    pub file_name: String,
    tables: HashMap<String, Arc<Table>>,
}

fn client_error(what: &str, e: impl std::fmt::Display) -> FollowError {
    FollowError::Source(format!("{what}: {e}"))
}

impl Source {
    pub fn open(options: &FollowOptions) -> Result<Source, FollowError> {
        let timed = crate::phases::timed("firebird client library");
        let client = Client::load(options.client_library.as_deref())
            .map_err(|e| FollowError::Source(e.to_string()))?;
        drop(timed);
        let timed = crate::phases::timed("firebird attach");
        let attachment = Attachment::connect(
            &client,
            &ConnectOptions {
                database: options.database.clone(),
                user: options.user.clone(),
                password: options.password.clone(),
                charset: "UTF8".into(),
                ..Default::default()
            },
        )
        .map_err(|e| client_error(&options.database, e))?;
        drop(timed);
        let _timed = crate::phases::timed("firebird database identity");
        let mut source = Source {
            attachment,
            guid: String::new(),
            file_name: String::new(),
            tables: HashMap::new(),
        };
        let (guid, path, publishing) = source.read(|tr| {
            let mut found = (String::new(), String::new(), false);
            query(
                tr,
                "SELECT RDB$GET_CONTEXT('SYSTEM', 'DB_GUID'), RDB$GET_CONTEXT('SYSTEM', 'DB_NAME'), \
                 (SELECT COUNT(*) FROM RDB$PUBLICATIONS WHERE RDB$ACTIVE_FLAG = 1) \
                 FROM RDB$DATABASE",
                |row| {
                    found = (text(row, 0), text(row, 1), int(row, 2).unwrap_or(0) > 0);
                },
            )?;
            Ok(found)
        })?;
        if !publishing {
            return Err(FollowError::Usage(format!(
                "{}: the database publishes no changes to its replication journal; run ALTER \
                 DATABASE ENABLE PUBLICATION and ALTER DATABASE INCLUDE ALL TO PUBLICATION, with \
                 journal_directory and journal_archive_directory set in replication.conf \
                 (docs/postgresql.md, \"Live\")",
                options.database
            )));
        }
        source.guid = guid;
        source.file_name = std::path::Path::new(&path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or(path);
        Ok(source)
    }

    fn read<T>(
        &self,
        each: impl FnOnce(&Transaction) -> Result<T, fbunload_client::ClientError>,
    ) -> Result<T, FollowError> {
        let tr = self
            .attachment
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .map_err(|e| client_error("reading the catalog", e))?;
        each(&tr).map_err(|e| client_error("reading the catalog", e))
    }

    /// The table the journal names `name`.
    pub fn table(&mut self, name: &str) -> Result<Arc<Table>, FollowError> {
        if let Some(table) = self.tables.get(name) {
            return Ok(table.clone());
        }
        let literal = format!("'{}'", name.replace('\'', "''"));
        let (fields, key, descriptor) = self.read(|tr| {
            let mut fields: Vec<Option<String>> = Vec::new();
            query(
                tr,
                &format!(
                    "SELECT RDB$FIELD_NAME, RDB$FIELD_ID FROM RDB$RELATION_FIELDS \
                     WHERE RDB$RELATION_NAME = {literal}"
                ),
                |row| {
                    let id = int(row, 1).unwrap_or(0) as usize;
                    if fields.len() <= id {
                        fields.resize(id + 1, None);
                    }
                    fields[id] = Some(text(row, 0));
                },
            )?;
            let mut key_names = Vec::new();
            query(
                tr,
                &format!(
                    "SELECT s.RDB$FIELD_NAME FROM RDB$RELATION_CONSTRAINTS c \
                     JOIN RDB$INDEX_SEGMENTS s ON s.RDB$INDEX_NAME = c.RDB$INDEX_NAME \
                     WHERE c.RDB$RELATION_NAME = {literal} \
                     AND c.RDB$CONSTRAINT_TYPE = 'PRIMARY KEY' ORDER BY s.RDB$FIELD_POSITION"
                ),
                |row| key_names.push(text(row, 0)),
            )?;
            let mut blob = None;
            query(
                tr,
                &format!(
                    "SELECT f.RDB$DESCRIPTOR FROM RDB$RELATIONS r JOIN RDB$FORMATS f \
                     ON f.RDB$RELATION_ID = r.RDB$RELATION_ID AND f.RDB$FORMAT = r.RDB$FORMAT \
                     WHERE r.RDB$RELATION_NAME = {literal}"
                ),
                |row| blob = row.value(0).map(|v| <[u8; 8]>::try_from(v).unwrap()),
            )?;
            let mut descriptor = Vec::new();
            if let Some(id) = blob {
                tr.read_blob(&id, &mut descriptor)?;
            }
            let key = key_names
                .iter()
                .filter_map(|k| fields.iter().position(|f| f.as_deref() == Some(k)))
                .collect::<Vec<_>>();
            Ok((fields, key, descriptor))
        })?;
        if descriptor.is_empty() {
            return Err(FollowError::Source(format!(
                "table {name}: the journal changes it, but the database has no format of it \
                 (dropped or renamed since): load the schema again with --keep-keys"
            )));
        }
        let format = RecordFormat::parse(&descriptor)
            .map_err(|e| FollowError::Source(format!("table {name}: {e}")))?;
        let table = Arc::new(Table {
            name: name.to_string(),
            fields,
            key,
            format,
        });
        self.tables.insert(name.to_string(), table.clone());
        Ok(table)
    }
}

impl Source {
    /// The computed columns of table `name` (`COMPUTED BY`): no record
    /// holds them, so the journal does not carry them.
    pub fn computed_columns(&self, name: &str) -> Result<Vec<String>, FollowError> {
        let literal = format!("'{}'", name.replace('\'', "''"));
        self.read(|tr| {
            let mut computed = Vec::new();
            query(
                tr,
                &format!(
                    "SELECT rf.RDB$FIELD_NAME FROM RDB$RELATION_FIELDS rf JOIN RDB$FIELDS f \
                     ON f.RDB$FIELD_NAME = rf.RDB$FIELD_SOURCE \
                     WHERE rf.RDB$RELATION_NAME = {literal} AND f.RDB$COMPUTED_BLR IS NOT NULL"
                ),
                |row| computed.push(text(row, 0)),
            )?;
            Ok(computed)
        })
    }
}

/// Text of a column in Firebird's character set `charset`, as UTF-8
/// (NONE is taken as UTF-8, checked).
pub fn text_of(
    table: &str,
    column: &str,
    bytes: &[u8],
    charset: u8,
) -> Result<String, FollowError> {
    let decoder = fbunload_decode::TextDecoder::for_charset_id(charset)
        .unwrap_or(fbunload_decode::TextDecoder::UTF8);
    let mut out = String::new();
    decoder.decode_into(bytes, &mut out).map_err(|at| {
        FollowError::Source(format!(
            "table {table} column {column}: text not valid in its character set at byte {at}"
        ))
    })?;
    Ok(out)
}
