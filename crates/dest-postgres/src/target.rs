//! Where a run loads: a libpq-style URI, with the password libpq would
//! use where the URI has none (`PGPASSWORD`, then the password file), and
//! never shown.

use std::path::PathBuf;
use std::time::Duration;

use postgres::config::Host;
use postgres::{Client, Config};

use crate::tls::{ConnectError, TlsSettings};

/// A PostgreSQL database to load into.
#[derive(Clone)]
pub struct Target {
    config: Config,
    /// sslmode and its certificates, which rust-postgres does not parse.
    tls: TlsSettings,
    /// `user@host:port/dbname`, for messages: no password.
    shown: String,
}

impl std::fmt::Debug for Target {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.shown)
    }
}

/// Whether `-o` names a PostgreSQL database rather than a directory.
pub fn is_postgres_uri(output: &str) -> bool {
    output.starts_with("postgresql://") || output.starts_with("postgres://")
}

impl Target {
    /// Parses `postgresql://USER[:PASSWORD]@HOST[:PORT]/DBNAME[?...]`
    /// (or `postgres://`). What the URI leaves out comes from `PGHOST`,
    /// `PGPORT`, `PGUSER`, `PGDATABASE` and the password from
    /// `PGPASSWORD` or `~/.pgpass` (`PGPASSFILE`), as libpq does.
    pub fn parse(uri: &str) -> Result<Target, String> {
        if !is_postgres_uri(uri) {
            return Err("a PostgreSQL target is postgresql://USER@HOST:PORT/DBNAME".into());
        }
        let (uri_without_tls, tls) =
            TlsSettings::take_from_uri(uri).map_err(|e| format!("{}: {e}", shown_uri(uri)))?;
        let mut config: Config = uri_without_tls.parse().map_err(|e| {
            // The parser's message never holds the password; the URI might.
            format!(
                "{}: not a PostgreSQL URI ({e}); use postgresql://USER@HOST:PORT/DBNAME",
                shown_uri(uri)
            )
        })?;
        let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        if config.get_hosts().is_empty() {
            config.host(&env("PGHOST").unwrap_or_else(|| "localhost".into()));
        }
        if config.get_ports().is_empty() {
            let port = match env("PGPORT") {
                Some(p) => p
                    .parse()
                    .map_err(|_| format!("PGPORT {p:?} is not a port number"))?,
                None => 5432,
            };
            config.port(port);
        }
        if config.get_user().is_none() {
            let user = env("PGUSER")
                .or_else(|| env("USER"))
                .ok_or("the PostgreSQL URI names no user (postgresql://USER@HOST/DBNAME)")?;
            config.user(&user);
        }
        let user = config.get_user().unwrap_or_default().to_string();
        if config.get_dbname().is_none() {
            config.dbname(&env("PGDATABASE").unwrap_or_else(|| user.clone()));
        }
        let host = match config.get_hosts().first() {
            Some(Host::Tcp(h)) => h.clone(),
            #[cfg(unix)]
            Some(Host::Unix(p)) => p.display().to_string(),
            None => "localhost".into(),
        };
        let port = config.get_ports().first().copied().unwrap_or(5432);
        let dbname = config.get_dbname().unwrap_or_default().to_string();
        if config.get_password().is_none() {
            if let Some(password) =
                env("PGPASSWORD").or_else(|| password_file_entry(&host, port, &dbname, &user))
            {
                config.password(password);
            }
        }
        config.connect_timeout(Duration::from_secs(30));
        config.application_name("fbunload");
        Ok(Target {
            shown: format!("postgresql://{user}@{host}:{port}/{dbname}"),
            config,
            tls,
        })
    }

    /// The target as messages name it (no password).
    pub fn shown(&self) -> &str {
        &self.shown
    }

    /// A new connection, or one line that says why not.
    pub fn connect(&self) -> Result<Client, String> {
        self.tls.connect(&self.config).map_err(|e| {
            let e = match e {
                ConnectError::Postgres(e) => e,
                ConnectError::Settings(reason) => {
                    return format!("cannot connect to {}: {reason}", self.shown)
                }
            };
            let reason = match e.as_db_error() {
                Some(db) => db.message().to_string(),
                None => std::error::Error::source(&e)
                    .map_or_else(|| e.to_string(), |s| format!("{e}: {s}")),
            };
            // rustls names the failed check; say what to change.
            let hint = if reason.contains("UnknownIssuer") {
                " (no root in sslrootcert signed the server's certificate: name its CA, or \
                 sslmode=require to encrypt without checking)"
            } else if reason.contains("not valid for name") {
                " (sslmode=verify-full: connect by a name the certificate holds, or \
                 sslmode=verify-ca to check the chain only)"
            } else {
                ""
            };
            format!("cannot connect to {}: {reason}{hint}", self.shown)
        })
    }
}

/// The URI without its password, for a message.
fn shown_uri(uri: &str) -> String {
    let (scheme, rest) = uri.split_once("://").unwrap_or(("", uri));
    match rest.split_once('@') {
        Some((login, host)) => {
            let user = login.split(':').next().unwrap_or("");
            format!("{scheme}://{user}@{host}")
        }
        None => uri.to_string(),
    }
}

/// The password of the first line of the password file that matches,
/// as libpq reads it: `host:port:database:user:password`, `*` matching
/// anything, `\:` and `\\` escaped; a file others can read is ignored.
fn password_file_entry(host: &str, port: u16, dbname: &str, user: &str) -> Option<String> {
    let path = std::env::var_os("PGPASSFILE")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".pgpass")))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&path).ok()?.permissions().mode();
        if mode & 0o077 != 0 {
            return None;
        }
    }
    let text = std::fs::read_to_string(path).ok()?;
    let port = port.to_string();
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|line| {
            let fields = split_escaped(line);
            if fields.len() != 5 {
                return None;
            }
            let host_matches = fields[0] == "*"
                || fields[0] == host
                || (fields[0] == "localhost" && host == "127.0.0.1");
            let matches = |field: &str, value: &str| field == "*" || field == value;
            (host_matches
                && matches(&fields[1], &port)
                && matches(&fields[2], dbname)
                && matches(&fields[3], user))
            .then(|| fields[4].clone())
        })
}

fn split_escaped(line: &str) -> Vec<String> {
    let mut fields = vec![String::new()];
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(next) = chars.next() {
                    fields.last_mut().unwrap().push(next);
                }
            }
            ':' if fields.len() < 5 => fields.push(String::new()),
            c => fields.last_mut().unwrap().push(c),
        }
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_is_never_shown() {
        let t = Target::parse("postgresql://ann:s3cret@db.example:5433/shop").unwrap();
        assert_eq!(t.shown(), "postgresql://ann@db.example:5433/shop");
        assert!(!format!("{t:?}").contains("s3cret"));
        let e = Target::parse("postgresql://ann:s3cret@db.example:notaport/shop").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
        assert!(e.contains("not a PostgreSQL URI"), "{e}");
        assert!(Target::parse("mysql://x@y/z").is_err());
    }

    #[test]
    fn password_file_lines_split_on_unescaped_colons() {
        assert_eq!(
            split_escaped(r"h:5432:*:u:pa\:ss\\"),
            vec!["h", "5432", "*", "u", r"pa:ss\"]
        );
        assert_eq!(
            split_escaped("a:b:c:d:e:f"),
            vec!["a", "b", "c", "d", "e:f"]
        );
    }
}
