//! Loading the Firebird client library, once it is found.
//!
//! Where it is looked for, and in what order on each platform, is
//! `places`: an explicit path (`--client-lib`) comes first everywhere;
//! then, on Unix, `FIREBIRD` (a Firebird installation or runtime root), the
//! `firebird-embedded` Python package (a full Firebird 5 engine, the default
//! for tests and demos) and the system's library search path; on Windows,
//! the program's own folder, `FIREBIRD`, the Python package, the registry's
//! Firebird installation, `PATH`, and Windows' own DLL search.
//!
//! The embedded runtime needs two things a plain `dlopen` does not give it:
//! `FIREBIRD` pointing at its root (for plugins, messages, time zone data),
//! and, on Linux, `libtomcrypt.so.1`, which lives in that root and which the
//! engine plugin cannot find on its own. We preload it (after `libtommath`,
//! its own dependency) with `RTLD_GLOBAL`, so users need no
//! `LD_LIBRARY_PATH`. On Windows the client's own folder holds what it
//! depends on (ICU, the C++ runtime, zlib); loading it with
//! `LOAD_WITH_ALTERED_SEARCH_PATH` makes Windows look there first.

use std::ffi::{c_int, c_void};
use std::mem::ManuallyDrop;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::ClientError;
use crate::ffi::Api;
use crate::places::{self, Place, ThisMachine};

/// Where the loaded client library came from, for `--version`-style reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibrarySource {
    Explicit(PathBuf),
    NextToProgram(PathBuf),
    FirebirdEnv(PathBuf),
    PythonPackage(PathBuf),
    RegistryInstall(PathBuf),
    SearchPath(PathBuf),
    System(String),
}

impl LibrarySource {
    /// The library as it was loaded: a path, or a bare name the system's
    /// loader searched for.
    pub fn library(&self) -> &std::ffi::OsStr {
        match self {
            LibrarySource::Explicit(p)
            | LibrarySource::NextToProgram(p)
            | LibrarySource::FirebirdEnv(p)
            | LibrarySource::PythonPackage(p)
            | LibrarySource::RegistryInstall(p)
            | LibrarySource::SearchPath(p) => p.as_os_str(),
            LibrarySource::System(name) => name.as_ref(),
        }
    }

    fn found(place: Place, library: PathBuf) -> LibrarySource {
        match place {
            Place::NextToProgram => LibrarySource::NextToProgram(library),
            Place::FirebirdEnv => LibrarySource::FirebirdEnv(library),
            Place::PythonPackage => LibrarySource::PythonPackage(library),
            Place::RegistryInstall => LibrarySource::RegistryInstall(library),
            Place::SearchPath => LibrarySource::SearchPath(library),
        }
    }
}

impl std::fmt::Display for LibrarySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LibrarySource::Explicit(p) => write!(f, "{} (--client-lib)", p.display()),
            LibrarySource::NextToProgram(p) => write!(f, "{} (next to the program)", p.display()),
            LibrarySource::FirebirdEnv(p) => write!(f, "{} (from FIREBIRD)", p.display()),
            LibrarySource::PythonPackage(p) => {
                write!(f, "{} (Python package firebird-embedded)", p.display())
            }
            LibrarySource::RegistryInstall(p) => {
                write!(f, "{} (Firebird installation in the registry)", p.display())
            }
            LibrarySource::SearchPath(p) => write!(f, "{} (from PATH)", p.display()),
            LibrarySource::System(name) => write!(f, "{name} (system library path)"),
        }
    }
}

/// A loaded client library. Shared by every attachment of a run; the
/// library is thread-safe, and each worker uses its own attachment.
///
/// The library is never unloaded, even when its last `Client` goes:
/// unloading runs its shutdown (for an embedded engine all of it, which
/// the next load in the process must start again; for the remote provider
/// a 50 ms sleep before it closes its ports), and unloading C++ code whose
/// threads may still run is a known source of crashes. The process's exit
/// shuts it down once.
pub struct Client {
    pub(crate) api: Api,
    pub source: LibrarySource,
    _preloads: ManuallyDrop<Vec<libloading::Library>>,
    _lib: ManuallyDrop<libloading::Library>,
}

impl Client {
    /// Finds and loads the client library (see the module docs for the order).
    pub fn load(explicit: Option<&Path>) -> Result<Arc<Client>, ClientError> {
        if let Some(path) = explicit {
            if !path.exists() {
                return Err(ClientError::Load(format!(
                    "--client-lib {} does not exist",
                    path.display()
                )));
            }
            return Self::open(path, LibrarySource::Explicit(path.to_path_buf()));
        }
        let mut tried = match places::search(places::ORDER, &ThisMachine, places::LAYOUT) {
            Ok(found) => {
                let source = LibrarySource::found(found.place, found.library.clone());
                return Self::open(&found.library, source);
            }
            Err(tried) => tried,
        };
        for &name in places::LAYOUT.names {
            // SAFETY: loading a shared library runs its initialisers; that is
            // the point of the exercise.
            if let Ok(lib) = unsafe { libloading::Library::new(name) } {
                return Self::from_library(
                    lib,
                    Vec::new(),
                    LibrarySource::System(name.to_string()),
                );
            }
        }
        tried.push(format!(
            "no {} on the system library path",
            places::LAYOUT.names[0]
        ));
        Err(ClientError::Load(format!(
            "{}; install the embedded engine with `pip install firebird-embedded`, \
             install a Firebird client, or pass --client-lib PATH",
            tried.join(", ")
        )))
    }

    fn open(path: &Path, source: LibrarySource) -> Result<Arc<Client>, ClientError> {
        let root = runtime_root_of(path);
        let mut preloads = Vec::new();
        if let Some(root) = &root {
            if std::env::var_os("FIREBIRD").is_none() {
                // Read by the library during its first call; set before any
                // worker thread exists.
                std::env::set_var("FIREBIRD", root);
            }
            preloads = preload_embedded_dependencies(root)?;
        }
        let lib = load_global(path).map_err(ClientError::Load)?;
        Self::from_library(lib, preloads, source)
    }

    fn from_library(
        lib: libloading::Library,
        preloads: Vec<libloading::Library>,
        source: LibrarySource,
    ) -> Result<Arc<Client>, ClientError> {
        // SAFETY: `lib` is stored in the same struct and outlives `api`.
        let api = unsafe { Api::resolve(&lib) }.map_err(|missing| {
            ClientError::Load(format!(
                "{source} is not a usable Firebird client: it has no {missing}"
            ))
        })?;
        Ok(Arc::new(Client {
            api,
            source,
            _preloads: ManuallyDrop::new(preloads),
            _lib: ManuallyDrop::new(lib),
        }))
    }

    /// Stops the client library from shutting its attachments down when the
    /// process gets SIGINT or SIGTERM, for an application that handles
    /// those itself: the library chains its own handler in front of the
    /// application's and, left alone, kills every attachment while the
    /// application is still stopping its work cleanly. Returns whether the
    /// library let us (`fb_shutdown_callback`, Firebird 2.5 and later).
    pub fn leave_signals_to_the_application(&self) -> bool {
        type Callback = extern "C" fn(c_int, c_int, *mut c_void) -> c_int;
        type Register = unsafe extern "C" fn(
            *mut crate::ffi::IscStatus,
            Callback,
            c_int,
            *mut c_void,
        ) -> crate::ffi::IscStatus;
        /// Refuses a shutdown the library started for a signal; agrees to
        /// every other (the process exiting, for one).
        extern "C" fn refuse_signal_shutdown(
            reason: c_int,
            _mask: c_int,
            _arg: *mut c_void,
        ) -> c_int {
            c_int::from(reason == SHUTDOWN_REASON_SIGNAL)
        }
        // SAFETY: the symbol has this signature in every Firebird since
        // 2.5; the status vector is as long as the library expects.
        unsafe {
            let Ok(register) = self._lib.get::<Register>(b"fb_shutdown_callback\0") else {
                return false;
            };
            let mut status = [0 as crate::ffi::IscStatus; 20];
            register(
                status.as_mut_ptr(),
                refuse_signal_shutdown,
                SHUTDOWN_CONFIRMATION,
                std::ptr::null_mut(),
            );
            status[1] == 0
        }
    }
}

/// `fb_shut_confirmation`: the callback may refuse the shutdown.
const SHUTDOWN_CONFIRMATION: c_int = 1;
/// `fb_shutrsn_signal`: the library caught SIGINT or SIGTERM.
const SHUTDOWN_REASON_SIGNAL: c_int = -5;

/// Loads the libraries the Linux embedded engine needs and cannot find
/// by itself (see the module docs), when `root` is such a runtime.
#[cfg(unix)]
fn preload_embedded_dependencies(root: &Path) -> Result<Vec<libloading::Library>, ClientError> {
    let tomcrypt = root.join("libtomcrypt.so.1");
    if !tomcrypt.exists() {
        return Ok(Vec::new());
    }
    let mut preloads = Vec::new();
    for dep in ["libtommath.so.1".as_ref(), tomcrypt.as_path()] {
        match load_global(dep) {
            Ok(lib) => preloads.push(lib),
            Err(e) => {
                return Err(ClientError::Load(format!(
                    "{e} (the embedded engine needs Debian's libtommath1 and libicu72: \
                     apt-get install libtommath1 libicu72)"
                )))
            }
        }
    }
    Ok(preloads)
}

/// The Windows runtime carries what it needs in its own folder.
#[cfg(windows)]
fn preload_embedded_dependencies(_root: &Path) -> Result<Vec<libloading::Library>, ClientError> {
    Ok(Vec::new())
}

/// Loads a library by path, its symbols visible to the libraries it loads
/// in turn (the engine plugin resolves the client's through them).
#[cfg(unix)]
fn load_global(path: &Path) -> Result<libloading::Library, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: as in `Client::load`.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
        .map(Into::into)
        .map_err(|e| format!("cannot load {}: {e}", path.display()))
}

/// Loads a library by path, the DLLs it depends on looked for in its own
/// folder first (ICU, the C++ runtime and zlib sit beside `fbclient.dll`).
#[cfg(windows)]
fn load_global(path: &Path) -> Result<libloading::Library, String> {
    use libloading::os::windows::{Library, LOAD_WITH_ALTERED_SEARCH_PATH};
    // SAFETY: as in `Client::load`.
    unsafe { Library::load_with_flags(path, LOAD_WITH_ALTERED_SEARCH_PATH) }
        .map(Into::into)
        .map_err(|e| format!("cannot load {}: {e}", path.display()))
}

/// The runtime root a client library belongs to, when it is a Firebird
/// installation (it has `firebird.msg` beside it or one level up).
fn runtime_root_of(lib: &Path) -> Option<PathBuf> {
    let dir = lib.parent()?;
    [dir, dir.parent()?]
        .into_iter()
        .find(|d| d.join("firebird.msg").exists())
        .map(Path::to_path_buf)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runtime_root_is_found_beside_or_above_the_library() {
        let dir = tempfile_dir();
        std::fs::create_dir_all(dir.join("lib")).unwrap();
        std::fs::write(dir.join("firebird.msg"), b"").unwrap();
        assert_eq!(
            runtime_root_of(&dir.join("lib/libfbclient.so.2")),
            Some(dir.clone())
        );
        assert_eq!(
            runtime_root_of(&dir.join("libfbclient.so.2")),
            Some(dir.clone())
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_missing_explicit_library_is_named() {
        let err = Client::load(Some(Path::new("/nonexistent/libfbclient.so")))
            .err()
            .unwrap();
        assert!(
            err.to_string().contains("/nonexistent/libfbclient.so"),
            "{err}"
        );
    }

    fn tempfile_dir() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("fbunload-locate-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
