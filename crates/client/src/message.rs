//! Fetching through the OO API's `IResultSet::fetchNext`, for statements
//! prepared with the ISC API.
//!
//! Why: `isc_dsql_fetch` is the OO API underneath plus a copy of every
//! value from the engine's message into the XSQLDA's slots. Fetching the
//! message itself skips that copy; measured on a 2,000,000-row STOCK table
//! (`examples/fetch_api.rs`) it reads 10% more rows per second. Everything
//! else (attach, prepare, describe, blobs, info calls) stays on the ISC API:
//! `fb_get_statement_interface` and `fb_get_transaction_interface` (Firebird
//! 4 client libraries and later) hand out the interfaces behind its handles.
//! With an older client library, or if a message's layout is not what the
//! XSQLDA described, the statement keeps fetching through the XSQLDA.
//!
//! The interfaces are reached through their method tables, laid out as
//! Firebird's `FirebirdInterface.idl` declares them: an object is
//! `{dummy, vtable}`, a vtable `{dummy, version, methods...}` with the
//! inherited methods first. Only the methods used here are bound.

use std::ffi::{c_int, c_uint, c_void};

use crate::ffi::{Handle, IscStatus, StatusVector, STATUS_LEN};
use crate::statement::ColumnDesc;

/// An interface object of the OO API.
#[repr(C)]
pub struct Object {
    _dummy: *mut c_void,
    vtable: *const *const c_void,
}

/// Entry points of the OO API, when the client library has them.
pub struct Entry {
    pub master: *mut Object,
    pub statement_interface:
        unsafe extern "C" fn(*mut IscStatus, *mut *mut Object, *mut Handle) -> IscStatus,
    pub transaction_interface:
        unsafe extern "C" fn(*mut IscStatus, *mut *mut Object, *mut Handle) -> IscStatus,
}

// SAFETY: the master interface is a process-wide singleton that Firebird
// documents as usable from any thread.
unsafe impl Send for Entry {}
unsafe impl Sync for Entry {}

/// Method indices, counted from the root interface's first method.
mod index {
    pub const MASTER_GET_STATUS: usize = 0;
    pub const RELEASE: usize = 1; // ReferenceCounted: addRef, release
    pub const STATUS_DISPOSE: usize = 0;
    pub const STATUS_INIT: usize = 1;
    pub const STATUS_GET_STATE: usize = 2;
    pub const STATUS_GET_ERRORS: usize = 7;
    pub const STATEMENT_OPEN_CURSOR: usize = 9;
    pub const RESULT_SET_FETCH_NEXT: usize = 2;
    pub const RESULT_SET_GET_METADATA: usize = 10;
    pub const RESULT_SET_CLOSE: usize = 13;
    pub const METADATA_GET_COUNT: usize = 2;
    pub const METADATA_GET_TYPE: usize = 7;
    pub const METADATA_GET_LENGTH: usize = 10;
    pub const METADATA_GET_OFFSET: usize = 13;
    pub const METADATA_GET_NULL_OFFSET: usize = 14;
    pub const METADATA_GET_MESSAGE_LENGTH: usize = 16;
}

const STATE_ERRORS: c_uint = 0x02;
const RESULT_OK: c_int = 0;
const RESULT_NO_DATA: c_int = 1;

/// The `index`-th method of `object`.
///
/// # Safety
/// `object` must be a live interface whose method at `index` has type `F`.
unsafe fn method<F: Copy>(object: *mut Object, index: usize) -> F {
    let slot = (*object).vtable.add(2 + index);
    std::mem::transmute_copy::<*const c_void, F>(&*slot)
}

type Call0 = unsafe extern "C" fn(*mut Object);
type Returns<T> = unsafe extern "C" fn(*mut Object) -> T;
type WithStatus<T> = unsafe extern "C" fn(*mut Object, *mut Object) -> T;
type WithStatusIndex<T> = unsafe extern "C" fn(*mut Object, *mut Object, c_uint) -> T;
type OpenCursor = unsafe extern "C" fn(
    *mut Object,
    *mut Object,
    *mut Object,
    *mut Object,
    *mut c_void,
    *mut Object,
    c_uint,
) -> *mut Object;
type FetchNext = unsafe extern "C" fn(*mut Object, *mut Object, *mut c_void) -> c_int;

/// An `IStatus`, owned.
struct Status(*mut Object);

impl Status {
    fn new(entry: &Entry) -> Status {
        // SAFETY: getStatus on the master interface returns a new status.
        Status(unsafe {
            method::<Returns<*mut Object>>(entry.master, index::MASTER_GET_STATUS)(entry.master)
        })
    }

    fn failed(&self) -> bool {
        // SAFETY: a live status.
        unsafe {
            method::<Returns<c_uint>>(self.0, index::STATUS_GET_STATE)(self.0) & STATE_ERRORS != 0
        }
    }

    fn reset(&self) {
        // SAFETY: a live status.
        unsafe { method::<Call0>(self.0, index::STATUS_INIT)(self.0) }
    }

    /// The errors as an ISC status vector, whole arguments only.
    fn to_vector(&self) -> StatusVector {
        // SAFETY: getErrors returns an isc_arg_end-terminated vector owned
        // by the status, alive until the status changes.
        let errors = unsafe {
            method::<Returns<*const IscStatus>>(self.0, index::STATUS_GET_ERRORS)(self.0)
        };
        let mut out: StatusVector = [0; STATUS_LEN];
        if errors.is_null() {
            return out;
        }
        let mut i = 0;
        loop {
            // SAFETY: reading up to the terminator of a well-formed vector.
            let kind = unsafe { *errors.add(i) };
            let width = if kind == 3 { 3 } else { 2 }; // isc_arg_cstring: length + pointer
            if kind == 0 || i + width >= STATUS_LEN {
                break;
            }
            for k in 0..width {
                out[i + k] = unsafe { *errors.add(i + k) };
            }
            i += width;
        }
        out
    }
}

impl Drop for Status {
    fn drop(&mut self) {
        // SAFETY: our own status, disposed once.
        unsafe { method::<Call0>(self.0, index::STATUS_DISPOSE)(self.0) }
    }
}

fn release(object: *mut Object) {
    if !object.is_null() {
        // SAFETY: a reference we hold, released once.
        unsafe {
            method::<Returns<c_int>>(object, index::RELEASE)(object);
        }
    }
}

/// A failed call's errors as an ISC status vector (boxed: errors are rare,
/// fetches are not).
pub type Failure = Box<StatusVector>;

/// Where each column's value and NULL flag sit in a message buffer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Layout {
    pub offsets: Vec<usize>,
    pub null_offsets: Vec<usize>,
}

/// A statement's OO interfaces and, while open, its cursor.
pub struct MessageCursor {
    status: Status,
    statement: *mut Object,
    transaction: *mut Object,
    result_set: *mut Object,
    /// 8-byte aligned, as the message's offsets assume.
    pub buffer: Vec<u64>,
    pub layout: Layout,
}

// SAFETY: a cursor is used by one thread at a time, like the ISC handles it
// wraps; Firebird's interfaces carry no thread affinity.
unsafe impl Send for MessageCursor {}

impl MessageCursor {
    /// The interfaces behind a prepared statement's and a transaction's
    /// handles; `None` when the library cannot give them.
    pub fn new(
        entry: &Entry,
        mut statement: Handle,
        mut transaction: Handle,
    ) -> Option<MessageCursor> {
        let mut status: StatusVector = [0; STATUS_LEN];
        let mut cursor = MessageCursor {
            status: Status::new(entry),
            statement: std::ptr::null_mut(),
            transaction: std::ptr::null_mut(),
            result_set: std::ptr::null_mut(),
            buffer: Vec::new(),
            layout: Layout::default(),
        };
        // SAFETY: the handles are live; each call adds a reference that
        // Drop releases.
        unsafe {
            (entry.statement_interface)(status.as_mut_ptr(), &mut cursor.statement, &mut statement);
            if status[1] != 0 || cursor.statement.is_null() {
                return None;
            }
            (entry.transaction_interface)(
                status.as_mut_ptr(),
                &mut cursor.transaction,
                &mut transaction,
            );
            if status[1] != 0 || cursor.transaction.is_null() {
                return None;
            }
        }
        Some(cursor)
    }

    /// Opens the cursor. `Ok(false)`: the message does not hold the columns
    /// as `columns` describes them (the caller fetches through the XSQLDA).
    pub fn open(&mut self, columns: &[ColumnDesc]) -> Result<bool, Failure> {
        self.close();
        self.status.reset();
        // SAFETY: live interfaces; no input message; the statement's own
        // output format.
        let result_set = unsafe {
            method::<OpenCursor>(self.statement, index::STATEMENT_OPEN_CURSOR)(
                self.statement,
                self.status.0,
                self.transaction,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                0,
            )
        };
        if self.status.failed() || result_set.is_null() {
            return Err(Box::new(self.status.to_vector()));
        }
        self.result_set = result_set;
        match self.read_layout(columns)? {
            Some((layout, length)) => {
                if self.layout != layout || self.buffer.len() * 8 < length {
                    self.buffer = vec![0u64; length.div_ceil(8).max(1)];
                    self.layout = layout;
                }
                Ok(true)
            }
            None => {
                self.close();
                Ok(false)
            }
        }
    }

    /// The message's layout, if its fields match `columns` one for one.
    fn read_layout(&self, columns: &[ColumnDesc]) -> Result<Option<(Layout, usize)>, Failure> {
        let status = self.status.0;
        // SAFETY: a live result set; getMetadata adds a reference we release.
        unsafe {
            let meta = method::<WithStatus<*mut Object>>(
                self.result_set,
                index::RESULT_SET_GET_METADATA,
            )(self.result_set, status);
            if self.status.failed() || meta.is_null() {
                return Err(Box::new(self.status.to_vector()));
            }
            let at = |i: usize, which: usize| {
                method::<WithStatusIndex<c_uint>>(meta, which)(meta, status, i as c_uint)
            };
            let count = method::<WithStatus<c_uint>>(meta, index::METADATA_GET_COUNT)(meta, status)
                as usize;
            let mut layout = Layout::default();
            let mut matches = count == columns.len();
            for (i, column) in columns.iter().enumerate().take(count) {
                let sql_type = (at(i, index::METADATA_GET_TYPE) & !1) as i16;
                let length = at(i, index::METADATA_GET_LENGTH);
                matches &= sql_type == column.sql_type && length == column.length as c_uint;
                layout
                    .offsets
                    .push(at(i, index::METADATA_GET_OFFSET) as usize);
                layout
                    .null_offsets
                    .push(at(i, index::METADATA_GET_NULL_OFFSET) as usize);
            }
            let length = method::<WithStatus<c_uint>>(meta, index::METADATA_GET_MESSAGE_LENGTH)(
                meta, status,
            ) as usize;
            let failed = self.status.failed();
            release(meta);
            if failed {
                return Err(Box::new(self.status.to_vector()));
            }
            Ok(matches.then_some((layout, length)))
        }
    }

    /// Fetches the next row into `buffer`; `false` at the end (the cursor
    /// is then closed).
    pub fn fetch(&mut self) -> Result<bool, Failure> {
        // SAFETY: an open result set; the buffer is the message's length.
        let rc = unsafe {
            method::<FetchNext>(self.result_set, index::RESULT_SET_FETCH_NEXT)(
                self.result_set,
                self.status.0,
                self.buffer.as_mut_ptr().cast(),
            )
        };
        match rc {
            RESULT_OK => Ok(true),
            RESULT_NO_DATA => {
                self.close();
                Ok(false)
            }
            _ => Err(Box::new(self.status.to_vector())),
        }
    }

    pub fn close(&mut self) {
        if self.result_set.is_null() {
            return;
        }
        self.status.reset();
        // SAFETY: an open result set; close releases it when it succeeds.
        unsafe {
            method::<WithStatus<()>>(self.result_set, index::RESULT_SET_CLOSE)(
                self.result_set,
                self.status.0,
            );
        }
        if self.status.failed() {
            release(self.result_set);
        }
        self.result_set = std::ptr::null_mut();
    }
}

impl Drop for MessageCursor {
    fn drop(&mut self) {
        self.close();
        release(self.statement);
        release(self.transaction);
    }
}
