//! Which fetch path is faster: the legacy ISC API with an XSQLDA (what
//! fbunload uses), or the OO API's `IResultSet::fetchNext` into one message
//! buffer? Both read every row of a table in one read-only snapshot on one
//! attachment and drop it; nothing is decoded. Runs alternate between the
//! two paths so drift in the machine hits both alike.
//!
//!     cargo run --release -p fbunload-client --example fetch_api -- DATABASE TABLE [RUNS]
//!
//! The OO side walks Firebird's interface tables by hand (the layout of
//! `FirebirdInterface.idl`: an object is `{dummy, vtable}`, a vtable is
//! `{dummy, version, methods...}` with inherited methods first). Only the
//! few calls needed here are bound, by their index in that order.

use std::ffi::{c_char, c_int, c_uint, c_void, CString};
use std::time::Instant;

use fbunload_client::{Attachment, Client, ConnectOptions, LibrarySource, TransactionMode};

fn main() {
    let mut args = std::env::args().skip(1);
    let database = args.next().expect("usage: fetch_api DATABASE TABLE [RUNS]");
    let table = args.next().expect("usage: fetch_api DATABASE TABLE [RUNS]");
    let runs: usize = args.next().map_or(3, |r| r.parse().expect("RUNS"));
    let password = std::env::var("ISC_PASSWORD").unwrap_or_else(|_| "masterkey".into());
    let sql = format!("SELECT * FROM \"{}\"", table.replace('"', "\"\""));

    let client = Client::load(None).expect("libfbclient");
    let oo = OoApi::open(&client.source);
    let (mut legacy, mut modern) = (Vec::new(), Vec::new());
    for _ in 0..runs {
        legacy.push(fetch_with_xsqlda(&client, &database, &password, &sql));
        modern.push(oo.fetch_all(&database, &password, &sql));
    }
    for (name, results) in [("ISC API, XSQLDA", &legacy), ("OO API, message", &modern)] {
        let rows = results[0].0;
        assert!(results.iter().all(|r| r.0 == rows), "row counts differ");
        let mut secs: Vec<f64> = results.iter().map(|r| r.1).collect();
        secs.sort_by(f64::total_cmp);
        let median = secs[secs.len() / 2];
        println!(
            "{name}  {rows} rows  median {median:.2} s  ({:.2}-{:.2})  {:.0} rows/s",
            secs[0],
            secs[secs.len() - 1],
            rows as f64 / median
        );
    }
}

fn fetch_with_xsqlda(client: &std::sync::Arc<Client>, db: &str, pw: &str, sql: &str) -> (u64, f64) {
    let att = Attachment::connect(
        client,
        &ConnectOptions {
            database: db.into(),
            user: Some("SYSDBA".into()),
            password: Some(pw.into()),
            charset: "UTF8".into(),
            ..Default::default()
        },
    )
    .expect("attach");
    let tr = att
        .start_transaction(TransactionMode::ReadOnlySnapshot)
        .expect("transaction");
    let started = Instant::now();
    let mut stmt = tr.prepare(sql).expect("prepare");
    stmt.fetch_through_xsqlda();
    stmt.execute().expect("execute");
    assert!(!stmt.fetches_messages());
    let mut rows = 0u64;
    while stmt.fetch().expect("fetch") {
        rows += 1;
    }
    (rows, started.elapsed().as_secs_f64())
}

/// A Firebird interface object: its second word points at the method table.
#[repr(C)]
struct Object {
    _dummy: *mut c_void,
    vtable: *const *const c_void,
}

/// The `index`-th method of `object`, counting from the first method of
/// the root interface (the table's first two words are not methods).
unsafe fn method<F: Copy>(object: *mut Object, index: usize) -> F {
    let slot = (*object).vtable.add(2 + index);
    std::mem::transmute_copy::<*const c_void, F>(&*slot)
}

type GetStatus = unsafe extern "C" fn(*mut Object) -> *mut Object;
type GetDispatcher = unsafe extern "C" fn(*mut Object) -> *mut Object;
type GetState = unsafe extern "C" fn(*mut Object) -> c_uint;
type AttachDatabase =
    unsafe extern "C" fn(*mut Object, *mut Object, *const c_char, c_uint, *const u8) -> *mut Object;
type StartTransaction =
    unsafe extern "C" fn(*mut Object, *mut Object, c_uint, *const u8) -> *mut Object;
#[allow(clippy::type_complexity)]
type OpenCursor = unsafe extern "C" fn(
    *mut Object,
    *mut Object,
    *mut Object,
    c_uint,
    *const c_char,
    c_uint,
    *mut Object,
    *mut c_void,
    *mut Object,
    *const c_char,
    c_uint,
) -> *mut Object;
type GetMetadata = unsafe extern "C" fn(*mut Object, *mut Object) -> *mut Object;
type GetMessageLength = unsafe extern "C" fn(*mut Object, *mut Object) -> c_uint;
type FetchNext = unsafe extern "C" fn(*mut Object, *mut Object, *mut c_void) -> c_int;
type StatusCall = unsafe extern "C" fn(*mut Object, *mut Object);

// Method indices, from FirebirdInterface.idl (Firebird 4/5).
const MASTER_GET_STATUS: usize = 0;
const MASTER_GET_DISPATCHER: usize = 1;
const STATUS_GET_STATE: usize = 2; // dispose, init, getState
const PROVIDER_ATTACH_DATABASE: usize = 4; // addRef, release, setOwner, getOwner
const ATTACHMENT_START_TRANSACTION: usize = 3; // addRef, release, getInfo
const ATTACHMENT_OPEN_CURSOR: usize = 14;
const ATTACHMENT_DETACH: usize = 26;
const TRANSACTION_ROLLBACK: usize = 13;
const RESULT_SET_FETCH_NEXT: usize = 2;
const RESULT_SET_GET_METADATA: usize = 10;
const RESULT_SET_CLOSE: usize = 13;
const METADATA_GET_MESSAGE_LENGTH: usize = 16;
const STATE_ERRORS: c_uint = 0x02;
const RESULT_OK: c_int = 0;

struct OoApi {
    master: *mut Object,
    _lib: libloading::Library,
}

impl OoApi {
    fn open(source: &LibrarySource) -> OoApi {
        let name = source.library().to_owned();
        // SAFETY: the library Client::load already loaded; this only takes
        // another reference to it.
        unsafe {
            let lib = libloading::Library::new(name).expect("libfbclient");
            let get_master: libloading::Symbol<unsafe extern "C" fn() -> *mut Object> = lib
                .get(b"fb_get_master_interface")
                .expect("fb_get_master_interface");
            let master = get_master();
            OoApi { master, _lib: lib }
        }
    }

    fn fetch_all(&self, db: &str, pw: &str, sql: &str) -> (u64, f64) {
        // SAFETY: each call goes through the method table of an object the
        // library gave us, with the argument list the IDL declares; every
        // result is checked before it is used.
        unsafe {
            let status = method::<GetStatus>(self.master, MASTER_GET_STATUS)(self.master);
            let check = |what: &str| {
                if method::<GetState>(status, STATUS_GET_STATE)(status) & STATE_ERRORS != 0 {
                    panic!("OO API: {what} failed");
                }
            };
            let provider = method::<GetDispatcher>(self.master, MASTER_GET_DISPATCHER)(self.master);
            let mut dpb = vec![1u8]; // isc_dpb_version1
            for (tag, value) in [(28u8, "SYSDBA"), (29, pw), (48, "UTF8")] {
                dpb.extend([tag, value.len() as u8]);
                dpb.extend(value.as_bytes());
            }
            let file = CString::new(db).unwrap();
            let att = method::<AttachDatabase>(provider, PROVIDER_ATTACH_DATABASE)(
                provider,
                status,
                file.as_ptr(),
                dpb.len() as c_uint,
                dpb.as_ptr(),
            );
            check("attachDatabase");
            // isc_tpb_version3, isc_tpb_concurrency, isc_tpb_read
            let tpb = [3u8, 2, 8];
            let tra = method::<StartTransaction>(att, ATTACHMENT_START_TRANSACTION)(
                att,
                status,
                tpb.len() as c_uint,
                tpb.as_ptr(),
            );
            check("startTransaction");
            let started = Instant::now();
            let text = CString::new(sql).unwrap();
            let cursor = method::<OpenCursor>(att, ATTACHMENT_OPEN_CURSOR)(
                att,
                status,
                tra,
                sql.len() as c_uint,
                text.as_ptr(),
                3,
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null_mut(),
                std::ptr::null(),
                0,
            );
            check("openCursor");
            let meta = method::<GetMetadata>(cursor, RESULT_SET_GET_METADATA)(cursor, status);
            check("getMetadata");
            let length =
                method::<GetMessageLength>(meta, METADATA_GET_MESSAGE_LENGTH)(meta, status);
            check("getMessageLength");
            // 8-byte aligned, as the message's own offsets assume.
            let mut message = vec![0u64; (length as usize).div_ceil(8)];
            let fetch = method::<FetchNext>(cursor, RESULT_SET_FETCH_NEXT);
            let mut rows = 0u64;
            while fetch(cursor, status, message.as_mut_ptr().cast()) == RESULT_OK {
                rows += 1;
            }
            check("fetchNext");
            let elapsed = started.elapsed().as_secs_f64();
            method::<StatusCall>(cursor, RESULT_SET_CLOSE)(cursor, status);
            method::<StatusCall>(tra, TRANSACTION_ROLLBACK)(tra, status);
            method::<StatusCall>(att, ATTACHMENT_DETACH)(att, status);
            check("cleanup");
            (rows, elapsed)
        }
    }
}
