//! `fbunload follow`: live change capture from Firebird's replication
//! journal into the PostgreSQL schema a `--keep-keys` load made. The
//! options are [`FollowOptions`]; the work is crates/follow's (the journal
//! itself is read by crates/journal), here only turned into this crate's
//! [`Error`] so every front end reports it the same way.

pub use fbunload_follow::{FollowOptions, FollowProgress, FollowSummary};

use std::sync::atomic::AtomicBool;

use crate::Error;

/// Applies the journal until `stop` is set or, with
/// [`FollowOptions::until_idle`], until nothing new came for that long.
pub fn follow(
    options: &FollowOptions,
    stop: &AtomicBool,
    progress: &dyn FollowProgress,
) -> Result<FollowSummary, Error> {
    fbunload_follow::follow(options, stop, progress).map_err(|e| match e {
        fbunload_follow::FollowError::Usage(message) => Error::Usage(message),
        other => Error::Server(other.to_string()),
    })
}
