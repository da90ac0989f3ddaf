//! Errors of a run, each naming what failed and, where we know, what to do.

use std::path::PathBuf;

use fbunload_client::{is_plain_path, ClientError, ConnectOptions, Ods, OdsMismatch};
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
    #[error("--verify found differences: {0}")]
    Verify(String),
    #[error(
        "interrupted; nothing of this run was kept (an output directory holds what it held \
         before): run the same command again"
    )]
    Interrupted,
    /// A `--resumable` run stopped: what it finished stays for `--resume`.
    #[error(
        "interrupted; the output directory holds what it held before, and the units this run \
         finished are kept in {area}: run the same command with --resume to go on from them \
         (--overwrite starts again)"
    )]
    InterruptedResumable { area: String },
    /// Table names in `subject` are [`printable`].
    #[error(
        "{subject}: no answer from the database for {seconds} s: the server or the network \
         stopped answering (a stopped or stuck server, a connection dropped without being \
         closed), so fbunload closed its connections and kept nothing of this run. Check the \
         server and try again, or wait longer with --stall-timeout SECONDS (0: no limit)"
    )]
    Stalled { subject: String, seconds: u64 },
    /// A reader process that is stopped (SIGSTOP, job control, a
    /// debugger) answered nothing for the stall limit.
    #[error(
        "{process} is stopped (by a signal or a debugger) and answered nothing for {seconds} s \
         ({subject} waited on it), so fbunload ended its reader processes and kept nothing of \
         this run. Run fbunload again and let its readers run (no SIGSTOP); --processes 0 \
         reads with threads only"
    )]
    ReaderStopped {
        process: String,
        subject: String,
        seconds: u64,
    },
    #[error(
        "snapshot {number} is closed (its holder closed it or lost its connection), so \
         nothing can be read at it any more; read again at a new snapshot"
    )]
    SnapshotClosed { number: u64 },
    /// A bug: a thread of the run panicked.
    #[error(
        "internal error (a bug in fbunload; please report it), nothing of this run was \
         kept: {0}"
    )]
    Internal(String),
}

impl ExecError {
    /// Turns an attach failure into a message that says what to do.
    pub fn attach(connect: &ConnectOptions, err: ClientError) -> ExecError {
        let Some(fb) = err.firebird() else {
            return ExecError::Client(err);
        };
        let database = connect.database.as_str();
        let who = connect.user.as_deref().unwrap_or("the default user");
        let reason = if fb.is_login_failure() && connect.password.is_none() {
            // The server only says the login failed; the likely cause is ours.
            match &connect.user {
                Some(user) => {
                    format!("no password given for {user}: use -p/--password or ISC_PASSWORD")
                }
                None => "no user name or password given: use -u/--user and -p/--password, or \
                         ISC_USER and ISC_PASSWORD"
                    .into(),
            }
        } else if fb.is_login_failure() {
            format!("wrong user name or password for {who} (check -u/-p or ISC_USER/ISC_PASSWORD)")
        } else if fb.is_wire_crypt_mismatch() {
            match connect.wire.crypt {
                Some(fbunload_client::WireCrypt::Disabled) => "the server requires wire \
                    encryption (its WireCrypt = Required): leave out --wire-crypt disabled"
                    .into(),
                _ => "the server does not encrypt its wire (its WireCrypt = Disabled): use \
                      --wire-crypt enabled or disabled"
                    .into(),
            }
        } else if fb.is_held_by_another_engine() {
            held_by_another_engine(database)
        } else if let Some(ods) = fb.unsupported_ods() {
            unsupported_ods(database, ods)
        } else if fb.is_connection_failure() && is_plain_path(database) {
            // A client library without an engine of its own (a server's
            // client, Debian's libfbclient2) sends a plain path to a server
            // on this machine, and says only that none answered.
            no_embedded_engine(database)
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

    /// What kind of failure this is, in one word every front end uses:
    /// Python's exception class, `--progress json`'s error event.
    /// `usage`: options, names or patterns to fix; `output`: the output
    /// directory or a file in it; `verify`: `--verify` counted otherwise;
    /// `interrupted`; `snapshot_closed`; `internal`: a bug; `database`:
    /// attaching, reading, the server.
    pub fn kind(&self) -> &'static str {
        match self {
            ExecError::Usage(_)
            | ExecError::Catalog(CatalogError::BadPattern { .. } | CatalogError::NoTables(_)) => {
                "usage"
            }
            ExecError::OutputDir { .. } | ExecError::Output { .. } => "output",
            ExecError::Verify(_) => "verify",
            ExecError::Interrupted | ExecError::InterruptedResumable { .. } => "interrupted",
            ExecError::SnapshotClosed { .. } => "snapshot_closed",
            ExecError::Internal(_) => "internal",
            _ => "database",
        }
    }

    pub fn is_connection_lost(&self) -> bool {
        matches!(self, ExecError::ConnectionLost { .. })
    }

    /// Writing failed because the reader of a pipe went away, as when
    /// `fbunload -o - | head` has read enough: the end of the output, not
    /// a fault of the run.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, ExecError::Output { source, .. }
            if source.source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// The DSN that reaches `path` through a server on this machine.
fn through_local_server(path: &str) -> String {
    let absolute =
        std::path::absolute(path).map_or_else(|_| path.into(), |p| p.display().to_string());
    format!("-d localhost:{absolute}")
}

/// A plain path, which needs an embedded engine, opened with a client
/// library that has none.
fn no_embedded_engine(database: &str) -> String {
    format!(
        "no embedded Firebird engine was found: a plain path is opened with the engine of the \
         firebird-embedded package (pip install firebird-embedded, or from a checkout of \
         fbunload pip install '.[embedded]'), or name an engine's libfbclient with \
         --client-lib; the client \
         library loaded can only reach a server, e.g. {}",
        through_local_server(database)
    )
}

/// The engine found the file opened by another engine instance: with a
/// plain path, most likely a server that owns it.
fn held_by_another_engine(database: &str) -> String {
    if is_plain_path(database) {
        format!(
            "this database is in use by a Firebird server (or another process): connect \
             through it, e.g. {}",
            through_local_server(database)
        )
    } else {
        "the server cannot open the file: another process holds it with an engine of its own \
         (embedded); stop that process or have it connect through the server"
            .into()
    }
}

/// A database from another Firebird version: say which, and where it can
/// be read.
fn unsupported_ods(database: &str, ods: OdsMismatch) -> String {
    let described = |o: Ods| match o.firebird_version() {
        Some(version) => format!("{version} (on-disk structure {o})"),
        None => format!("a Firebird version with on-disk structure {o}"),
    };
    let server = match ods.found.firebird_version() {
        Some(version) => format!("a {version} server"),
        None => "a server of the version that wrote it".into(),
    };
    let (engine, example) = if is_plain_path(database) {
        (
            "the embedded engine",
            format!(", e.g. {}", through_local_server(database)),
        )
    } else {
        ("this server", String::new())
    };
    format!(
        "this database was written by {}, which {engine}, {}, cannot open: connect through \
         {server}{example}",
        described(ods.found),
        described(ods.supported)
    )
}
