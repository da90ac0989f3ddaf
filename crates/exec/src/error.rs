//! Errors of a run, each naming what failed and, where we know, what to do.

use std::path::PathBuf;

use fbunload_client::ClientError;
use fbunload_decode::DecodeError;
use fbunload_plan::{printable, CatalogError};

/// An I/O failure, with the file it happened on.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct OutputError {
    pub path: PathBuf,
    #[source]
    pub source: std::io::Error,
}

#[derive(Debug, thiserror::Error)]
pub enum ExecError {
    #[error("{0}")]
    Client(ClientError),
    #[error("cannot attach to {database}: {reason}")]
    Attach { database: String, reason: String },
    #[error("{0}")]
    Catalog(#[from] CatalogError),
    #[error("output directory {path}: {reason}")]
    OutputDir { path: PathBuf, reason: String },
    /// Table names here are [`printable`]: they come from the database.
    #[error("table {table}: writing {0}", .source)]
    Output {
        table: String,
        #[source]
        source: OutputError,
    },
    #[error("table {table}: {message}")]
    Table { table: String, message: String },
    #[error("{0}")]
    Server(String),
    /// Options that do not fit together or this database.
    #[error("{0}")]
    Usage(String),
    #[error("table {table}: the worker's connection was lost: {message}")]
    ConnectionLost { table: String, message: String },
    #[error("--verify found different row counts: {0}")]
    Verify(String),
    #[error("interrupted; unfinished tables were removed")]
    Interrupted,
    #[error(
        "snapshot {number} is closed (its holder closed it or lost its connection), so \
         nothing can be read at it any more; read again at a new snapshot"
    )]
    SnapshotClosed { number: u64 },
}

impl ExecError {
    /// Turns an attach failure into a message that says what to check.
    pub fn attach(database: &str, user: Option<&str>, err: ClientError) -> ExecError {
        let Some(fb) = err.firebird() else {
            return ExecError::Client(err);
        };
        let who = user.unwrap_or("the default user");
        let reason = if fb.is_login_failure() {
            format!("wrong user name or password for {who} (check -u/-p or ISC_USER/ISC_PASSWORD)")
        } else if fb.is_connection_failure() {
            format!("the server cannot be reached ({}); check the host, port and that Firebird is running", fb.message)
        } else if fb.is_database_missing() {
            format!("no usable database there ({}); check the path", fb.message)
        } else {
            fb.message.clone()
        };
        ExecError::Attach {
            database: database.to_string(),
            reason,
        }
    }

    pub fn table(table: &str, what: impl std::fmt::Display) -> ExecError {
        ExecError::Table {
            table: printable(table).into_owned(),
            message: what.to_string(),
        }
    }

    pub(crate) fn from_decode(table: &str, err: DecodeError) -> ExecError {
        Self::table(table, err)
    }

    /// A failure writing `path` for `table`.
    pub fn output(table: &str, path: impl Into<PathBuf>, source: std::io::Error) -> ExecError {
        ExecError::Output {
            table: printable(table).into_owned(),
            source: OutputError {
                path: path.into(),
                source,
            },
        }
    }

    pub(crate) fn from_client(table: &str, err: ClientError) -> ExecError {
        match err.firebird() {
            Some(fb) if fb.is_connection_failure() => ExecError::ConnectionLost {
                table: printable(table).into_owned(),
                message: fb.message.clone(),
            },
            _ => Self::table(table, err),
        }
    }

    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ExecError::ConnectionLost { .. })
    }
}
