//! The Firebird client layer: `libfbclient` loaded at run time, and safe
//! wrappers over the legacy ISC API (attachments, transactions, DSQL cursors,
//! blobs), with rows fetched through the OO API.
//!
//! Why load at run time instead of linking: the same binary then works with
//! the embedded engine shipped by the `firebird-embedded` Python package, a
//! server's client library, or one named by `--client-lib`, without a
//! Firebird SDK at build time. Why the legacy ISC API for attaching,
//! preparing and describing: it is plain C functions, stable since
//! InterBase, in every client library from Firebird 2.5 to 5. Rows, the hot
//! path, are fetched as OO API messages where the library has them (see
//! `message`): that skips the copy into the XSQLDA, about 10% of the fetch.
//!
//! Everything above this crate sees only safe types: [`Client`],
//! [`Attachment`], [`Transaction`], [`Statement`] and the raw column values
//! of a fetched [`Row`], described by [`ColumnDesc`].

mod array;
mod attachment;
mod error;
mod ffi;
mod fp_flags;
mod locate;
mod message;
mod params;
mod places;
mod statement;
mod waits;

pub use array::{element, ArrayShape, ElementType};
pub use attachment::{
    embedded_engine_may_run, is_plain_path, Attachment, ConnectOptions, Interrupter, ServerVersion,
    Transaction, TransactionMode,
};
pub use error::{ClientError, FbError, Ods, OdsMismatch, StatusCode};
pub use ffi::sql_type;
pub use locate::{Client, LibrarySource};
pub use params::{WireCrypt, WireOptions, EMBEDDED_CACHE_PAGES};
pub use places::set_embedded_runtime_lookup;
pub use statement::{ColumnDesc, Row, Statement};
pub use waits::{
    longest_prepare, name_reads_on_this_thread, new_read_group, stop_watching_reads_on_this_thread,
    watch_reads_on_this_thread, Preparing, ReadWatch, StalledRead,
};

/// A blob id as stored in a row: the 8 raw bytes of an `ISC_QUAD`.
pub type BlobId = [u8; 8];
