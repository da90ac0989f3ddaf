//! Reader processes: a run's workers spread over child processes, for a
//! server.
//!
//! Firebird's client library spends more CPU per row the more threads of
//! one process fetch over TCP (measured on 16 cores: a plain C program
//! fetching with 16 threads used four times the CPU of 4 threads for the
//! same rows, and several processes together went nearly twice as fast as
//! one with all the threads). So for a server the run can start `K`
//! reader processes (the same program, [`ReaderCommand`]), each holding a
//! few of the run's attachments, while this process keeps everything
//! else: the plan, the snapshot's holder, the dispatcher that hands out
//! units and redoes lost ones, `--verify`'s counts, and the destination
//! that writes in DB_KEY order. To the dispatcher a slot of a reader
//! process is one more [`Reader`].
//!
//! - **One snapshot.** The run's main attachment takes the snapshot as it
//!   does for threads; each reader process starts its slots'
//!   transactions at its number, from its main thread, and reports their
//!   oldest interesting transactions, which must not pass the holder's
//!   oldest active one (see [`crate::firebird`]), or the join is tried
//!   again.
//! - **The work.** A slot fetches and decodes its unit into Arrow batches
//!   in its process and sends them back as Arrow IPC; the run hands them
//!   to the destination as a worker thread would have, so the output is
//!   the same bytes. A slot sends at most [`CREDIT`] batches ahead of the
//!   run's taking them, which bounds the memory in between.
//! - **A killed reader process** is a lost connection to each of its
//!   slots: their units are redone on new attachments of this process at
//!   the same snapshot, or the run fails as for any lost connection.
//! - **Stopping.** Reader processes run in a process group of their own
//!   (on Windows, without Ctrl-C), so a signal reaches only the run, which
//!   stops them; they leave as soon as their standard input closes, so
//!   even a run killed outright leaves none behind.
//! - **The password** goes to them over that pipe, never on their command
//!   line or in their environment (`ISC_PASSWORD` is removed from it). So
//!   they run only what the run trusts: the image the run runs
//!   ([`ReaderCommand::this_program`]), never a file put at its path
//!   since, in `/`, never the run's working directory (a Python reader
//!   would import from it; it also runs isolated, see `_reader.py`).
//! - **No wait without end.** Sending a reader process its setup, its
//!   attach and its snapshot join are watched as reads are
//!   ([`Session::longest_read`], so `--stall-timeout` ends a reader that
//!   never answers, stopped or waiting on a server that stopped), and end
//!   at once when the run stops (a signal): the run kills its reader
//!   processes, which ends a send blocked on one. A stopped reader
//!   process is named in the error, not the database.

mod serve;
mod wire;

use std::ffi::OsString;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::process::{ChildStdin, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use arrow_array::RecordBatch;
use fbunload_client::LibrarySource;
use fbunload_plan::{printable, Plan, Unit};

use crate::firebird::{subject, FirebirdReader, FirebirdSession};
use crate::session::{Reader, Session};
use crate::ExecError;
use wire::{Failure, Frame, ReadUnit, Setup, Tag, WHOLE};

pub use serve::serve_reader;

/// Batches a slot may send before the run has taken the first of them.
const CREDIT: usize = 2;

/// How long a reader process may take to leave after its input closes
/// before it is killed.
const LEAVE_GRACE: Duration = Duration::from_secs(2);

/// How to start a reader process: a program that calls [`serve_reader`]
/// when given these arguments (the `fbunload` binary with a hidden
/// argument; a Python interpreter with `-I .../fbunload/_reader.py`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReaderCommand {
    pub program: PathBuf,
    pub args: Vec<OsString>,
    /// What the process is called (its `argv[0]`), where `program` is
    /// not its name ([`ReaderCommand::this_program`]).
    pub arg0: Option<OsString>,
}

/// The image this process runs, on Linux: executing it starts the same
/// program even after its file was replaced or deleted (an upgrade during
/// the run, a `mv` over it), where its path would start the new file and
/// hand it the password.
#[cfg(target_os = "linux")]
const RUNNING_IMAGE: &str = "/proc/self/exe";

impl ReaderCommand {
    /// This process's own program with `args`: on Linux the image it runs
    /// ([`RUNNING_IMAGE`]), called `name` (a Python interpreter finds its
    /// environment from the name it is called by); elsewhere the file
    /// `name`, which must not change during a run.
    pub fn this_program(name: PathBuf, args: Vec<OsString>) -> ReaderCommand {
        #[cfg(target_os = "linux")]
        if std::path::Path::new(RUNNING_IMAGE).exists() {
            return ReaderCommand {
                program: RUNNING_IMAGE.into(),
                args,
                arg0: Some(name.into_os_string()),
            };
        }
        ReaderCommand {
            program: name,
            args,
            arg0: None,
        }
    }

    /// The program for messages: the name it is called by.
    fn shown(&self) -> std::path::Display<'_> {
        match &self.arg0 {
            Some(name) => std::path::Path::new(name).display(),
            None => self.program.display(),
        }
    }
}

static READER_COMMAND: Mutex<Option<ReaderCommand>> = Mutex::new(None);

/// Sets how this process starts reader processes, for runs whose options
/// name none ([`crate::RunOptions::reader_command`]); without one, every
/// run's workers are threads.
pub fn set_reader_command(command: Option<ReaderCommand>) {
    *READER_COMMAND.lock().unwrap() = command;
}

/// What [`set_reader_command`] set.
pub fn reader_command() -> Option<ReaderCommand> {
    READER_COMMAND.lock().unwrap().clone()
}

/// What a reader process says about one of its slots.
enum FromSlot {
    Batch(Vec<u8>),
    Done(u64),
    Failed(Failure),
    /// The process ended (killed, crashed) or its output broke.
    Gone(String),
}

/// What it says about itself.
enum Control {
    Attached,
    Joined(Vec<u64>),
    Failed(Failure),
    Gone(String),
}

/// One reader process.
struct Child {
    /// 1-based, for messages.
    number: usize,
    pid: u32,
    process: Mutex<std::process::Child>,
    /// Closed (`None`) to make it leave.
    input: Mutex<Option<ChildStdin>>,
    control: Mutex<Receiver<Control>>,
}

impl Child {
    /// Starts reader process `number` with `slots` attachments to make;
    /// [`Child::send_setup`] then tells it what to do.
    fn spawn(
        command: &ReaderCommand,
        number: usize,
        slots: usize,
    ) -> Result<(Arc<Child>, Vec<Receiver<FromSlot>>), ExecError> {
        let mut cmd = Command::new(&command.program);
        cmd.args(&command.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            // The password is in the setup, sent over the pipe.
            .env_remove("ISC_PASSWORD");
        #[cfg(unix)]
        if let Some(arg0) = &command.arg0 {
            use std::os::unix::process::CommandExt;
            cmd.arg0(arg0);
        }
        if let Some(dir) = safe_working_directory() {
            // Nothing of the run's working directory (another user's,
            // say) can be picked up by the reader process.
            cmd.current_dir(dir);
        }
        #[cfg(unix)]
        {
            use std::os::unix::process::CommandExt;
            // Out of the terminal's process group: Ctrl-C reaches only the
            // run, which stops its readers itself.
            cmd.process_group(0);
        }
        #[cfg(windows)]
        {
            use std::os::windows::process::CommandExt;
            // CREATE_NEW_PROCESS_GROUP: no Ctrl-C for it.
            cmd.creation_flags(0x0000_0200);
        }
        let mut process = cmd.spawn().map_err(|e| {
            ExecError::Server(format!(
                "cannot start a reader process ({}): {e}; --processes 0 reads with threads only",
                command.shown()
            ))
        })?;
        let input = process.stdin.take().expect("piped");
        let output = process.stdout.take().expect("piped");
        let (control_tx, control_rx) = channel();
        let (slot_txs, slot_rxs): (Vec<_>, Vec<_>) = (0..slots).map(|_| channel()).unzip();
        let child = Arc::new(Child {
            number,
            pid: process.id(),
            process: Mutex::new(process),
            input: Mutex::new(Some(input)),
            control: Mutex::new(control_rx),
        });
        {
            let child = child.clone();
            std::thread::spawn(move || child.route(output, control_tx, slot_txs));
        }
        Ok((child, slot_rxs))
    }

    /// Sends the setup and the schemas. A process that does not read them
    /// (stopped) blocks this until it is killed, which the run's stall
    /// watch and its signals do.
    fn send_setup(&self, setup: &Setup, schemas: &[Vec<u8>]) {
        let sent = (|| {
            let mut input = self.input.lock().unwrap();
            let input = input.as_mut().ok_or(())?;
            wire::write_frame(input, Tag::Setup, WHOLE, &wire::to_json(setup)).map_err(drop)?;
            for schema in schemas {
                wire::write_frame(input, Tag::Schema, WHOLE, schema).map_err(drop)?;
            }
            input.flush().map_err(drop)
        })();
        if sent.is_err() {
            // It died at once; its output's end says why.
            self.close();
        }
    }

    /// "reader process 2 (pid 1234)", for messages.
    fn name(&self) -> String {
        format!("reader process {} (pid {})", self.number, self.pid)
    }

    /// Reads what the process says, handing each message to its slot or
    /// to the control channel, until its output ends.
    fn route(
        &self,
        output: std::process::ChildStdout,
        control: Sender<Control>,
        slots: Vec<Sender<FromSlot>>,
    ) {
        let mut output = BufReader::with_capacity(1 << 16, output);
        let ended = loop {
            let frame = match wire::read_frame(&mut output) {
                Ok(Some(frame)) => frame,
                Ok(None) => break None,
                // Its output ended inside a message: it died writing it.
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break None,
                Err(e) => break Some(e.to_string()),
            };
            let Frame { tag, slot, payload } = frame;
            let failure = |payload: &[u8]| {
                wire::from_json::<Failure>(payload).unwrap_or_else(|e| Failure {
                    lost: false,
                    table: String::new(),
                    text: e.to_string(),
                })
            };
            let to_slot = match (tag, slot) {
                (Tag::Attached, WHOLE) => {
                    let _ = control.send(Control::Attached);
                    continue;
                }
                (Tag::Joined, WHOLE) => {
                    match wire::from_json::<Vec<u64>>(&payload) {
                        Ok(oldest) => control.send(Control::Joined(oldest)),
                        Err(e) => control.send(Control::Gone(e.to_string())),
                    }
                    .ok();
                    continue;
                }
                (Tag::Failed, WHOLE) => {
                    let _ = control.send(Control::Failed(failure(&payload)));
                    continue;
                }
                (Tag::Batch, _) => FromSlot::Batch(payload),
                (Tag::Done, _) => match wire::payload_u64(&payload) {
                    Ok(rows) => FromSlot::Done(rows),
                    Err(e) => break Some(e.to_string()),
                },
                (Tag::Failed, _) => FromSlot::Failed(failure(&payload)),
                _ => break Some("an unexpected message".into()),
            };
            match slots.get(slot as usize) {
                Some(tx) => {
                    let _ = tx.send(to_slot);
                }
                None => break Some("a message for no slot".into()),
            }
        };
        let reason = match ended {
            Some(broken) => {
                self.kill();
                format!("{} sent what is not fbunload's: {broken}", self.name())
            }
            None => format!("{} {}", self.name(), self.exit_status()),
        };
        for tx in &slots {
            let _ = tx.send(FromSlot::Gone(reason.clone()));
        }
        let _ = control.send(Control::Gone(reason));
    }

    /// How the process ended ("died of signal 9 (SIGKILL)", "ended with
    /// exit status 1"), waiting a moment for it (its output closes as it
    /// exits).
    fn exit_status(&self) -> String {
        let deadline = Instant::now() + LEAVE_GRACE;
        loop {
            match self.process.lock().unwrap().try_wait() {
                Ok(Some(status)) => return ended(status),
                Ok(None) if Instant::now() < deadline => {}
                Ok(None) => return "closed its output".into(),
                Err(e) => return format!("ended ({e})"),
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Whether the process is stopped (SIGSTOP, job control, a debugger):
    /// it then answers nothing, whatever the database does.
    fn is_stopped(&self) -> bool {
        is_stopped(self.pid)
    }

    fn send(&self, tag: Tag, slot: u32, payload: &[u8]) -> Result<(), ()> {
        let mut input = self.input.lock().unwrap();
        let Some(stdin) = input.as_mut() else {
            return Err(());
        };
        wire::write_frame(stdin, tag, slot, payload).map_err(drop)
    }

    /// What the process says about itself next, or `Gone` once `stop` is
    /// set (the run stops: a signal, or its stall watch).
    fn control(&self, stop: &AtomicBool) -> Control {
        let control = self.control.lock().unwrap();
        loop {
            match control.recv_timeout(Duration::from_millis(20)) {
                Ok(message) => return message,
                Err(RecvTimeoutError::Timeout) if stop.load(Ordering::SeqCst) => {
                    return Control::Gone(format!("{} was stopped by the run", self.name()))
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Control::Gone(format!("{} ended", self.name()))
                }
            }
        }
    }

    /// Closes its input: it leaves at once.
    fn close(&self) {
        self.input.lock().unwrap().take();
    }

    /// Kills it first: a write blocked on its full input (it is stopped)
    /// holds the input's lock, and fails once the process is gone.
    fn kill(&self) {
        let _ = self.process.lock().unwrap().kill();
        self.close();
    }

    /// Closes its input, gives it a moment to leave, then kills it; and
    /// reaps it.
    fn end(&self) {
        self.close();
        let deadline = Instant::now() + LEAVE_GRACE;
        let mut process = self.process.lock().unwrap();
        while Instant::now() < deadline {
            if let Ok(Some(_)) = process.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = process.kill();
        let _ = process.wait();
    }
}

/// "died of signal 9 (SIGKILL)" or "ended with exit status 1".
fn ended(status: std::process::ExitStatus) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            return match signal_name(signal) {
                Some(name) => format!("died of signal {signal} ({name})"),
                None => format!("died of signal {signal}"),
            };
        }
    }
    match status.code() {
        Some(code) => format!("ended with exit status {code}"),
        None => format!("ended ({status})"),
    }
}

#[cfg(unix)]
fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

/// Whether process `pid` is stopped: its state in /proc is `T` (stopped
/// by a signal) or `t` (by a debugger). Elsewhere than Linux: not known.
fn is_stopped(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    if let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        // "pid (comm) S ...": the state follows the last ')'.
        return stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.trim_start().chars().next())
            .is_some_and(|state| state == 'T' || state == 't');
    }
    let _ = pid;
    false
}

/// Where reader processes run: a directory nobody but the system can
/// write to, so that nothing planted in the run's working directory is
/// picked up (a Python reader would import from it).
fn safe_working_directory() -> Option<PathBuf> {
    #[cfg(unix)]
    return Some(PathBuf::from("/"));
    #[cfg(windows)]
    return std::env::var_os("SystemRoot").map(PathBuf::from);
    #[allow(unreachable_code)]
    None
}

/// Which readers wait for their reader process's next message, since
/// when: for [`Session::longest_read`].
#[derive(Default)]
struct Waits(Mutex<Vec<Option<(String, Instant)>>>);

impl Waits {
    fn add(&self) -> usize {
        let mut waits = self.0.lock().unwrap();
        waits.push(None);
        waits.len() - 1
    }

    fn set(&self, reader: usize, wait: Option<(String, Instant)>) {
        self.0.lock().unwrap()[reader] = wait;
    }

    fn longest(&self) -> Option<(String, Duration)> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .flatten()
            .min_by_key(|(_, since)| *since)
            .map(|(subject, since)| (subject.clone(), since.elapsed()))
    }
}

/// A run's session whose readers live in reader processes; everything
/// else (the snapshot's holder, counts, redos) is its [`FirebirdSession`].
pub(crate) struct ProcessSession {
    inner: FirebirdSession,
    command: ReaderCommand,
    processes: usize,
    /// Behind a lock: readers are asked for through `&self`, while a
    /// stall watch may kill them.
    children: std::sync::Mutex<Vec<Arc<Child>>>,
    waits: Arc<Waits>,
    /// Set when the run stops its reader processes (a signal, the stall
    /// watch): waits for what they say give up.
    stopped: AtomicBool,
}

impl ProcessSession {
    pub fn new(inner: FirebirdSession, command: ReaderCommand, processes: usize) -> Self {
        ProcessSession {
            inner,
            command,
            processes,
            children: Default::default(),
            waits: Arc::default(),
            stopped: AtomicBool::new(false),
        }
    }

    /// What every reader process is told, but its number of slots.
    fn setup(&self) -> Setup {
        let connect = &self.inner.db.connect;
        let context = &self.inner.context;
        let client_library = match &self.inner.db.client.source {
            LibrarySource::System(_) => None,
            // Absolute: reader processes run elsewhere (in `/`).
            source => {
                let path = PathBuf::from(source.library());
                Some(std::path::absolute(&path).unwrap_or(path))
            }
        };
        Setup {
            protocol: wire::PROTOCOL.into(),
            client_library,
            database: connect.database.clone(),
            user: connect.user.clone(),
            // The client library would read it from the environment,
            // which the reader process does not get.
            password: connect
                .password
                .clone()
                .or_else(|| std::env::var("ISC_PASSWORD").ok()),
            role: connect.role.clone(),
            wire_compression: connect.wire.compression,
            wire_crypt: connect.wire.crypt.map(|c| format!("{c:?}")),
            slots: 0,
            plan: Plan::clone(&context.plan),
            none_text: context.types.none_text.charset_name().into(),
            decimal256: context.types.decimal256,
            batch_rows: context.batch.rows,
            batch_bytes: context.batch.bytes,
            credit: CREDIT,
        }
    }

    fn kill_children(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let children = self.children.lock().unwrap().clone();
        for child in children {
            child.kill();
        }
    }

    /// What `child` says next about itself, watched as a read of
    /// `subject` since `since` ([`Session::longest_read`]): the stall
    /// watch ends a process that never answers (stopped, or attaching to
    /// a server that stopped answering), and a signal ends the wait.
    fn control(&self, child: &Child, subject: String, since: Instant, wait: usize) -> Control {
        self.waits.set(wait, Some((subject, since)));
        let control = child.control(&self.stopped);
        self.waits.set(wait, None);
        control
    }
}

impl Drop for ProcessSession {
    fn drop(&mut self) {
        let children = self.children.get_mut().unwrap();
        for child in children.iter() {
            child.close();
        }
        for child in children.iter() {
            child.end();
        }
    }
}

/// A failure of reader process `child` as the run's error.
fn process_failed(child: &Child, what: &str, control: Control) -> ExecError {
    let text = match control {
        Control::Failed(failure) => failure.text,
        Control::Gone(reason) => reason,
        Control::Attached | Control::Joined(_) => "it said something out of turn".into(),
    };
    ExecError::Server(format!("{} {what}: {text}", child.name()))
}

impl Session for ProcessSession {
    type Reader = Worker;

    fn readers(&self, count: usize) -> Result<Vec<Worker>, ExecError> {
        let processes = self.processes.clamp(1, count.max(1));
        let schemas = self
            .inner
            .context
            .schemas
            .iter()
            .map(|s| wire::schema_bytes(s))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| ExecError::Internal(e.to_string()))?;
        let started = Instant::now();
        let wait = self.waits.add();
        let mut slots = Vec::with_capacity(processes);
        for i in 0..processes {
            let setup = Setup {
                slots: count / processes + usize::from(i < count % processes),
                ..self.setup()
            };
            let (child, receivers) = Child::spawn(&self.command, i + 1, setup.slots)?;
            // Listed first: the stall watch and signals kill what is listed,
            // which ends a send blocked on a stopped process.
            self.children.lock().unwrap().push(child.clone());
            let subject = format!("{} starting", child.name());
            self.waits.set(wait, Some((subject, started)));
            child.send_setup(&setup, &schemas);
            self.waits.set(wait, None);
            if self.stopped.load(Ordering::SeqCst) {
                return Err(ExecError::Server(format!(
                    "{} was stopped by the run",
                    child.name()
                )));
            }
            slots.push(receivers);
        }
        let children = self.children.lock().unwrap().clone();
        for child in &children {
            let subject = format!("{} attaching to the database", child.name());
            match self.control(child, subject, started, wait) {
                Control::Attached => {}
                other => return Err(process_failed(child, "could not attach", other)),
            }
        }
        self.inner.join_with(count, |number| {
            let sent = Instant::now();
            for child in &children {
                // A failed send shows as the process gone, just below.
                let _ = child.send(Tag::Join, WHOLE, &wire::u64_payload(number));
            }
            let mut oldest = Vec::with_capacity(count);
            for child in &children {
                let subject = format!("{} joining snapshot {number}", child.name());
                match self.control(child, subject, sent, wait) {
                    Control::Joined(found) => oldest.extend(found),
                    other => {
                        return Err(process_failed(child, "could not join the snapshot", other))
                    }
                }
            }
            Ok(((), oldest))
        })?;
        let mut readers = Vec::with_capacity(count);
        for (child, receivers) in children.iter().zip(slots) {
            for (slot, receiver) in receivers.into_iter().enumerate() {
                readers.push(Worker::Process(ProcessReader {
                    child: child.clone(),
                    slot: slot as u32,
                    receiver,
                    plan: self.inner.context.plan.clone(),
                    waits: self.waits.clone(),
                    wait: self.waits.add(),
                    broken: false,
                }));
            }
        }
        Ok(readers)
    }

    fn snapshot_number(&self) -> Option<u64> {
        self.inner.snapshot_number()
    }

    fn snapshot_marks(&self) -> Option<crate::SnapshotMarks> {
        self.inner.snapshot_marks()
    }

    /// On a new attachment of this process: a redo is rare, and the
    /// reader process that lost its connection may be gone.
    fn rejoin(&self) -> Result<Worker, ExecError> {
        self.inner.rejoin().map(Worker::Local)
    }

    fn check(&self) -> Result<(), ExecError> {
        self.inner.check()
    }

    fn count(&self, table: usize) -> Result<u64, ExecError> {
        self.inner.count(table)
    }

    fn schema(&self, plan: &Plan) -> Result<Option<fbunload_plan::schema::Schema>, ExecError> {
        self.inner.schema(plan)
    }

    /// Reader processes are killed: their calls end with them.
    fn interrupt(&self) {
        self.inner.interrupt();
        self.kill_children();
    }

    fn longest_read(&self) -> Option<(String, Duration)> {
        [self.inner.longest_read(), self.waits.longest()]
            .into_iter()
            .flatten()
            .max_by_key(|(_, waited)| *waited)
    }

    fn abort(&self) {
        self.inner.abort();
        self.kill_children();
    }

    /// A stopped reader process answers nothing whatever the database
    /// does: it is named, not the database.
    fn stalled(&self, subject: String, seconds: u64) -> ExecError {
        let children = self.children.lock().unwrap().clone();
        match children.iter().find(|child| child.is_stopped()) {
            Some(child) => ExecError::ReaderStopped {
                process: child.name(),
                subject,
                seconds,
            },
            None => self.inner.stalled(subject, seconds),
        }
    }
}

/// A worker of a run with reader processes: a slot of one, or, after a
/// lost connection, an attachment of this process.
pub(crate) enum Worker {
    Process(ProcessReader),
    Local(FirebirdReader),
}

impl Reader for Worker {
    fn read(
        &mut self,
        unit: &Unit,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError> {
        match self {
            Worker::Process(reader) => reader.read(unit, fetch_only, deliver),
            Worker::Local(reader) => reader.read(unit, fetch_only, deliver),
        }
    }
}

/// One slot of a reader process.
pub(crate) struct ProcessReader {
    child: Arc<Child>,
    slot: u32,
    receiver: Receiver<FromSlot>,
    plan: Arc<Plan>,
    waits: Arc<Waits>,
    wait: usize,
    /// A unit was left unfinished in it (the run is stopping) or its
    /// process is gone: it reads no more.
    broken: bool,
}

impl ProcessReader {
    fn lost(&self, table: &str, reason: String) -> ExecError {
        ExecError::ConnectionLost {
            table: printable(table).into_owned(),
            message: reason,
        }
    }

    fn next(&self, subject: &str) -> FromSlot {
        self.waits
            .set(self.wait, Some((subject.to_string(), Instant::now())));
        let message = self
            .receiver
            .recv()
            .unwrap_or_else(|_| FromSlot::Gone(format!("{} ended", self.child.name())));
        self.waits.set(self.wait, None);
        message
    }
}

impl Reader for ProcessReader {
    fn read(
        &mut self,
        unit: &Unit,
        fetch_only: bool,
        deliver: &mut dyn FnMut(RecordBatch) -> bool,
    ) -> Result<u64, ExecError> {
        let table = &self.plan.tables[unit.table];
        if self.broken {
            return Err(self.lost(&table.name, "its reader process was stopped".into()));
        }
        let request = wire::to_json(&ReadUnit {
            unit: *unit,
            fetch_only,
        });
        if self.child.send(Tag::Read, self.slot, &request).is_err() {
            // Why it is gone comes next.
            self.broken = true;
        }
        let subject = subject(table);
        let mut rows = 0u64;
        loop {
            match self.next(&subject) {
                FromSlot::Batch(bytes) => {
                    let _ = self.child.send(Tag::Ack, self.slot, &[]);
                    let batch = wire::batch_from(&bytes).map_err(|e| {
                        ExecError::table(&table.name, format!("a reader process's batch: {e}"))
                    })?;
                    rows += batch.num_rows() as u64;
                    if !deliver(batch) {
                        self.broken = true;
                        return Ok(rows);
                    }
                }
                FromSlot::Done(rows) => return Ok(rows),
                FromSlot::Failed(failure) if failure.lost => {
                    self.broken = true;
                    return Err(ExecError::ConnectionLost {
                        table: failure.table,
                        message: failure.text,
                    });
                }
                FromSlot::Failed(failure) => return Err(ExecError::Server(failure.text)),
                FromSlot::Gone(reason) => {
                    self.broken = true;
                    return Err(self.lost(&table.name, reason));
                }
            }
        }
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;

    fn shell(script: &str) -> ReaderCommand {
        ReaderCommand {
            program: "/bin/sh".into(),
            args: vec!["-c".into(), script.into()],
            arg0: None,
        }
    }

    /// A reader process killed in the middle of a message died: the run
    /// says so, with its signal, not that it "sent what is not
    /// fbunload's".
    #[test]
    fn a_reader_killed_mid_message_is_said_to_have_died_of_its_signal() {
        // Half a frame's head (length 16, then the tag), then SIGKILL.
        let (child, _slots) =
            Child::spawn(&shell(r"printf '\020\000\000\000\014'; kill -9 $$"), 2, 1).unwrap();
        let never = AtomicBool::new(false);
        let Control::Gone(reason) = child.control(&never) else {
            panic!("the process said something")
        };
        assert_eq!(
            reason,
            format!(
                "reader process 2 (pid {}) died of signal 9 (SIGKILL)",
                child.pid
            )
        );
        let (child, _slots) = Child::spawn(&shell("exit 3"), 1, 1).unwrap();
        let Control::Gone(reason) = child.control(&never) else {
            panic!("the process said something")
        };
        assert!(reason.ends_with("ended with exit status 3"), "{reason}");
    }

    /// A reader process stopped at birth answers nothing: the wait for it
    /// ends when the run stops, and it is seen to be stopped.
    #[test]
    fn a_stopped_reader_is_seen_and_its_wait_ends_when_the_run_stops() {
        let (child, _slots) = Child::spawn(&shell("kill -STOP $$; exit 0"), 1, 1).unwrap();
        let deadline = Instant::now() + Duration::from_secs(10);
        while !child.is_stopped() {
            assert!(Instant::now() < deadline, "never seen stopped");
            std::thread::sleep(Duration::from_millis(10));
        }
        let stop = Arc::new(AtomicBool::new(false));
        {
            let stop = stop.clone();
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::SeqCst);
            });
        }
        let started = Instant::now();
        assert!(matches!(child.control(&stop), Control::Gone(_)));
        assert!(started.elapsed() < Duration::from_secs(2));
        // A setup bigger than a pipe holds blocks on the stopped process
        // until it is killed.
        let setup_writer = {
            let child = child.clone();
            std::thread::spawn(move || {
                let big = vec![0u8; 1 << 20];
                child.send(Tag::Schema, WHOLE, &big)
            })
        };
        std::thread::sleep(Duration::from_millis(200));
        assert!(!setup_writer.is_finished());
        child.kill();
        assert!(setup_writer.join().unwrap().is_err());
        assert!(!child.is_stopped());
        child.end();
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn reader_processes_run_the_running_image() {
        let command = ReaderCommand::this_program("/x/fbunload".into(), vec!["--r".into()]);
        assert_eq!(command.program, PathBuf::from("/proc/self/exe"));
        assert_eq!(command.arg0, Some("/x/fbunload".into()));
        assert_eq!(command.shown().to_string(), "/x/fbunload");
    }
}
