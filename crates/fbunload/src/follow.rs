//! `fbunload follow`: live change capture from Firebird's replication
//! journal into the PostgreSQL schema a `--keep-keys` load made, as
//! change sets after a `--keep-keys` run into a directory, or as a
//! stream of events. The
//! options are [`FollowOptions`]; the work is crates/follow's (the journal
//! itself is read by crates/journal), here only turned into this crate's
//! [`Error`] so every front end reports it the same way.

pub use fbunload_follow::{FollowOptions, FollowProgress, FollowSummary, Lag, Position};

use std::sync::atomic::AtomicBool;

use crate::Error;

/// Checks, before a `--keep-keys --journal` load, that a follow can go on
/// from it: the database publishes, and the archive directory is there
/// and holds no other database's journal.
pub fn check_setup(options: &FollowOptions) -> Result<(), Error> {
    fbunload_follow::check_setup(options).map_err(follow_error)
}

fn follow_error(e: fbunload_follow::FollowError) -> Error {
    match e {
        fbunload_follow::FollowError::Usage(message) => Error::Usage(message),
        other => Error::Server(other.to_string()),
    }
}

/// Applies the journal until `stop` is set or, with
/// [`FollowOptions::until_idle`], until nothing new came for that long.
pub fn follow(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
) -> Result<FollowSummary, Error> {
    fbunload_follow::follow(options, stop, progress).map_err(follow_error)
}

/// [`follow`] of a change stream (`target` `-`): the events, one JSON
/// object a line, written to `events` instead of standard output.
pub fn follow_into(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
    events: Box<dyn std::io::Write>,
) -> Result<FollowSummary, Error> {
    fbunload_follow::follow_into(options, stop, progress, events).map_err(follow_error)
}
