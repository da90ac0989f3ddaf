//! Attachments and transactions.
//!
//! An [`Attachment`] is a shared handle: clones are cheap and the
//! attachment is detached when the last one goes. A [`Transaction`] holds
//! one, so it can never outlive its attachment, yet can be owned and moved
//! on its own (a worker's, a Python object's); a [`Statement`] borrows its
//! transaction. Dropping a transaction rolls it back (unload transactions
//! are read-only, so that is the right default).

use std::ops::ControlFlow;
use std::os::raw::c_char;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use crate::error::{ClientError, FbError};
use crate::ffi::{self, item, Handle, StatusVector, Teb};
use crate::locate::Client;
use crate::params::{self, ParamBlock, WireOptions};
use crate::statement::Statement;

/// How to reach a database and as whom.
#[derive(Clone, Default)]
pub struct ConnectOptions {
    /// A path (embedded engine), `host:path`, `host/port:path` or
    /// `inet://host:port/path`.
    pub database: String,
    pub user: Option<String>,
    pub password: Option<String>,
    pub role: Option<String>,
    /// The connection character set (`lc_ctype`).
    pub charset: String,
    /// Ask the engine not to do garbage collection on behalf of this
    /// attachment, as gbak does: an unload should not pay for cleaning up
    /// other transactions' old versions.
    pub no_garbage_collect: bool,
    /// Compression and encryption on the wire (remote attachments).
    pub wire: WireOptions,
}

impl std::fmt::Debug for ConnectOptions {
    // Hand-written so that a password never reaches a log or error message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectOptions")
            .field("database", &self.database)
            .field("user", &self.user)
            .field("password", &self.password.as_ref().map(|_| "***"))
            .field("role", &self.role)
            .field("charset", &self.charset)
            .field("no_garbage_collect", &self.no_garbage_collect)
            .field("wire", &self.wire)
            .finish()
    }
}

/// Whether a DSN is a plain file path, which the client library opens
/// with an engine of its own (embedded), and not a server's address:
/// `host:path`, `host/port:path`, `inet://…`, `\\host\path`. A one-letter
/// prefix is a Windows drive (`C:\db.fdb`); a path may contain a colon
/// after its first slash (`/data/a:b.fdb`).
pub fn is_plain_path(database: &str) -> bool {
    if database.contains("://") || database.starts_with("\\\\") {
        return false;
    }
    match database.split_once(':') {
        None => true,
        Some((before, _)) => before.chars().count() == 1 || before.starts_with(['/', '\\', '.']),
    }
}

/// The server's version, parsed from `isc_info_firebird_version`
/// (e.g. `LI-V5.0.3.1683 Firebird 5.0`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
    pub text: String,
}

impl ServerVersion {
    pub fn parse(text: &str) -> Option<ServerVersion> {
        // The build string is "<platform>-V<major>.<minor>.<release>.<build> ..."
        let after_v = text
            .split("-V")
            .nth(1)
            .or_else(|| text.split("-T").nth(1))?;
        let mut numbers = after_v.split(|c: char| !c.is_ascii_digit());
        let major = numbers.next()?.parse().ok()?;
        let minor = numbers.next()?.parse().ok()?;
        Some(ServerVersion {
            major,
            minor,
            text: text.to_string(),
        })
    }

    /// Shared snapshots (`isc_tpb_at_snapshot_number`) and `MAKE_DBKEY`
    /// arrived in Firebird 4.0.
    pub fn has_shared_snapshots(&self) -> bool {
        self.major >= 4
    }
}

/// Set once this process asks for an attachment that an embedded engine
/// may serve (a plain path) or creates a database.
static ENGINE_MAY_RUN: AtomicBool = AtomicBool::new(false);

/// Whether an embedded engine may have started in this process: then the
/// client library's shutdown at exit matters and must run. A process that
/// only ever attached through servers has nothing left for it to close
/// once its attachments are detached.
pub fn embedded_engine_may_run() -> bool {
    ENGINE_MAY_RUN.load(Ordering::SeqCst)
}

/// An open attachment (connection) to a database; clones share it.
#[derive(Clone)]
pub struct Attachment {
    pub(crate) inner: Arc<Attached>,
}

/// The attachment itself, detached when the last handle to it goes.
pub(crate) struct Attached {
    pub(crate) client: Arc<Client>,
    pub(crate) handle: Handle,
    /// Attached through a server (`host:path`, `inet://…`), not a file.
    remote: bool,
    /// Statements prepared on it ([`Attachment::statements_prepared`]).
    pub(crate) prepared: std::sync::atomic::AtomicU64,
}

// SAFETY: the client library is thread-safe since Firebird 2.5: calls on
// one attachment from several threads are serialized inside it. fbunload
// starts all worker transactions from one thread (to start them together)
// and then uses each from its own worker thread.
unsafe impl Send for Attached {}
unsafe impl Sync for Attached {}

/// How long a reading transaction waits on a lock (a table being altered
/// or dropped by another transaction) before it fails: an unload must not
/// hang on other people's DDL.
pub const READ_LOCK_TIMEOUT_SECS: u64 = 10;

/// The isolation a transaction starts with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransactionMode {
    /// A read-only SNAPSHOT (concurrency) transaction of its own.
    ReadOnlySnapshot,
    /// A read-only SNAPSHOT transaction that shares the snapshot of another
    /// transaction, identified by its snapshot number (Firebird 4+).
    ReadOnlyAtSnapshot(u64),
    /// A read-write READ COMMITTED transaction, for data generation.
    ReadWrite,
    /// A read-write SNAPSHOT transaction that writes nothing: unlike a
    /// read-only one it counts as interesting, so the oldest interesting
    /// transaction cannot move past it while it lives.
    HoldingSnapshot,
}

impl Attachment {
    fn from_handle(client: &Arc<Client>, handle: Handle, remote: bool) -> Attachment {
        Attachment {
            inner: Arc::new(Attached {
                client: client.clone(),
                handle,
                remote,
                prepared: Default::default(),
            }),
        }
    }

    /// Whether rows come over a wire: the database was named through a
    /// server (`host:path`, `inet://…`), not as a file.
    pub fn is_remote(&self) -> bool {
        self.inner.remote
    }

    /// How many statements were prepared on this attachment: each costs
    /// the server a compile, and its first of a table loads that table's
    /// metadata for this attachment alone. Tests count them.
    pub fn statements_prepared(&self) -> u64 {
        self.inner
            .prepared
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    pub(crate) fn client(&self) -> &Arc<Client> {
        &self.inner.client
    }

    pub(crate) fn handle(&self) -> Handle {
        self.inner.handle
    }

    pub fn connect(
        client: &Arc<Client>,
        options: &ConnectOptions,
    ) -> Result<Attachment, ClientError> {
        let embedded = is_plain_path(&options.database);
        let dpb = params::dpb(
            options.user.as_deref(),
            options.password.as_deref(),
            options.role.as_deref(),
            &options.charset,
            options.no_garbage_collect,
            options.wire,
            embedded,
        )
        .map_err(ClientError::Invalid)?;
        let name = sql_len(&options.database)?;
        if embedded {
            ENGINE_MAY_RUN.store(true, Ordering::SeqCst);
        }
        let mut handle: Handle = 0;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let _waiting = crate::waits::reading(None);
        // SAFETY: all pointers are valid for the duration of the call.
        unsafe {
            (client.api.isc_attach_database)(
                status.as_mut_ptr(),
                name as i16,
                options.database.as_ptr() as *const c_char,
                &mut handle,
                dpb.as_bytes().len() as i16,
                dpb.as_bytes().as_ptr() as *const c_char,
            );
        }
        check(client, &status)?;
        Ok(Attachment::from_handle(client, handle, !embedded))
    }

    /// Runs `CREATE DATABASE ...` (the full statement, with user, password,
    /// page size and character set) and returns the new attachment.
    ///
    /// That attachment's connection character set is NONE unless the
    /// statement says `SET NAMES 'UTF8'`: without it, text literals sent on
    /// it are stored as raw bytes, whatever the columns' character sets.
    pub fn create_database(
        client: &Arc<Client>,
        create_sql: &str,
    ) -> Result<Attachment, ClientError> {
        ENGINE_MAY_RUN.store(true, Ordering::SeqCst);
        let mut handle: Handle = 0;
        let mut tr: Handle = 0;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let len = sql_len(create_sql)?;
        // SAFETY: pointers valid for the call; handles start at zero as required.
        unsafe {
            (client.api.isc_dsql_execute_immediate)(
                status.as_mut_ptr(),
                &mut handle,
                &mut tr,
                len as u16,
                create_sql.as_ptr() as *const c_char,
                ffi::SQL_DIALECT_V6,
                std::ptr::null(),
            );
        }
        check(client, &status)?;
        // Only fbunload's tests create databases, and it reads none it made.
        Ok(Attachment::from_handle(client, handle, false))
    }

    pub fn server_version(&self) -> Result<ServerVersion, ClientError> {
        let reply = self.database_info(&[item::INFO_FIREBIRD_VERSION])?;
        // Reply: item, 2-byte length, count, then (length, text) per layer.
        // The first text is the server's (for a remote attachment the client's
        // own version follows).
        let value = info_value(&reply, item::INFO_FIREBIRD_VERSION)
            .ok_or_else(|| ClientError::Invalid("server sent no version".into()))?;
        let text = value
            .get(2..2 + *value.get(1).unwrap_or(&0) as usize)
            .map(|t| String::from_utf8_lossy(t).into_owned())
            .unwrap_or_default();
        ServerVersion::parse(&text)
            .ok_or_else(|| ClientError::Invalid(format!("cannot parse server version {text:?}")))
    }

    pub fn page_size(&self) -> Result<u32, ClientError> {
        let reply = self.database_info(&[item::INFO_PAGE_SIZE])?;
        info_value(&reply, item::INFO_PAGE_SIZE)
            .map(|v| le_uint(v) as u32)
            .ok_or_else(|| ClientError::Invalid("server sent no page size".into()))
    }

    /// Makes the call this attachment is running on another thread (a
    /// lock wait, a fetch) fail now with "operation was cancelled". Does
    /// nothing when the attachment is idle or the library is too old.
    pub fn cancel_operation(&self) {
        self.cancel(item::CANCEL_RAISE);
    }

    /// Closes this attachment's connection now, so that a call another
    /// thread has made through it and that the server will never answer
    /// (a stopped server, a connection dropped without being closed)
    /// fails at once ("Error reading data from the connection"): what
    /// `fb_cancel_abort` does through a server. The attachment is useless
    /// afterwards. Nothing happens with a library too old to cancel.
    pub fn abort_connection(&self) {
        self.cancel(item::CANCEL_ABORT);
    }

    /// `fb_cancel_operation` of `kind`, where the library has it.
    fn cancel(&self, kind: u16) {
        let Some(cancel) = self.client().api.fb_cancel_operation else {
            return;
        };
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut handle = self.handle();
        // SAFETY: the handle is live while `self` is; errors (nothing to
        // cancel, a connection already closed) are moot.
        unsafe {
            cancel(status.as_mut_ptr(), &mut handle, kind);
        }
    }

    /// A handle that can interrupt this attachment from another thread
    /// without keeping it open: a worker's attachment is detached as soon
    /// as its worker is done, releasing the locks the server holds for it.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter {
            attached: Arc::downgrade(&self.inner),
        }
    }

    /// A cheap round trip that fails once the attachment is gone.
    pub fn ping(&self) -> Result<(), ClientError> {
        self.database_info(&[item::INFO_PAGE_SIZE]).map(drop)
    }

    fn database_info(&self, items: &[u8]) -> Result<Vec<u8>, ClientError> {
        info(
            self.client(),
            self.client().api.isc_database_info,
            self.handle(),
            items,
        )
    }

    pub fn start_transaction(&self, mode: TransactionMode) -> Result<Transaction, ClientError> {
        let mut tpb = ParamBlock::new(item::TPB_VERSION3);
        match mode {
            TransactionMode::ReadOnlySnapshot => {
                tpb.flag(item::TPB_CONCURRENCY)
                    .flag(item::TPB_READ)
                    .flag(item::TPB_WAIT)
                    .int(item::TPB_LOCK_TIMEOUT, READ_LOCK_TIMEOUT_SECS, 4);
            }
            TransactionMode::ReadOnlyAtSnapshot(number) => {
                tpb.flag(item::TPB_CONCURRENCY)
                    .flag(item::TPB_READ)
                    .flag(item::TPB_WAIT)
                    .int(item::TPB_LOCK_TIMEOUT, READ_LOCK_TIMEOUT_SECS, 4)
                    .int(item::TPB_AT_SNAPSHOT_NUMBER, number, 8);
            }
            TransactionMode::HoldingSnapshot => {
                tpb.flag(item::TPB_CONCURRENCY)
                    .flag(item::TPB_WRITE)
                    .flag(item::TPB_WAIT)
                    .int(item::TPB_LOCK_TIMEOUT, READ_LOCK_TIMEOUT_SECS, 4);
            }
            TransactionMode::ReadWrite => {
                tpb.flag(item::TPB_READ_COMMITTED)
                    .flag(item::TPB_REC_VERSION)
                    .flag(item::TPB_WRITE)
                    .flag(item::TPB_WAIT);
            }
        }
        let mut db = self.handle();
        let mut teb = Teb {
            db_ptr: &mut db,
            tpb_len: tpb.as_bytes().len() as i32,
            tpb_ptr: tpb.as_bytes().as_ptr() as *const c_char,
        };
        let mut handle: Handle = 0;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let waiting = crate::waits::reading(None);
        // SAFETY: the TEB and TPB live until the call returns.
        unsafe {
            (self.client().api.isc_start_multiple)(status.as_mut_ptr(), &mut handle, 1, &mut teb);
        }
        drop(waiting);
        check(self.client(), &status)?;
        Ok(Transaction {
            attachment: self.clone(),
            handle,
        })
    }

    pub(crate) fn fail(&self, status: &StatusVector) -> ClientError {
        ClientError::Firebird(FbError::from_status(&self.client().api, status))
    }
}

/// See [`Attachment::interrupter`].
#[derive(Clone)]
pub struct Interrupter {
    attached: Weak<Attached>,
}

impl Interrupter {
    /// [`Attachment::cancel_operation`], if the attachment is still open.
    pub fn cancel_operation(&self) {
        if let Some(inner) = self.attached.upgrade() {
            Attachment { inner }.cancel_operation();
        }
    }

    /// [`Attachment::abort_connection`], if the attachment is still open.
    pub fn abort_connection(&self) {
        if let Some(inner) = self.attached.upgrade() {
            Attachment { inner }.abort_connection();
        }
    }
}

impl Drop for Attached {
    fn drop(&mut self) {
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let _waiting = crate::waits::reading(None);
        // SAFETY: the handle is ours; errors on detach (lost connection) are moot.
        unsafe {
            (self.client.api.isc_detach_database)(status.as_mut_ptr(), &mut self.handle);
        }
    }
}

/// A transaction on an attachment, which it keeps attached.
pub struct Transaction {
    pub(crate) attachment: Attachment,
    pub(crate) handle: Handle,
}

impl Transaction {
    pub fn attachment(&self) -> &Attachment {
        &self.attachment
    }

    /// The transaction's own number (its id in `MON$TRANSACTIONS`).
    pub fn number(&self) -> Result<u64, ClientError> {
        let reply = self.info(&[item::INFO_TRA_ID])?;
        info_value(&reply, item::INFO_TRA_ID)
            .map(le_uint)
            .ok_or_else(|| {
                ClientError::Invalid("the server did not report a transaction id".into())
            })
    }

    /// The snapshot number other attachments can share with
    /// [`TransactionMode::ReadOnlyAtSnapshot`] (Firebird 4+).
    pub fn snapshot_number(&self) -> Result<u64, ClientError> {
        let reply = self.info(&[item::INFO_TRA_SNAPSHOT_NUMBER])?;
        info_value(&reply, item::INFO_TRA_SNAPSHOT_NUMBER)
            .map(le_uint)
            .filter(|n| *n != 0)
            .ok_or_else(|| {
                ClientError::Invalid("the server did not report a snapshot number".into())
            })
    }

    /// The oldest interesting transaction this transaction saw when it
    /// started: every transaction numbered below it counts as committed
    /// for it, whatever its commit number.
    pub fn oldest_interesting(&self) -> Result<u64, ClientError> {
        let reply = self.info(&[item::INFO_TRA_OLDEST_INTERESTING])?;
        info_value(&reply, item::INFO_TRA_OLDEST_INTERESTING)
            .map(le_uint)
            .ok_or_else(|| {
                ClientError::Invalid(
                    "the server did not report the oldest interesting transaction".into(),
                )
            })
    }

    /// The oldest transaction that was active when this one started.
    pub fn oldest_active(&self) -> Result<u64, ClientError> {
        let reply = self.info(&[item::INFO_TRA_OLDEST_ACTIVE])?;
        info_value(&reply, item::INFO_TRA_OLDEST_ACTIVE)
            .map(le_uint)
            .ok_or_else(|| {
                ClientError::Invalid(
                    "the server did not report the oldest active transaction".into(),
                )
            })
    }

    /// The oldest snapshot when this transaction started: the least of
    /// what every transaction alive then took as its oldest active one
    /// (its own included), so no transaction alive then, active or
    /// prepared, is below it.
    pub fn oldest_snapshot(&self) -> Result<u64, ClientError> {
        let reply = self.info(&[item::INFO_TRA_OLDEST_SNAPSHOT])?;
        info_value(&reply, item::INFO_TRA_OLDEST_SNAPSHOT)
            .map(le_uint)
            .ok_or_else(|| {
                ClientError::Invalid("the server did not report the oldest snapshot".into())
            })
    }

    fn info(&self, items: &[u8]) -> Result<Vec<u8>, ClientError> {
        info(
            self.client(),
            self.client().api.isc_transaction_info,
            self.handle,
            items,
        )
    }

    /// Executes a statement that returns no rows (DDL, INSERT, EXECUTE BLOCK).
    pub fn execute(&self, sql: &str) -> Result<(), ClientError> {
        // SAFETY: no parameters.
        unsafe { self.execute_immediate(sql, std::ptr::null()) }
    }

    /// `isc_dsql_execute_immediate` with the parameters `input` describes.
    ///
    /// # Safety
    /// `input` is null or an XSQLDA whose entries point at live values for
    /// the whole call.
    pub(crate) unsafe fn execute_immediate(
        &self,
        sql: &str,
        input: *const ffi::Xsqlda,
    ) -> Result<(), ClientError> {
        let len = sql_len(sql)?;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut db = self.attachment.handle();
        let mut tr = self.handle;
        (self.client().api.isc_dsql_execute_immediate)(
            status.as_mut_ptr(),
            &mut db,
            &mut tr,
            len as u16,
            sql.as_ptr() as *const c_char,
            ffi::SQL_DIALECT_V6,
            input,
        );
        self.check(&status)
    }

    /// Prepares a query; see [`Statement`]. While the server prepares it,
    /// [`crate::longest_prepare`] names it by its SQL text.
    pub fn prepare(&self, sql: &str) -> Result<Statement<'_>, ClientError> {
        Statement::prepare(self, sql, sql)
    }

    /// Prepares a query that reads `subject` (e.g. `table STOCK`), the name
    /// [`crate::longest_prepare`] gives it while the server prepares it.
    pub fn prepare_for(&self, subject: &str, sql: &str) -> Result<Statement<'_>, ClientError> {
        Statement::prepare(self, subject, sql)
    }

    /// Reads a whole blob into `out` (replacing its contents).
    pub fn read_blob(&self, id: &crate::BlobId, out: &mut Vec<u8>) -> Result<(), ClientError> {
        out.clear();
        self.read_blob_segments(id, &mut |segment| {
            out.extend_from_slice(segment);
            ControlFlow::Continue(())
        })
    }

    /// Reads a blob segment by segment (at most 32 KiB each), handing each
    /// to `segment` as it arrives, so a caller can put a big blob where it
    /// is going without holding it whole first. `segment` stops the reading
    /// early with `Break`; that is not an error here.
    pub fn read_blob_segments(
        &self,
        id: &crate::BlobId,
        segment: &mut dyn FnMut(&[u8]) -> ControlFlow<()>,
    ) -> Result<(), ClientError> {
        let api = &self.client().api;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut db = self.attachment.handle();
        let mut tr = self.handle;
        let mut blob: Handle = 0;
        let mut quad = *id;
        crate::fp_flags::clear_sticky_exception_flags();
        let opening = crate::waits::reading(None);
        // SAFETY: handles and buffers valid for each call; the blob is closed
        // on every path below.
        unsafe {
            (api.isc_open_blob2)(
                status.as_mut_ptr(),
                &mut db,
                &mut tr,
                &mut blob,
                &mut quad,
                0,
                std::ptr::null(),
            );
        }
        drop(opening);
        self.check(&status)?;
        let mut chunk = [0u8; 32 * 1024];
        let result = loop {
            let mut got: u16 = 0;
            // One read per segment: a big blob keeps showing progress.
            let _read = crate::waits::reading(None);
            let rc = unsafe {
                (api.isc_get_segment)(
                    status.as_mut_ptr(),
                    &mut blob,
                    &mut got,
                    chunk.len() as u16,
                    chunk.as_mut_ptr() as *mut c_char,
                )
            };
            if rc == 0 || rc == ffi::gds::SEGMENT {
                if segment(&chunk[..got as usize]).is_break() {
                    break Ok(());
                }
            } else if rc == ffi::gds::SEGSTR_EOF {
                break Ok(());
            } else {
                break Err(self.attachment.fail(&status));
            }
        };
        let mut close_status: StatusVector = [0; ffi::STATUS_LEN];
        let _waiting = crate::waits::reading(None);
        unsafe {
            (api.isc_close_blob)(close_status.as_mut_ptr(), &mut blob);
        }
        result
    }

    pub fn commit(mut self) -> Result<(), ClientError> {
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let waiting = crate::waits::reading(None);
        // SAFETY: the handle is ours; on success Firebird zeroes it, so Drop
        // does nothing more.
        unsafe {
            (self.client().api.isc_commit_transaction)(status.as_mut_ptr(), &mut self.handle);
        }
        drop(waiting);
        self.check(&status)
    }

    pub(crate) fn client(&self) -> &Client {
        self.attachment.client()
    }

    pub(crate) fn check(&self, status: &StatusVector) -> Result<(), ClientError> {
        check(self.attachment.client(), status)
    }
}

impl Drop for Transaction {
    fn drop(&mut self) {
        if self.handle != 0 {
            let mut status: StatusVector = [0; ffi::STATUS_LEN];
            pause_before_rollback_for_tests();
            let _waiting = crate::waits::reading(None);
            // SAFETY: the handle is ours and still open.
            unsafe {
                (self.client().api.isc_rollback_transaction)(status.as_mut_ptr(), &mut self.handle);
            }
        }
    }
}

/// Debug builds only: on a watched thread (a run's worker), says so on
/// standard error and waits `FBUNLOAD_TEST_PAUSE_BEFORE_ROLLBACK_MS` before
/// a rollback, so that a test can stop the server just before one.
fn pause_before_rollback_for_tests() {
    if cfg!(debug_assertions) && crate::waits::is_watched() {
        if let Some(ms) = std::env::var("FBUNLOAD_TEST_PAUSE_BEFORE_ROLLBACK_MS")
            .ok()
            .and_then(|ms| ms.parse().ok())
        {
            eprintln!("fbunload: test: pausing before a rollback");
            std::thread::sleep(std::time::Duration::from_millis(ms));
        }
    }
}

pub(crate) fn check(client: &Client, status: &StatusVector) -> Result<(), ClientError> {
    if status[0] == 1 && status[1] != 0 {
        Err(ClientError::Firebird(FbError::from_status(
            &client.api,
            status,
        )))
    } else {
        Ok(())
    }
}

/// The signature shared by `isc_database_info` and `isc_transaction_info`.
type InfoFn = unsafe extern "C" fn(
    *mut ffi::IscStatus,
    *mut Handle,
    i16,
    *const c_char,
    i16,
    *mut c_char,
) -> ffi::IscStatus;

/// Asks for info `items` about a database or transaction handle.
fn info(
    client: &Client,
    call: InfoFn,
    mut handle: Handle,
    items: &[u8],
) -> Result<Vec<u8>, ClientError> {
    let mut buf = vec![0u8; 1024];
    let mut status: StatusVector = [0; ffi::STATUS_LEN];
    let waiting = crate::waits::reading(None);
    // SAFETY: buffers valid for the call; the handle is the caller's own.
    unsafe {
        call(
            status.as_mut_ptr(),
            &mut handle,
            items.len() as i16,
            items.as_ptr() as *const c_char,
            buf.len() as i16,
            buf.as_mut_ptr() as *mut c_char,
        );
    }
    drop(waiting);
    check(client, &status)?;
    Ok(buf)
}

/// SQL text and names go through 16-bit lengths in the ISC API.
fn sql_len(text: &str) -> Result<usize, ClientError> {
    if text.len() > u16::MAX as usize {
        return Err(ClientError::Invalid(format!(
            "statement or name of {} bytes exceeds Firebird's 64 KiB limit",
            text.len()
        )));
    }
    Ok(text.len())
}

/// Finds `item` in an info reply (item, 2-byte LE length, value; ...).
fn info_value(reply: &[u8], wanted: u8) -> Option<&[u8]> {
    let mut pos = 0;
    while pos < reply.len() {
        let tag = reply[pos];
        if tag == item::INFO_END || tag == item::INFO_TRUNCATED || tag == item::INFO_ERROR {
            return None;
        }
        let len = u16::from_le_bytes([*reply.get(pos + 1)?, *reply.get(pos + 2)?]) as usize;
        let value = reply.get(pos + 3..pos + 3 + len)?;
        if tag == wanted {
            return Some(value);
        }
        pos += 3 + len;
    }
    None
}

fn le_uint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .take(8)
        .rev()
        .fold(0, |acc, b| (acc << 8) | *b as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_parse_from_build_strings() {
        let v = ServerVersion::parse("LI-V5.0.3.1683 Firebird 5.0").unwrap();
        assert_eq!((v.major, v.minor), (5, 0));
        assert!(v.has_shared_snapshots());
        let v = ServerVersion::parse("LI-V3.0.11.33703 Firebird 3.0").unwrap();
        assert!(!v.has_shared_snapshots());
        assert!(ServerVersion::parse("garbage").is_none());
    }

    #[test]
    fn plain_paths_and_server_addresses() {
        for path in [
            "/data/db.fdb",
            "db.fdb",
            "./a:b.fdb",
            "/data/a:b.fdb",
            "C:\\db\\x.fdb",
        ] {
            assert!(is_plain_path(path), "{path}");
        }
        for address in [
            "localhost:/data/db.fdb",
            "dbhost/3051:/data/db.fdb",
            "inet://dbhost:3050/horses",
            "xnet://horses",
            "\\\\server\\share\\db.fdb",
            "dbhost:C:\\db.fdb",
        ] {
            assert!(!is_plain_path(address), "{address}");
        }
    }

    #[test]
    fn info_values_are_found_by_tag() {
        let reply = [12, 4, 0, 0x10, 0x27, 0, 0, 1];
        assert_eq!(info_value(&reply, 12).map(le_uint), Some(10_000));
        assert_eq!(info_value(&reply, 4), None);
    }
}
