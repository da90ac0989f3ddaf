//! DSQL statements: prepared and described with an XSQLDA, fetched as OO
//! API messages where the client library allows (see [`crate::message`]),
//! else through the XSQLDA.
//!
//! Either way every output column has a fixed slot in one 8-byte-aligned
//! buffer that each fetch overwrites: a fetch costs no allocation, and a
//! [`Row`] is just a view of the buffer until the next fetch. Columns are
//! described by [`ColumnDesc`], the raw XSQLVAR facts the decoder needs
//! (type, scale, subtype, length), which hold for both paths.

use std::os::raw::c_char;
use std::sync::Arc;

use crate::attachment::Transaction;
use crate::error::ClientError;
use crate::ffi::{self, sql_type, Handle, StatusVector, XsqlVar, Xsqlda};
use crate::message::MessageCursor;
use crate::waits;

/// One output column as the server describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ColumnDesc {
    /// The XSQLVAR alias (up to 31 bytes: catalog names are authoritative).
    pub name: String,
    /// SQL type code without the nullable bit; see [`crate::sql_type`].
    pub sql_type: i16,
    /// Decimal scale, zero or negative (`-2` means two decimal places).
    pub scale: i16,
    /// Blob subtype, or for text types the character set id.
    pub subtype: i16,
    /// Length of the value in bytes (for VARCHAR, the maximum).
    pub length: u16,
    pub nullable: bool,
}

impl ColumnDesc {
    /// The character set id of a CHAR/VARCHAR column.
    pub fn charset_id(&self) -> u8 {
        (self.subtype & 0xff) as u8
    }
}

/// A prepared statement, and when executed, its open cursor.
pub struct Statement<'t> {
    transaction: &'t Transaction,
    handle: Handle,
    columns: Vec<ColumnDesc>,
    // The XSQLDA lives in a u64 buffer for alignment; it points into `data`
    // and `nulls`, which are never resized after `bind_buffers`.
    sqlda: Vec<u64>,
    data: Vec<u64>,
    nulls: Vec<i16>,
    offsets: Vec<usize>,
    cursor_open: bool,
    /// The OO interfaces behind the handles, made at the first execute.
    message: Option<MessageCursor>,
    message_tried: bool,
    /// Whether the open cursor (or the last row) came through `message`.
    via_message: bool,
    /// What it reads, for a watcher of reads that never finish.
    subject: Arc<str>,
}

impl<'t> Statement<'t> {
    pub(crate) fn prepare(
        transaction: &'t Transaction,
        subject: &str,
        sql: &str,
    ) -> Result<Self, ClientError> {
        if sql.len() > u16::MAX as usize {
            return Err(ClientError::Invalid(format!(
                "query of {} bytes exceeds Firebird's 64 KiB limit",
                sql.len()
            )));
        }
        transaction
            .attachment
            .inner
            .prepared
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let api = &transaction.client().api;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut db = transaction.attachment.handle();
        let mut handle: Handle = 0;
        // SAFETY: pointers valid for the call.
        unsafe {
            (api.isc_dsql_allocate_statement)(status.as_mut_ptr(), &mut db, &mut handle);
        }
        transaction.check(&status)?;
        let mut stmt = Statement {
            transaction,
            handle,
            columns: Vec::new(),
            sqlda: new_sqlda(1),
            data: Vec::new(),
            nulls: Vec::new(),
            offsets: Vec::new(),
            cursor_open: false,
            message: None,
            message_tried: false,
            via_message: false,
            subject: Arc::from(subject),
        };
        let mut tr = transaction.handle;
        // The prepare is where a query waits on its tables' definitions;
        // on a watched thread it is a read like any other, so that a server
        // that stops answering during it is not left to --lock-timeout.
        let under_way = waits::begin(subject);
        let read = waits::reading(Some(&stmt.subject));
        // SAFETY: the XSQLDA has room for `sqln` variables.
        unsafe {
            (api.isc_dsql_prepare)(
                status.as_mut_ptr(),
                &mut tr,
                &mut stmt.handle,
                sql.len() as u16,
                sql.as_ptr() as *const c_char,
                ffi::SQL_DIALECT_V6,
                stmt.sqlda_ptr(),
            );
        }
        transaction.check(&status)?;
        let count = stmt.header().sqld as usize;
        if count > 1 {
            stmt.sqlda = new_sqlda(count);
            // SAFETY: as above, now with room for every column.
            unsafe {
                (api.isc_dsql_describe)(
                    status.as_mut_ptr(),
                    &mut stmt.handle,
                    ffi::SQLDA_VERSION1,
                    stmt.sqlda_ptr(),
                );
            }
            transaction.check(&status)?;
        }
        drop(read);
        drop(under_way);
        stmt.bind_buffers(count);
        Ok(stmt)
    }

    pub fn columns(&self) -> &[ColumnDesc] {
        &self.columns
    }

    /// Opens the cursor.
    pub fn execute(&mut self) -> Result<(), ClientError> {
        self.close_cursor();
        // Opening is where a query does its first work on the server.
        let _read = waits::reading(Some(&self.subject));
        self.via_message = false;
        if !self.columns.is_empty() {
            self.prepare_message_cursor();
            if let Some(cursor) = self.message.as_mut() {
                match cursor.open(&self.columns) {
                    Ok(true) => {
                        self.via_message = true;
                        self.cursor_open = true;
                        return Ok(());
                    }
                    Ok(false) => {}
                    Err(status) => return Err(self.transaction.attachment.fail(&status)),
                }
            }
        }
        let api = &self.transaction.client().api;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let mut tr = self.transaction.handle;
        // SAFETY: no input parameters; handles valid.
        unsafe {
            (api.isc_dsql_execute)(
                status.as_mut_ptr(),
                &mut tr,
                &mut self.handle,
                ffi::SQLDA_VERSION1,
                std::ptr::null(),
            );
        }
        self.transaction.check(&status)?;
        self.cursor_open = !self.columns.is_empty();
        Ok(())
    }

    fn prepare_message_cursor(&mut self) {
        if !self.message_tried {
            self.message_tried = true;
            let entry = self.transaction.client().api.message.as_ref();
            self.message =
                entry.and_then(|e| MessageCursor::new(e, self.handle, self.transaction.handle));
        }
    }

    /// Fetches the next row into the buffer; `false` at the end.
    pub fn fetch(&mut self) -> Result<bool, ClientError> {
        crate::fp_flags::clear_sticky_exception_flags();
        let _read = waits::reading(Some(&self.subject));
        if self.via_message {
            let cursor = self
                .message
                .as_mut()
                .expect("opened through a message cursor");
            return match cursor.fetch() {
                Ok(more) => {
                    self.cursor_open = more;
                    Ok(more)
                }
                Err(status) => Err(self.transaction.attachment.fail(&status)),
            };
        }
        let api = &self.transaction.client().api;
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        // SAFETY: the XSQLDA points at buffers sized from its own description.
        let rc = unsafe {
            (api.isc_dsql_fetch)(
                status.as_mut_ptr(),
                &mut self.handle,
                ffi::SQLDA_VERSION1,
                self.sqlda_ptr(),
            )
        };
        match rc {
            0 => Ok(true),
            100 => {
                self.close_cursor();
                Ok(false)
            }
            _ => Err(self.transaction.attachment.fail(&status)),
        }
    }

    /// Makes later executes fetch through the XSQLDA even where messages
    /// are available: for comparing the two (`examples/fetch_api.rs`).
    pub fn fetch_through_xsqlda(&mut self) {
        self.close_cursor();
        self.message = None;
        self.message_tried = true;
    }

    /// Whether the open cursor delivers rows as OO API messages (else
    /// through the XSQLDA).
    pub fn fetches_messages(&self) -> bool {
        self.via_message
    }

    /// The row fetched last.
    pub fn row(&self) -> Row<'_> {
        Row { stmt: self }
    }

    fn close_cursor(&mut self) {
        if self.cursor_open && self.via_message {
            if let Some(cursor) = self.message.as_mut() {
                cursor.close();
            }
            self.cursor_open = false;
        } else if self.cursor_open {
            let mut status: StatusVector = [0; ffi::STATUS_LEN];
            // SAFETY: closing our own open cursor.
            unsafe {
                (self.transaction.client().api.isc_dsql_free_statement)(
                    status.as_mut_ptr(),
                    &mut self.handle,
                    ffi::DSQL_CLOSE,
                );
            }
            self.cursor_open = false;
        }
    }

    fn header(&self) -> &Xsqlda {
        // SAFETY: `sqlda` was sized and initialised by `new_sqlda`.
        unsafe { &*(self.sqlda.as_ptr() as *const Xsqlda) }
    }

    fn sqlda_ptr(&mut self) -> *mut Xsqlda {
        self.sqlda.as_mut_ptr() as *mut Xsqlda
    }

    fn var_mut(&mut self, i: usize) -> &mut XsqlVar {
        // SAFETY: i < sqln; the variables follow the header contiguously.
        unsafe { &mut *(*self.sqlda_ptr()).sqlvar.as_mut_ptr().add(i) }
    }

    /// Gives every column a slot, 8-byte aligned, in one data buffer.
    fn bind_buffers(&mut self, count: usize) {
        let mut offsets = Vec::with_capacity(count);
        let mut columns = Vec::with_capacity(count);
        let mut total = 0usize;
        for i in 0..count {
            let var = *self.var_mut(i);
            let sql_type = var.sqltype & !1;
            let length = var.sqllen as u16;
            let slot = length as usize + if sql_type == sql_type::VARYING { 2 } else { 0 };
            offsets.push(total);
            total += slot.div_ceil(8) * 8;
            let name_len = (var.aliasname_length.max(0) as usize).min(32);
            let name = var.aliasname[..name_len]
                .iter()
                .map(|c| *c as u8)
                .collect::<Vec<_>>();
            columns.push(ColumnDesc {
                name: String::from_utf8_lossy(&name).into_owned(),
                sql_type,
                scale: var.sqlscale,
                subtype: var.sqlsubtype,
                length,
                nullable: var.sqltype & 1 == 1,
            });
        }
        self.data = vec![0u64; total.div_ceil(8).max(1)];
        self.nulls = vec![0i16; count.max(1)];
        let data_ptr = self.data.as_mut_ptr() as *mut u8;
        let nulls_ptr = self.nulls.as_mut_ptr();
        for (i, offset) in offsets.iter().enumerate() {
            let var = self.var_mut(i);
            // Asking for an indicator on every column (the nullable bit) keeps
            // the fetch path uniform.
            var.sqltype |= 1;
            // SAFETY: offsets are inside `data`, indices inside `nulls`.
            var.sqldata = unsafe { data_ptr.add(*offset) } as *mut c_char;
            var.sqlind = unsafe { nulls_ptr.add(i) };
        }
        self.offsets = offsets;
        self.columns = columns;
    }
}

impl Drop for Statement<'_> {
    fn drop(&mut self) {
        // The interfaces go before the handle they stand for.
        drop(self.message.take());
        let mut status: StatusVector = [0; ffi::STATUS_LEN];
        let _waiting = crate::waits::reading(None);
        // SAFETY: dropping our own statement handle.
        unsafe {
            (self.transaction.client().api.isc_dsql_free_statement)(
                status.as_mut_ptr(),
                &mut self.handle,
                ffi::DSQL_DROP,
            );
        }
    }
}

/// A view of the row fetched last.
pub struct Row<'s> {
    stmt: &'s Statement<'s>,
}

impl<'s> Row<'s> {
    /// The buffer the last fetch wrote, and where `column`'s value starts.
    fn slot(&self, column: usize) -> (&'s [u8], usize) {
        let stmt = self.stmt;
        let (words, offset) = match stmt.message.as_ref().filter(|_| stmt.via_message) {
            Some(cursor) => (&cursor.buffer, cursor.layout.offsets[column]),
            None => (&stmt.data, stmt.offsets[column]),
        };
        // SAFETY: viewing the u64 buffer as bytes, for as long as the row.
        let bytes =
            unsafe { std::slice::from_raw_parts(words.as_ptr().cast::<u8>(), words.len() * 8) };
        (bytes, offset)
    }

    pub fn is_null(&self, column: usize) -> bool {
        let stmt = self.stmt;
        match stmt.message.as_ref().filter(|_| stmt.via_message) {
            Some(cursor) => {
                let (bytes, _) = self.slot(column);
                let at = cursor.layout.null_offsets[column];
                i16::from_ne_bytes([bytes[at], bytes[at + 1]]) != 0
            }
            None => stmt.nulls[column] != 0,
        }
    }

    /// The value's bytes in Firebird's in-memory layout, or `None` for NULL.
    /// VARCHAR values come without their length prefix; CHAR values with
    /// their padding.
    pub fn value(&self, column: usize) -> Option<&'s [u8]> {
        if self.is_null(column) {
            return None;
        }
        let desc = &self.stmt.columns[column];
        let (bytes, offset) = self.slot(column);
        if desc.sql_type == sql_type::VARYING {
            let len = u16::from_ne_bytes([bytes[offset], bytes[offset + 1]]) as usize;
            Some(&bytes[offset + 2..offset + 2 + len.min(desc.length as usize)])
        } else {
            Some(&bytes[offset..offset + desc.length as usize])
        }
    }

    /// The transaction the row was read in, for reading its blobs.
    pub fn transaction(&self) -> &'s Transaction {
        self.stmt.transaction
    }
}

pub(crate) fn new_sqlda(vars: usize) -> Vec<u64> {
    let bytes =
        std::mem::size_of::<Xsqlda>() + vars.saturating_sub(1) * std::mem::size_of::<XsqlVar>();
    let mut buf = vec![0u64; bytes.div_ceil(8)];
    // SAFETY: the buffer is large enough and zeroed; we set the header.
    let header = unsafe { &mut *(buf.as_mut_ptr() as *mut Xsqlda) };
    header.version = ffi::SQLDA_VERSION1 as i16;
    header.sqln = vars as i16;
    buf
}
