//! A snapshot held open so that readers can join it later, one at a time,
//! from other threads or other processes: what a Dask graph reads at.
//!
//! A run ([`crate::Prepared::run`]) starts all its readers together, right
//! after the snapshot's holder (see [`crate::firebird`]). Here a reader
//! comes whenever its task is scheduled, seconds or minutes later, and by
//! then transactions that were running when the snapshot was taken may
//! have committed. A joiner whose oldest interesting transaction (OIT) has
//! moved past one of them takes it as committed and sees its changes. So
//! the snapshot is taken in two steps: first a *pin*, a transaction that
//! counts as interesting, so the OIT cannot move past it while it lives;
//! then, once every transaction older than the pin has ended, the
//! snapshot itself. Every transaction running at the snapshot is then
//! younger than the pin, and however late a reader joins, its OIT is at
//! most the pin: it sees what the holder sees.
//!
//! The snapshots a process holds on one database share one pin. With a pin
//! each, a snapshot taken while another is held would find the other's pin
//! running, older than its own; it could not wait for it to end, and once
//! the other snapshot closed, its readers would have to be refused.
//!
//! A reader still checks both things it relies on: that its OIT is not
//! above the snapshot's oldest active transaction (the wait for older
//! transactions gives up after [`OLDER_TRANSACTIONS_WAIT`], so one may
//! still be running and commit later), and that the snapshot's holder is
//! still active (`RDB$GET_TRANSACTION_CN` is 0 while a transaction is). A
//! snapshot that was closed is an error, never another state of the data.
//!
//! Servers before Firebird 4 cannot share a snapshot: there a held
//! snapshot is only a plan, and only if the caller allows inconsistent
//! reads, each reader then reading in a snapshot of its own.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use arrow_schema::SchemaRef;
use fbunload_client::{Attachment, Interrupter, ReadWatch, Transaction, TransactionMode};
use fbunload_decode::{BatchLimits, TypeOptions};
use fbunload_plan::estimate::used_slots_end;
use fbunload_plan::{CatalogError, Plan, PlanOptions, TableFilter, TablePlan, Unit};

use crate::firebird::{self, subject, Database, FirebirdReader, ReadContext};
use crate::session::Reader;
use crate::{ExecError, RunOptions};

/// How long taking a snapshot waits for transactions older than its pin
/// to end (module docs); after that it takes it anyway, and readers fail
/// only if one of them commits before they join.
pub const OLDER_TRANSACTIONS_WAIT: Duration = Duration::from_secs(2);
/// How often it looks in the meantime.
const OLDER_TRANSACTIONS_POLL: Duration = Duration::from_millis(5);

/// What a reader anywhere needs to join a held snapshot: plain numbers,
/// to be sent to other processes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotTicket {
    /// The snapshot number (`isc_tpb_at_snapshot_number`).
    pub number: u64,
    /// The transaction that holds the snapshot: it is held while this one
    /// is active.
    pub holder_transaction: u64,
    /// The oldest transaction active when the snapshot was taken: no
    /// reader may take a transaction from there on as committed.
    pub oldest_active: u64,
}

/// A transaction that keeps the OIT from passing it, on an attachment of
/// its own, shared by every snapshot this process holds on a database
/// (module docs); it ends with the last of them.
struct Pin {
    number: u64,
    _transaction: Transaction,
}

/// Where a pin is found again: the database, user and role.
type PinKey = (String, Option<String>, Option<String>);

/// The pins of this process, while some snapshot holds them.
static PINS: Mutex<Vec<(PinKey, Weak<Pin>)>> = Mutex::new(Vec::new());

/// This process's pin on `db`, started if no snapshot holds one.
fn pin_for(db: &Database) -> Result<Arc<Pin>, ExecError> {
    let key = (
        db.connect.database.clone(),
        db.connect.user.clone(),
        db.connect.role.clone(),
    );
    // Locked while a pin starts, so that two snapshots opened at once
    // share one.
    let mut pins = PINS.lock().unwrap();
    pins.retain(|(_, pin)| pin.strong_count() > 0);
    if let Some(pin) = pins
        .iter()
        .find(|(k, _)| *k == key)
        .and_then(|(_, pin)| pin.upgrade())
    {
        return Ok(pin);
    }
    let attachment = db.attach(false)?;
    // A read-only database refuses a read-write transaction, and needs no
    // pin: nothing commits there.
    let transaction = attachment
        .start_transaction(TransactionMode::HoldingSnapshot)
        .or_else(|_| attachment.start_transaction(TransactionMode::ReadOnlySnapshot))
        .map_err(ExecError::Client)?;
    let pin = Arc::new(Pin {
        number: transaction.number().map_err(ExecError::Client)?,
        _transaction: transaction,
    });
    pins.push((key, Arc::downgrade(&pin)));
    Ok(pin)
}

/// A snapshot held by a main attachment, with the plan of the tables read
/// in it. Dropping it closes the snapshot: readers that join afterwards
/// fail with [`ExecError::SnapshotClosed`].
pub struct HeldSnapshot {
    pub plan: Arc<Plan>,
    /// The Arrow schema of each table of the plan.
    pub schemas: Arc<Vec<SchemaRef>>,
    pub server_version: String,
    /// `None` where the server cannot share snapshots.
    ticket: Option<SnapshotTicket>,
    db: Database,
    types: TypeOptions,
    batch: BatchLimits,
    stall_timeout: Option<Duration>,
    /// The transaction that holds the snapshot, on the main attachment,
    /// and the pin it relies on; none where the server cannot share
    /// snapshots.
    holder: Option<(Transaction, Arc<Pin>)>,
}

impl HeldSnapshot {
    /// Attaches, takes the snapshot and plans the tables `filter` selects
    /// in it (`options.parallel` sizes the units, as for a run). On a
    /// server without shared snapshots this is refused unless
    /// `options.allow_inconsistent`.
    pub fn open(
        db: Database,
        filter: &TableFilter,
        options: &RunOptions,
    ) -> Result<HeldSnapshot, ExecError> {
        let main = db.attach(false)?;
        let version = main.server_version().map_err(ExecError::Client)?;
        let plan_options = PlanOptions {
            workers: options.parallel,
            ..options.plan
        };
        let (holder, ticket, (plan, schemas)) = if version.has_shared_snapshots() {
            let pin = pin_for(&db)?;
            let (holder, ticket) = take_snapshot(&main, &pin)?;
            let plan = firebird::plan_in(&holder, filter, plan_options, true, &options.types)?;
            (Some((holder, pin)), Some(ticket), plan)
        } else if options.allow_inconsistent {
            let plan = firebird::plan(&main, filter, plan_options, false, &options.types, None)?;
            (None, None, plan)
        } else {
            return Err(ExecError::Usage(format!(
                "{} cannot share a snapshot between connections, so readers joining one later \
                 would each see another state of the data; use Firebird 4 or later, or allow \
                 inconsistent reads (each reader in a snapshot of its own)",
                version.text
            )));
        };
        Ok(HeldSnapshot {
            plan: Arc::new(plan),
            schemas: Arc::new(schemas),
            server_version: version.text,
            ticket,
            db,
            types: options.types,
            batch: options.batch,
            stall_timeout: options.stall_timeout,
            holder,
        })
    }

    /// What readers in other processes join it with; `None` where the
    /// server cannot share snapshots.
    pub fn ticket(&self) -> Option<SnapshotTicket> {
        self.ticket
    }

    /// Table `table` cut into at most `count` units of about equal pages
    /// (by default as many as the plan has), over the pages its rows
    /// occupy, so that a half-filled last pointer page leaves no share
    /// empty. Finding those pages takes a few one-row queries (each
    /// narrowing the search 41 times).
    pub fn shares(&self, table: usize, count: Option<usize>) -> Result<Vec<Unit>, ExecError> {
        let plan = &self.plan.tables[table];
        let count = count.unwrap_or(plan.unit_count);
        let used_slots = match &self.holder {
            Some((holder, _)) if plan.slots() > 0 => used_slots(holder, plan)?,
            _ => 0,
        };
        Ok(plan.units_in_shares(table, count, used_slots))
    }

    /// A reader of table `table` of the plan, on a new attachment.
    pub fn reader(&self, table: usize) -> Result<SnapshotReader, ExecError> {
        SnapshotReader::join(
            &self.db,
            &self.plan.tables[table].name,
            self.ticket.as_ref(),
            self.types,
            self.batch,
            self.stall_timeout,
        )
    }
}

/// The data-page slots up to the last that holds a row of `table` at
/// `tr`'s snapshot.
fn used_slots(tr: &Transaction, table: &TablePlan) -> Result<u64, ExecError> {
    Ok(used_slots_from(tr, table, 0, table.slots())?.unwrap_or(0))
}

/// The end of the slots that hold rows of `table`, searched between
/// `from` and `to` (see [`fbunload_plan::estimate::used_slots_end`]): a
/// query of [`fbunload_plan::estimate::PROBES`] `EXISTS` a round, two rounds a pointer page at
/// 8 KiB pages.
pub(crate) fn used_slots_from(
    tr: &Transaction,
    table: &TablePlan,
    from: u64,
    to: u64,
) -> Result<Option<u64>, ExecError> {
    let rows_from = |slots: &[u64]| {
        let mut stmt = tr.prepare_for(&subject(table), &table.rows_from_sql(slots))?;
        stmt.execute()?;
        stmt.fetch()?;
        let value = stmt.row().value(0).unwrap_or(&[0; 8]);
        Ok(i64::from_ne_bytes(value.try_into().unwrap_or([0; 8])).max(0) as usize)
    };
    used_slots_end(from, to, rows_from).map_err(|e| ExecError::from_client(&table.name, e))
}

/// Takes the snapshot once every transaction older than `pin` has ended,
/// or [`OLDER_TRANSACTIONS_WAIT`] has passed (module docs).
fn take_snapshot(main: &Attachment, pin: &Pin) -> Result<(Transaction, SnapshotTicket), ExecError> {
    let client = ExecError::Client;
    let deadline = Instant::now() + OLDER_TRANSACTIONS_WAIT;
    loop {
        let holder = main
            .start_transaction(TransactionMode::ReadOnlySnapshot)
            .map_err(client)?;
        let ticket = SnapshotTicket {
            number: holder.snapshot_number().map_err(client)?,
            holder_transaction: holder.number().map_err(client)?,
            oldest_active: holder.oldest_active().map_err(client)?,
        };
        if ticket.oldest_active >= pin.number || Instant::now() >= deadline {
            return Ok((holder, ticket));
        }
        drop(holder);
        std::thread::sleep(OLDER_TRANSACTIONS_POLL);
    }
}

/// One attachment reading units of one table at a held snapshot.
pub struct SnapshotReader {
    reader: FirebirdReader,
    schema: SchemaRef,
    /// See [`RunOptions::stall_timeout`]: a read waiting this long for the
    /// database has its connection closed and fails.
    stall_timeout: Option<Duration>,
    connection: Interrupter,
}

impl SnapshotReader {
    /// Attaches and joins the snapshot of `ticket` (or, with `None`, starts
    /// a snapshot of its own), then reads the catalog of table `table` as
    /// it was at that snapshot.
    pub fn join(
        db: &Database,
        table: &str,
        ticket: Option<&SnapshotTicket>,
        types: TypeOptions,
        batch: BatchLimits,
        stall_timeout: Option<Duration>,
    ) -> Result<SnapshotReader, ExecError> {
        let filter = TableFilter::named(table);
        Self::join_first(db, &filter, ticket, types, batch, stall_timeout).map_err(|e| match e {
            ExecError::Catalog(CatalogError::NoTables(_)) => ExecError::table(
                table,
                "no such table at this snapshot (names are case-sensitive)",
            ),
            e => e,
        })
    }

    /// [`Self::join`] for the first table, view or query `filter` selects
    /// (a query of one: what a held snapshot of it planned), as planned
    /// at the snapshot.
    pub fn join_first(
        db: &Database,
        filter: &TableFilter,
        ticket: Option<&SnapshotTicket>,
        types: TypeOptions,
        batch: BatchLimits,
        stall_timeout: Option<Duration>,
    ) -> Result<SnapshotReader, ExecError> {
        let attachment = db.attach(true)?;
        let tr = match ticket {
            Some(ticket) => join(&attachment, ticket)?,
            None => attachment
                .start_transaction(TransactionMode::ReadOnlySnapshot)
                .map_err(ExecError::Client)?,
        };
        let (plan, schemas) = firebird::plan_in(
            &tr,
            filter,
            PlanOptions::default(),
            ticket.is_some(),
            &types,
        )?;
        let schema = schemas[0].clone();
        let context = ReadContext {
            plan: Arc::new(plan),
            schemas: Arc::new(schemas),
            types,
            batch,
            // Read by the caller's threads; `read` watches them.
            read_group: fbunload_client::new_read_group(),
        };
        Ok(SnapshotReader {
            connection: attachment.interrupter(),
            reader: FirebirdReader::new(Arc::new(tr), Arc::new(context)),
            schema,
            stall_timeout,
        })
    }

    /// The Arrow schema of the table at the snapshot.
    pub fn schema(&self) -> SchemaRef {
        self.schema.clone()
    }

    /// Reads the rows of `unit`, a unit of this table in the holder's plan
    /// (its DB_KEY range; its table index is the plan's, not used here),
    /// handing its batches to `deliver` in order until it returns `false`.
    /// Returns the rows read.
    ///
    /// A call of the read that the database does not answer within the
    /// stall timeout (a server stopped or stuck, a connection dropped
    /// without being closed) closes this reader's connection and fails the
    /// read with [`ExecError::Stalled`]; the reader is of no use after it.
    pub fn read(
        &mut self,
        unit: &Unit,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError> {
        let unit = Unit { table: 0, ..*unit };
        let Some(limit) = self.stall_timeout else {
            return self.reader.read(&unit, false, deliver);
        };
        let group = self.reader.read_group();
        let (reader, connection) = (&mut self.reader, &self.connection);
        let done = AtomicBool::new(false);
        let stalled: Mutex<Option<String>> = Mutex::new(None);
        let result = std::thread::scope(|scope| {
            let watcher = scope.spawn(|| {
                let mut reads = ReadWatch::of_group(group);
                while !done.load(Ordering::SeqCst) {
                    std::thread::park_timeout(READ_WATCH_TICK);
                    if let Some(read) = reads.look().filter(|read| read.waited >= limit) {
                        *stalled.lock().unwrap() = Some(read.subject);
                        connection.abort_connection();
                        return;
                    }
                }
            });
            let result = reader.read(&unit, false, deliver);
            done.store(true, Ordering::SeqCst);
            watcher.thread().unpark();
            result
        });
        match stalled.into_inner().unwrap() {
            Some(subject) => Err(ExecError::Stalled {
                subject,
                seconds: limit.as_secs(),
            }),
            None => result,
        }
    }
}

/// How often a reader's watch looks at its read.
const READ_WATCH_TICK: Duration = Duration::from_millis(50);

/// A transaction on `attachment` at the ticket's snapshot, once sure that
/// it sees what the holder sees (module docs).
fn join(attachment: &Attachment, ticket: &SnapshotTicket) -> Result<Transaction, ExecError> {
    let number = ticket.number;
    let closed = ExecError::SnapshotClosed { number };
    let tr = match attachment.start_transaction(TransactionMode::ReadOnlyAtSnapshot(number)) {
        Ok(tr) => tr,
        Err(e) => {
            // A snapshot nobody holds any more cannot be joined.
            let plain = attachment
                .start_transaction(TransactionMode::ReadOnlySnapshot)
                .map_err(ExecError::Client)?;
            if !is_active(&plain, ticket.holder_transaction)? {
                return Err(closed);
            }
            return Err(ExecError::Server(format!(
                "cannot join snapshot {number}: {e}"
            )));
        }
    };
    if !is_active(&tr, ticket.holder_transaction)? {
        return Err(closed);
    }
    if tr.oldest_interesting().map_err(ExecError::Client)? > ticket.oldest_active {
        return Err(ExecError::Server(format!(
            "cannot join snapshot {number} any more: a transaction that was running when it \
             was taken has committed since, and Firebird would show its changes to a reader \
             joining now. Read again at a new snapshot"
        )));
    }
    Ok(tr)
}

/// Whether transaction `number` is still active, as `tr` sees it now.
fn is_active(tr: &Transaction, number: u64) -> Result<bool, ExecError> {
    let sql = format!("SELECT RDB$GET_TRANSACTION_CN({number}) FROM RDB$DATABASE");
    let state = (|| {
        let mut stmt = tr.prepare(&sql)?;
        stmt.execute()?;
        stmt.fetch()?;
        let value = stmt.row().value(0).map(|v| v.to_vec());
        Ok::<_, fbunload_client::ClientError>(value)
    })()
    .map_err(ExecError::Client)?;
    // NULL (a number never used) or a commit number: not active.
    Ok(state.is_some_and(|v| v.iter().all(|b| *b == 0)))
}
