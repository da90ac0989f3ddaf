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
    pub codes: Vec<isize>,
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
        self.codes.contains(&code)
    }

    /// Wrong user name or password (or no such user).
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

/// Walks an `isc_arg_*` encoded status vector and collects the GDS codes.
fn gds_codes(status: &StatusVector) -> Vec<isize> {
    const ARG_END: isize = 0;
    const ARG_GDS: isize = 1;
    const ARG_CSTRING: isize = 3;
    let mut codes = Vec::new();
    let mut i = 0;
    while i + 1 < status.len() && status[i] != ARG_END {
        let kind = status[i];
        if kind == ARG_GDS {
            codes.push(status[i + 1]);
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

    #[test]
    fn gds_codes_skips_string_arguments() {
        let mut status: StatusVector = [0; 20];
        // gds(login) string("x") gds(io_error) end
        status[..6].copy_from_slice(&[1, gds::LOGIN, 2, 0x1234, 1, gds::IO_ERROR]);
        assert_eq!(gds_codes(&status), vec![gds::LOGIN, gds::IO_ERROR]);
    }
}
