//! The C entry points, and the `errno` of an error in a result stream.
//!
//! `adbc_ffi` exports the driver's functions; its result streams are
//! arrow-rs's C stream export, which gives every error of a reader `EINVAL`
//! (`ENOSYS`, `ENOMEM` and `EIO` only for arrow's own kinds). ADBC asks
//! for the errno of the error's status: `ECANCELED` after a cancel, most
//! of all. So [`AdbcDriverFbunloadInit`] hands out `adbc_ffi`'s driver
//! with the functions that return streams wrapped: each stream they
//! return is wrapped in one whose `get_next` returns the errno the
//! driver's reader gave its error ([`stream_error`]), passed from the
//! reader's `next` to the wrapper through a thread-local, as both run in
//! the caller's thread, one inside the other.

use std::cell::Cell;
use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;

use adbc_core::constants::{ADBC_STATUS_OK, ADBC_VERSION_1_1_0};
use adbc_core::error::{AdbcStatusCode, Error, Status};
use adbc_ffi::{FFIDriver, FFI_AdbcConnection, FFI_AdbcDriver, FFI_AdbcError, FFI_AdbcStatement};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_schema::ArrowError;

use crate::FbDriver;

thread_local! {
    /// The errno of the error a reader of this thread returned last.
    static STREAM_ERRNO: Cell<Option<c_int>> = const { Cell::new(None) };
}

/// An error for a reader to return: `err`'s message, and its status's
/// errno for the C stream (module docs).
pub(crate) fn stream_error(err: Error) -> ArrowError {
    STREAM_ERRNO.with(|errno| errno.set(Some(errno_of(err.status))));
    ArrowError::ExternalError(err.message.into())
}

/// The errno ADBC's C drivers give a status (ADBC's
/// `InternalAdbcStatusCodeToErrno`).
pub(crate) fn errno_of(status: Status) -> c_int {
    match status {
        Status::Ok => 0,
        Status::NotImplemented => libc::ENOTSUP,
        Status::NotFound => libc::ENOENT,
        Status::AlreadyExists => libc::EEXIST,
        Status::InvalidArguments | Status::InvalidState => libc::EINVAL,
        Status::Cancelled => libc::ECANCELED,
        Status::Timeout => libc::ETIMEDOUT,
        Status::Unauthenticated | Status::Unauthorized => libc::EACCES,
        _ => libc::EIO,
    }
}

/// The driver's entry point, for a driver manager
/// (`entrypoint=AdbcDriverFbunloadInit`). ADBC 1.1.0 only.
///
/// # Safety
/// `driver` points to an `AdbcDriver` to fill in, `error` to an
/// `AdbcError` or is null: ADBC's contract.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn AdbcDriverFbunloadInit(
    version: c_int,
    driver: *mut c_void,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let refuse = |message: String, status: Status| {
        let err = Error::with_message_and_status(message, status);
        let code = err.status.into();
        unsafe { adbc_ffi::export_error(error, err) };
        code
    };
    if version != ADBC_VERSION_1_1_0 {
        return refuse(
            format!("ADBC version {version}: the fbunload driver implements 1.1.0 (1001000)"),
            Status::NotImplemented,
        );
    }
    if driver.is_null() {
        return refuse("no AdbcDriver to fill in".into(), Status::InvalidState);
    }
    let functions = FFI_AdbcDriver {
        StatementExecuteQuery: Some(statement_execute_query),
        ConnectionGetInfo: Some(connection_get_info),
        ConnectionGetObjects: Some(connection_get_objects),
        ConnectionGetTableTypes: Some(connection_get_table_types),
        ConnectionReadPartition: Some(connection_read_partition),
        ..<FbDriver as FFIDriver>::ffi_driver()
    };
    unsafe { std::ptr::write_unaligned(driver as *mut FFI_AdbcDriver, functions) };
    ADBC_STATUS_OK
}

/// The default entry point's name, for driver managers that look no
/// further.
///
/// # Safety
/// As [`AdbcDriverFbunloadInit`].
#[unsafe(no_mangle)]
pub unsafe extern "C" fn AdbcDriverInit(
    version: c_int,
    driver: *mut c_void,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    unsafe { AdbcDriverFbunloadInit(version, driver, error) }
}

/// `adbc_ffi`'s own functions, which the wrappers below call.
fn exported() -> &'static FFI_AdbcDriver {
    static EXPORTED: OnceLock<FFI_AdbcDriver> = OnceLock::new();
    EXPORTED.get_or_init(<FbDriver as FFIDriver>::ffi_driver)
}

/// Wraps the stream a call that returned `status` wrote to `out`.
unsafe fn wrapped(status: AdbcStatusCode, out: *mut FFI_ArrowArrayStream) -> AdbcStatusCode {
    if status == ADBC_STATUS_OK && !out.is_null() {
        unsafe { wrap(out.cast()) };
    }
    status
}

unsafe extern "C" fn statement_execute_query(
    statement: *mut FFI_AdbcStatement,
    out: *mut FFI_ArrowArrayStream,
    rows_affected: *mut i64,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let call = exported()
        .StatementExecuteQuery
        .expect("adbc_ffi exports it");
    unsafe { wrapped(call(statement, out, rows_affected, error), out) }
}

unsafe extern "C" fn connection_get_info(
    connection: *mut FFI_AdbcConnection,
    codes: *const u32,
    length: usize,
    out: *mut FFI_ArrowArrayStream,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let call = exported().ConnectionGetInfo.expect("adbc_ffi exports it");
    unsafe { wrapped(call(connection, codes, length, out, error), out) }
}

#[allow(clippy::too_many_arguments)]
unsafe extern "C" fn connection_get_objects(
    connection: *mut FFI_AdbcConnection,
    depth: c_int,
    catalog: *const c_char,
    db_schema: *const c_char,
    table_name: *const c_char,
    table_type: *const *const c_char,
    column_name: *const c_char,
    out: *mut FFI_ArrowArrayStream,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let call = exported()
        .ConnectionGetObjects
        .expect("adbc_ffi exports it");
    let status = call(
        connection,
        depth,
        catalog,
        db_schema,
        table_name,
        table_type,
        column_name,
        out,
        error,
    );
    unsafe { wrapped(status, out) }
}

unsafe extern "C" fn connection_get_table_types(
    connection: *mut FFI_AdbcConnection,
    out: *mut FFI_ArrowArrayStream,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let call = exported()
        .ConnectionGetTableTypes
        .expect("adbc_ffi exports it");
    unsafe { wrapped(call(connection, out, error), out) }
}

unsafe extern "C" fn connection_read_partition(
    connection: *mut FFI_AdbcConnection,
    partition: *const u8,
    length: usize,
    out: *mut FFI_ArrowArrayStream,
    error: *mut FFI_AdbcError,
) -> AdbcStatusCode {
    let call = exported()
        .ConnectionReadPartition
        .expect("adbc_ffi exports it");
    unsafe { wrapped(call(connection, partition, length, out, error), out) }
}

/// The Arrow C stream interface's `struct ArrowArrayStream`, as the
/// specification lays it out (arrow-rs keeps its fields private).
#[repr(C)]
struct RawStream {
    get_schema: Option<unsafe extern "C" fn(*mut RawStream, *mut c_void) -> c_int>,
    get_next: Option<unsafe extern "C" fn(*mut RawStream, *mut c_void) -> c_int>,
    get_last_error: Option<unsafe extern "C" fn(*mut RawStream) -> *const c_char>,
    release: Option<unsafe extern "C" fn(*mut RawStream)>,
    private_data: *mut c_void,
}

/// Moves the stream at `stream` into a wrapper that takes its place.
unsafe fn wrap(stream: *mut RawStream) {
    let inner = Box::new(unsafe { std::ptr::read_unaligned(stream) });
    let wrapper = RawStream {
        get_schema: Some(get_schema),
        get_next: Some(get_next),
        get_last_error: Some(get_last_error),
        release: Some(release),
        private_data: Box::into_raw(inner).cast(),
    };
    unsafe { std::ptr::write_unaligned(stream, wrapper) };
}

unsafe fn inner<'a>(stream: *mut RawStream) -> &'a mut RawStream {
    unsafe { &mut *((*stream).private_data as *mut RawStream) }
}

unsafe extern "C" fn get_schema(stream: *mut RawStream, out: *mut c_void) -> c_int {
    let inner = unsafe { inner(stream) };
    match inner.get_schema {
        Some(call) => unsafe { call(inner, out) },
        None => libc::EINVAL,
    }
}

unsafe extern "C" fn get_next(stream: *mut RawStream, out: *mut c_void) -> c_int {
    let inner = unsafe { inner(stream) };
    let Some(call) = inner.get_next else {
        return libc::EINVAL;
    };
    STREAM_ERRNO.with(|errno| errno.set(None));
    let code = unsafe { call(inner, out) };
    let given = STREAM_ERRNO.with(Cell::take);
    match given {
        Some(errno) if code != 0 => errno,
        _ => code,
    }
}

unsafe extern "C" fn get_last_error(stream: *mut RawStream) -> *const c_char {
    let inner = unsafe { inner(stream) };
    match inner.get_last_error {
        Some(call) => unsafe { call(inner) },
        None => std::ptr::null(),
    }
}

unsafe extern "C" fn release(stream: *mut RawStream) {
    if stream.is_null() || unsafe { (*stream).release.is_none() } {
        return;
    }
    let mut inner = unsafe { Box::from_raw((*stream).private_data as *mut RawStream) };
    if let Some(release) = inner.release {
        unsafe { release(&mut *inner) };
    }
    unsafe {
        (*stream).release = None;
        (*stream).private_data = std::ptr::null_mut();
    }
}

#[cfg(test)]
mod tests {
    use arrow_array::{Int32Array, RecordBatch, RecordBatchIterator};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;

    use super::*;

    /// A stream of one batch, then `err`, through arrow-rs's export and
    /// the wrapper: the wrapper's get_next gives the status's errno.
    fn errno_after_one_batch(err: Option<Error>) -> (c_int, c_int) {
        let schema = Arc::new(Schema::new(vec![Field::new("A", DataType::Int32, true)]));
        let batch = RecordBatch::try_new(schema.clone(), vec![Arc::new(Int32Array::from(vec![1]))])
            .unwrap();
        // The error is made when the stream asks for it, as a reader's is.
        let second = err.into_iter().map(|e| Err(stream_error(e)));
        let items = std::iter::once(Ok(batch)).chain(second);
        let reader = RecordBatchIterator::new(items, schema);
        let mut stream = FFI_ArrowArrayStream::new(Box::new(reader));
        let raw: *mut RawStream = (&mut stream as *mut FFI_ArrowArrayStream).cast();
        unsafe {
            wrap(raw);
            let mut array = arrow_array::ffi::FFI_ArrowArray::empty();
            let first = get_next(raw, (&mut array as *mut _ as *mut c_void).cast());
            drop(array);
            let mut array = arrow_array::ffi::FFI_ArrowArray::empty();
            let second = get_next(raw, (&mut array as *mut _ as *mut c_void).cast());
            (first, second)
        }
        // Dropping `stream` releases the wrapper, then the inner stream.
    }

    #[test]
    fn a_cancelled_read_ends_with_ecanceled_and_others_with_their_errno() {
        let cancelled = Error::with_message_and_status("stopped", Status::Cancelled);
        assert_eq!(errno_after_one_batch(Some(cancelled)), (0, libc::ECANCELED));
        let io = Error::with_message_and_status("lost", Status::IO);
        assert_eq!(errno_after_one_batch(Some(io)), (0, libc::EIO));
        // The end of the stream is no error.
        assert_eq!(errno_after_one_batch(None), (0, 0));
    }
}
