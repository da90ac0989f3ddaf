//! Raw bindings to the ISC API of `libfbclient`, resolved with `dlsym` when
//! the library is loaded. Only what fbunload calls is bound; constants carry
//! the names of Firebird's public headers so they can be checked against them.

use std::os::raw::{c_char, c_short, c_uint, c_ushort, c_void};

/// `ISC_STATUS` is `intptr_t` in the public headers.
pub type IscStatus = isize;
/// `FB_API_HANDLE` is a 32-bit `unsigned int` on LP64 platforms.
pub type Handle = c_uint;
pub const STATUS_LEN: usize = 20;
pub type StatusVector = [IscStatus; STATUS_LEN];

/// XSQLVAR as laid out by `sqlda_pub.h`.
#[repr(C)]
#[derive(Clone, Copy)]
pub struct XsqlVar {
    pub sqltype: c_short,
    pub sqlscale: c_short,
    pub sqlsubtype: c_short,
    pub sqllen: c_short,
    pub sqldata: *mut c_char,
    pub sqlind: *mut c_short,
    pub sqlname_length: c_short,
    pub sqlname: [c_char; 32],
    pub relname_length: c_short,
    pub relname: [c_char; 32],
    pub ownname_length: c_short,
    pub ownname: [c_char; 32],
    pub aliasname_length: c_short,
    pub aliasname: [c_char; 32],
}

/// The XSQLDA header; `sqlvar` is really `sqln` entries long.
#[repr(C)]
pub struct Xsqlda {
    pub version: c_short,
    pub sqldaid: [c_char; 8],
    pub sqldabc: i32,
    pub sqln: c_short,
    pub sqld: c_short,
    pub sqlvar: [XsqlVar; 1],
}

pub const SQLDA_VERSION1: c_ushort = 1;
pub const SQL_DIALECT_V6: c_ushort = 3;
pub const DSQL_CLOSE: c_ushort = 1;
pub const DSQL_DROP: c_ushort = 2;

/// `ISC_TEB`, one entry of `isc_start_multiple`.
#[repr(C)]
pub struct Teb {
    pub db_ptr: *mut Handle,
    pub tpb_len: i32,
    pub tpb_ptr: *const c_char,
}

/// SQL type codes of XSQLVAR.sqltype (without the nullable bit).
pub mod sql_type {
    pub const TEXT: i16 = 452;
    pub const VARYING: i16 = 448;
    pub const SHORT: i16 = 500;
    pub const LONG: i16 = 496;
    pub const FLOAT: i16 = 482;
    pub const DOUBLE: i16 = 480;
    pub const D_FLOAT: i16 = 530;
    pub const TIMESTAMP: i16 = 510;
    pub const BLOB: i16 = 520;
    pub const ARRAY: i16 = 540;
    pub const QUAD: i16 = 550;
    pub const TYPE_TIME: i16 = 560;
    pub const TYPE_DATE: i16 = 570;
    pub const INT64: i16 = 580;
    pub const TIMESTAMP_TZ_EX: i16 = 32748;
    pub const TIME_TZ_EX: i16 = 32750;
    pub const INT128: i16 = 32752;
    pub const TIMESTAMP_TZ: i16 = 32754;
    pub const TIME_TZ: i16 = 32756;
    pub const DEC16: i16 = 32760;
    pub const DEC34: i16 = 32762;
    pub const BOOLEAN: i16 = 32764;
    pub const NULL: i16 = 32766;
}

/// Parameter-block and info-item codes from `consts_pub.h` / `inf_pub.h`.
pub mod item {
    pub const DPB_VERSION1: u8 = 1;
    pub const DPB_NO_GARBAGE_COLLECT: u8 = 16;
    pub const DPB_USER_NAME: u8 = 28;
    pub const DPB_PASSWORD: u8 = 29;
    pub const DPB_LC_CTYPE: u8 = 48;
    pub const DPB_SQL_ROLE_NAME: u8 = 60;
    pub const DPB_CONFIG: u8 = 87;

    pub const TPB_VERSION3: u8 = 3;
    pub const TPB_CONCURRENCY: u8 = 2;
    pub const TPB_WAIT: u8 = 6;
    pub const TPB_READ: u8 = 8;
    pub const TPB_WRITE: u8 = 9;
    pub const TPB_READ_COMMITTED: u8 = 15;
    pub const TPB_REC_VERSION: u8 = 17;
    pub const TPB_AT_SNAPSHOT_NUMBER: u8 = 23;
    pub const TPB_LOCK_TIMEOUT: u8 = 21;
    /// `fb_cancel_operation`'s kind: cancel what the attachment is doing.
    pub const CANCEL_RAISE: u16 = 3;
    pub const CANCEL_ABORT: u16 = 4;

    pub const INFO_END: u8 = 1;
    pub const INFO_TRUNCATED: u8 = 2;
    pub const INFO_ERROR: u8 = 3;
    pub const INFO_PAGE_SIZE: u8 = 14;
    pub const INFO_FIREBIRD_VERSION: u8 = 103;
    pub const INFO_TRA_ID: u8 = 4;
    pub const INFO_TRA_SNAPSHOT_NUMBER: u8 = 12;
    pub const INFO_TRA_OLDEST_INTERESTING: u8 = 5;
    pub const INFO_TRA_OLDEST_SNAPSHOT: u8 = 6;
    pub const INFO_TRA_OLDEST_ACTIVE: u8 = 7;
}

/// GDS status codes fbunload reacts to (`isc_base` + message number).
pub mod gds {
    const BASE: isize = 335_544_320;
    pub const BAD_DB_FORMAT: isize = BASE + 3;
    pub const BAD_DB_HANDLE: isize = BASE + 4;
    pub const WRONG_ODS: isize = BASE + 59;
    pub const IO_ERROR: isize = BASE + 24;
    pub const SEGMENT: isize = BASE + 46;
    pub const SEGSTR_EOF: isize = BASE + 47;
    pub const UNAVAILABLE: isize = BASE + 55;
    pub const SHUTDOWN: isize = BASE + 208;
    pub const LOGIN: isize = BASE + 152;
    pub const CONN_LOST: isize = BASE + 328;
    pub const NETWORK_ERROR: isize = BASE + 401;
    pub const NET_CONNECT_ERR: isize = BASE + 402;
    pub const NET_READ_ERR: isize = BASE + 406;
    pub const NET_WRITE_ERR: isize = BASE + 407;
    pub const IO_OPEN_ERR: isize = BASE + 414;
    pub const ATT_SHUTDOWN: isize = BASE + 536;
    pub const ALREADY_OPENED: isize = BASE + 787;
    pub const WIRECRYPT_INCOMPATIBLE: isize = BASE + 744;
}

/// The functions fbunload uses, resolved once per loaded library.
pub struct Api {
    pub isc_attach_database: unsafe extern "C" fn(
        *mut IscStatus,
        c_short,
        *const c_char,
        *mut Handle,
        c_short,
        *const c_char,
    ) -> IscStatus,
    pub isc_detach_database: unsafe extern "C" fn(*mut IscStatus, *mut Handle) -> IscStatus,
    pub isc_database_info: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        c_short,
        *const c_char,
        c_short,
        *mut c_char,
    ) -> IscStatus,
    pub isc_start_multiple:
        unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_short, *mut Teb) -> IscStatus,
    pub isc_commit_transaction: unsafe extern "C" fn(*mut IscStatus, *mut Handle) -> IscStatus,
    pub isc_rollback_transaction: unsafe extern "C" fn(*mut IscStatus, *mut Handle) -> IscStatus,
    pub isc_transaction_info: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        c_short,
        *const c_char,
        c_short,
        *mut c_char,
    ) -> IscStatus,
    pub isc_dsql_allocate_statement:
        unsafe extern "C" fn(*mut IscStatus, *mut Handle, *mut Handle) -> IscStatus,
    pub isc_dsql_prepare: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        c_ushort,
        *const c_char,
        c_ushort,
        *mut Xsqlda,
    ) -> IscStatus,
    pub isc_dsql_describe:
        unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort, *mut Xsqlda) -> IscStatus,
    pub isc_dsql_execute: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        c_ushort,
        *const Xsqlda,
    ) -> IscStatus,
    pub isc_dsql_fetch:
        unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort, *const Xsqlda) -> IscStatus,
    pub isc_dsql_free_statement:
        unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort) -> IscStatus,
    pub isc_dsql_execute_immediate: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        c_ushort,
        *const c_char,
        c_ushort,
        *const Xsqlda,
    ) -> IscStatus,
    pub isc_open_blob2: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        *mut Handle,
        *mut [u8; 8],
        c_ushort,
        *const u8,
    ) -> IscStatus,
    pub isc_get_segment: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut c_ushort,
        c_ushort,
        *mut c_char,
    ) -> IscStatus,
    pub isc_close_blob: unsafe extern "C" fn(*mut IscStatus, *mut Handle) -> IscStatus,
    pub isc_get_slice: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        *mut [u8; 8],
        c_ushort,
        *const u8,
        c_ushort,
        *const i32,
        i32,
        *mut c_void,
        *mut i32,
    ) -> IscStatus,
    pub isc_put_slice: unsafe extern "C" fn(
        *mut IscStatus,
        *mut Handle,
        *mut Handle,
        *mut [u8; 8],
        c_ushort,
        *const c_char,
        c_ushort,
        *const i32,
        i32,
        *mut c_void,
    ) -> IscStatus,
    pub fb_interpret: unsafe extern "C" fn(*mut c_char, c_uint, *mut *const IscStatus) -> i32,
    pub isc_sqlcode: unsafe extern "C" fn(*const IscStatus) -> i32,
    /// Interrupts an attachment's running call (Firebird 2.5 and later).
    pub fb_cancel_operation:
        Option<unsafe extern "C" fn(*mut IscStatus, *mut Handle, c_ushort) -> IscStatus>,
    /// The OO API's entry points (Firebird 4 client libraries and later),
    /// used to fetch rows as messages; `None` fetches through the XSQLDA.
    pub message: Option<crate::message::Entry>,
}

impl Api {
    /// Resolves every symbol; fails with the first missing one's name.
    ///
    /// # Safety
    /// The returned pointers are valid only while `lib` stays loaded.
    pub unsafe fn resolve(lib: &libloading::Library) -> Result<Api, String> {
        macro_rules! sym {
            ($name:ident) => {
                *lib.get(concat!(stringify!($name), "\0").as_bytes())
                    .map_err(|_| stringify!($name).to_string())?
            };
        }
        Ok(Api {
            isc_attach_database: sym!(isc_attach_database),
            isc_detach_database: sym!(isc_detach_database),
            isc_database_info: sym!(isc_database_info),
            isc_start_multiple: sym!(isc_start_multiple),
            isc_commit_transaction: sym!(isc_commit_transaction),
            isc_rollback_transaction: sym!(isc_rollback_transaction),
            isc_transaction_info: sym!(isc_transaction_info),
            isc_dsql_allocate_statement: sym!(isc_dsql_allocate_statement),
            isc_dsql_prepare: sym!(isc_dsql_prepare),
            isc_dsql_describe: sym!(isc_dsql_describe),
            isc_dsql_execute: sym!(isc_dsql_execute),
            isc_dsql_fetch: sym!(isc_dsql_fetch),
            isc_dsql_free_statement: sym!(isc_dsql_free_statement),
            isc_dsql_execute_immediate: sym!(isc_dsql_execute_immediate),
            isc_open_blob2: sym!(isc_open_blob2),
            isc_get_segment: sym!(isc_get_segment),
            isc_close_blob: sym!(isc_close_blob),
            isc_get_slice: sym!(isc_get_slice),
            isc_put_slice: sym!(isc_put_slice),
            fb_interpret: sym!(fb_interpret),
            isc_sqlcode: sym!(isc_sqlcode),
            fb_cancel_operation: lib.get(b"fb_cancel_operation\0").ok().map(|s| *s),
            message: message_entry(lib),
        })
    }
}

/// The OO API entry points, unless the library lacks them or
/// `FBUNLOAD_FETCH_API=isc` asks for the XSQLDA path (to compare the two).
///
/// # Safety
/// As for [`Api::resolve`].
unsafe fn message_entry(lib: &libloading::Library) -> Option<crate::message::Entry> {
    if std::env::var_os("FBUNLOAD_FETCH_API").is_some_and(|v| v == "isc") {
        return None;
    }
    let master: unsafe extern "C" fn() -> *mut crate::message::Object =
        *lib.get(b"fb_get_master_interface\0").ok()?;
    let master = master();
    if master.is_null() {
        return None;
    }
    Some(crate::message::Entry {
        master,
        statement_interface: *lib.get(b"fb_get_statement_interface\0").ok()?,
        transaction_interface: *lib.get(b"fb_get_transaction_interface\0").ok()?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn xsqlvar_layout_matches_the_c_header() {
        // 4 shorts, 2 pointers, then 4 (length, name[32]) pairs.
        assert_eq!(std::mem::size_of::<XsqlVar>(), 160);
        assert_eq!(std::mem::offset_of!(XsqlVar, sqldata), 8);
        assert_eq!(std::mem::offset_of!(XsqlVar, sqlname), 26);
        assert_eq!(std::mem::offset_of!(Xsqlda, sqlvar), 24);
    }
}
