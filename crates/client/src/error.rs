//! Errors of the client layer. A Firebird error keeps the engine's own text
//! (what a DBA will search for) plus the codes the layers above use to tell
//! a wrong password from a lost connection.

use crate::ffi::{gds, IscStatus, StatusVector};

/// An error reported by Firebird through a status vector.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{message}")]
pub struct FbError {
    /// The engine's messages, one per line, as `fb_interpret` renders them.
    pub message: String,
    /// Every GDS code in the status vector, outermost first.
    pub codes: Vec<StatusCode>,
    /// The legacy SQLCODE.
    pub sqlcode: i32,
}

impl FbError {
    pub(crate) fn from_status(api: &crate::ffi::Api, status: &StatusVector) -> FbError {
        let mut lines = Vec::new();
        let mut cursor: *const IscStatus = status.as_ptr();
        let mut buf = [0 as std::os::raw::c_char; 1024];
        // SAFETY: `cursor` walks the status vector that Firebird filled in;
        // fb_interpret stops at its isc_arg_end.
        unsafe {
            while (api.fb_interpret)(buf.as_mut_ptr(), buf.len() as u32, &mut cursor) > 0 {
                let text = std::ffi::CStr::from_ptr(buf.as_ptr()).to_string_lossy();
                lines.push(text.trim_start_matches('-').to_string());
            }
        }
        let sqlcode = unsafe { (api.isc_sqlcode)(status.as_ptr()) };
        FbError {
            message: if lines.is_empty() {
                format!("Firebird error {}", status[1])
            } else {
                lines.join("; ")
            },
            codes: gds_codes(status),
            sqlcode,
        }
    }

    pub fn has_code(&self, code: isize) -> bool {
        self.codes.iter().any(|c| c.code == code)
    }

    /// Wrong user name or password (or no such user).
    /// The client asked for no wire encryption and the server requires it
    /// (or the other way round).
    pub fn is_wire_crypt_mismatch(&self) -> bool {
        self.has_code(gds::WIRECRYPT_INCOMPATIBLE)
    }

    pub fn is_login_failure(&self) -> bool {
        self.has_code(gds::LOGIN)
    }

    /// The server could not be reached or the connection broke.
    pub fn is_connection_failure(&self) -> bool {
        [
            gds::NETWORK_ERROR,
            gds::NET_CONNECT_ERR,
            gds::NET_READ_ERR,
            gds::NET_WRITE_ERR,
            gds::CONN_LOST,
            gds::ATT_SHUTDOWN,
            gds::BAD_DB_HANDLE,
            gds::SHUTDOWN,
        ]
        .iter()
        .any(|c| self.has_code(*c))
    }

    /// Another engine instance holds the database file: a server, or a
    /// process that opened it with its own embedded engine.
    pub fn is_held_by_another_engine(&self) -> bool {
        self.has_code(gds::ALREADY_OPENED)
    }

    /// The database's on-disk structure is one this engine cannot open:
    /// what it found and what it supports.
    pub fn unsupported_ods(&self) -> Option<OdsMismatch> {
        let wrong = self.codes.iter().find(|c| c.code == gds::WRONG_ODS)?;
        let ods = |major: isize, minor: isize| Ods {
            major: major as u16,
            minor: minor as u16,
        };
        match wrong.numbers[..] {
            [major, minor, engine_major, engine_minor, ..] => Some(OdsMismatch {
                found: ods(major, minor),
                supported: ods(engine_major, engine_minor),
            }),
            _ => None,
        }
    }

    /// The database file is missing, unreadable or not a Firebird database.
    pub fn is_database_missing(&self) -> bool {
        [
            gds::IO_ERROR,
            gds::IO_OPEN_ERR,
            gds::BAD_DB_FORMAT,
            gds::UNAVAILABLE,
        ]
        .iter()
        .any(|c| self.has_code(*c))
    }
}

/// A database's on-disk structure version (ODS), which says which
/// Firebird version wrote it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ods {
    pub major: u16,
    pub minor: u16,
}

impl Ods {
    /// The Firebird version that writes this structure, e.g. "Firebird 3.0"
    /// for 12.0; None for one this table does not know. Minor versions
    /// past the one a release creates are that release's (Firebird 3.0
    /// reports 12.2 as the newest it supports).
    pub fn firebird_version(self) -> Option<&'static str> {
        Some(match (self.major, self.minor) {
            (10, 0) => "Firebird 1.0",
            (10, _) => "Firebird 1.5",
            (11, 0) => "Firebird 2.0",
            (11, 1) => "Firebird 2.1",
            (11, _) => "Firebird 2.5",
            (12, _) => "Firebird 3.0",
            (13, 0) => "Firebird 4.0",
            (13, 1) => "Firebird 5.0",
            _ => return None,
        })
    }
}

impl std::fmt::Display for Ods {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// What an engine reports when it cannot open a database's on-disk
/// structure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OdsMismatch {
    /// The database's.
    pub found: Ods,
    /// The newest the engine opens.
    pub supported: Ods,
}

/// One GDS code of a status vector with the numbers reported with it
/// (`isc_arg_number`), such as the versions of an unsupported on-disk
/// structure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusCode {
    pub code: isize,
    pub numbers: Vec<isize>,
}

/// Walks an `isc_arg_*` encoded status vector and collects the GDS codes.
fn gds_codes(status: &StatusVector) -> Vec<StatusCode> {
    const ARG_END: isize = 0;
    const ARG_GDS: isize = 1;
    const ARG_CSTRING: isize = 3;
    const ARG_NUMBER: isize = 4;
    let mut codes: Vec<StatusCode> = Vec::new();
    let mut i = 0;
    while i + 1 < status.len() && status[i] != ARG_END {
        let kind = status[i];
        if kind == ARG_GDS {
            codes.push(StatusCode {
                code: status[i + 1],
                numbers: Vec::new(),
            });
        } else if kind == ARG_NUMBER {
            if let Some(last) = codes.last_mut() {
                last.numbers.push(status[i + 1]);
            }
        }
        // isc_arg_cstring carries a length and a pointer; all others one value.
        i += if kind == ARG_CSTRING { 3 } else { 2 };
    }
    codes
}

/// Everything that can go wrong in the client layer.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot load the Firebird client library: {0}")]
    Load(String),
    #[error(transparent)]
    Firebird(#[from] FbError),
    #[error("{0}")]
    Invalid(String),
}

impl ClientError {
    pub fn firebird(&self) -> Option<&FbError> {
        match self {
            ClientError::Firebird(e) => Some(e),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(code: isize, numbers: &[isize]) -> StatusCode {
        StatusCode {
            code,
            numbers: numbers.to_vec(),
        }
    }

    #[test]
    fn gds_codes_skips_string_arguments() {
        let mut status: StatusVector = [0; 20];
        // gds(login) string("x") gds(io_error) end
        status[..6].copy_from_slice(&[1, gds::LOGIN, 2, 0x1234, 1, gds::IO_ERROR]);
        assert_eq!(
            gds_codes(&status),
            vec![code(gds::LOGIN, &[]), code(gds::IO_ERROR, &[])]
        );
    }

    #[test]
    fn on_disk_structures_name_the_firebird_that_writes_them() {
        let ods = |major, minor| Ods { major, minor };
        assert_eq!(ods(12, 0).firebird_version(), Some("Firebird 3.0"));
        assert_eq!(ods(12, 2).firebird_version(), Some("Firebird 3.0"));
        assert_eq!(ods(13, 0).firebird_version(), Some("Firebird 4.0"));
        assert_eq!(ods(13, 1).firebird_version(), Some("Firebird 5.0"));
        assert_eq!(ods(99, 0).firebird_version(), None);
    }

    #[test]
    fn gds_codes_keep_their_numbers() {
        let mut status: StatusVector = [0; 20];
        // gds(wrong_ods) string(file) number(12) number(0) number(13) number(1) end
        status[..12].copy_from_slice(&[1, gds::WRONG_ODS, 2, 0x1234, 4, 12, 4, 0, 4, 13, 4, 1]);
        assert_eq!(
            gds_codes(&status),
            vec![code(gds::WRONG_ODS, &[12, 0, 13, 1])]
        );
    }
}
