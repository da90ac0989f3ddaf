//! Finding and loading `libfbclient`.
//!
//! Search order, first hit wins: an explicit path (`--client-lib`), the
//! `FIREBIRD` environment variable (a Firebird installation or runtime
//! root), the `firebird-embedded` Python package (a full Firebird 5 engine,
//! the default for tests and demos), then the system's library search path.
//!
//! The embedded runtime needs two things a plain `dlopen` does not give it:
//! `FIREBIRD` pointing at its root (for plugins, messages, time zone data),
//! and `libtomcrypt.so.1`, which lives in that root and which the engine
//! plugin cannot find on its own. We preload it (after `libtommath`, its own
//! dependency) with `RTLD_GLOBAL`, so users need no `LD_LIBRARY_PATH`.

use std::ffi::{c_int, c_void};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use crate::error::ClientError;
use crate::ffi::Api;

/// Where the loaded client library came from, for `--version`-style reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LibrarySource {
    Explicit(PathBuf),
    FirebirdEnv(PathBuf),
    PythonPackage(PathBuf),
    System(String),
}

impl std::fmt::Display for LibrarySource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LibrarySource::Explicit(p) => write!(f, "{} (--client-lib)", p.display()),
            LibrarySource::FirebirdEnv(p) => write!(f, "{} (from FIREBIRD)", p.display()),
            LibrarySource::PythonPackage(p) => {
                write!(f, "{} (Python package firebird-embedded)", p.display())
            }
            LibrarySource::System(name) => write!(f, "{name} (system library path)"),
        }
    }
}

/// A loaded client library. Shared by every attachment of a run; the
/// library is thread-safe, and each worker uses its own attachment.
pub struct Client {
    pub(crate) api: Api,
    pub source: LibrarySource,
    // Kept last so it is dropped after nothing can call into it any more.
    _preloads: Vec<libloading::Library>,
    _lib: libloading::Library,
}

const LIB_NAMES: [&str; 2] = ["libfbclient.so.2", "libfbclient.so"];

impl Client {
    /// Finds and loads the client library (see the module docs for the order).
    pub fn load(explicit: Option<&Path>) -> Result<Arc<Client>, ClientError> {
        let mut tried = Vec::new();
        if let Some(path) = explicit {
            if !path.exists() {
                return Err(ClientError::Load(format!(
                    "--client-lib {} does not exist",
                    path.display()
                )));
            }
            return Self::open(path, LibrarySource::Explicit(path.to_path_buf()));
        }
        if let Some(root) = std::env::var_os("FIREBIRD").map(PathBuf::from) {
            if let Some(lib) = library_in_root(&root) {
                return Self::open(&lib, LibrarySource::FirebirdEnv(lib.clone()));
            }
            tried.push(format!("FIREBIRD={} has no libfbclient", root.display()));
        }
        match embedded_runtime_root() {
            Some(root) => {
                if let Some(lib) = library_in_root(&root) {
                    return Self::open(&lib, LibrarySource::PythonPackage(lib.clone()));
                }
            }
            None => tried.push("no Python package firebird-embedded".into()),
        }
        for name in LIB_NAMES {
            // SAFETY: loading a shared library runs its initialisers; that is
            // the point of the exercise.
            if let Ok(lib) = unsafe { libloading::Library::new(name) } {
                return Self::from_library(lib, Vec::new(), LibrarySource::System(name.into()));
            }
        }
        tried.push("no libfbclient on the system library path".into());
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
            let tomcrypt = root.join("libtomcrypt.so.1");
            if tomcrypt.exists() {
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
            }
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
            _preloads: preloads,
            _lib: lib,
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

fn load_global(path: &Path) -> Result<libloading::Library, String> {
    use libloading::os::unix::{Library, RTLD_GLOBAL, RTLD_NOW};
    // SAFETY: as in `Client::load`.
    unsafe { Library::open(Some(path), RTLD_NOW | RTLD_GLOBAL) }
        .map(Into::into)
        .map_err(|e| format!("cannot load {}: {e}", path.display()))
}

/// The client library inside an installation or runtime root, if any.
fn library_in_root(root: &Path) -> Option<PathBuf> {
    ["", "lib"]
        .iter()
        .flat_map(|dir| LIB_NAMES.iter().map(move |name| root.join(dir).join(name)))
        .find(|p| p.exists())
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

/// Asks Python where `firebird-embedded` keeps its runtime. A subprocess is
/// the only reliable answer across virtualenvs, pyenv and user installs.
fn embedded_runtime_root() -> Option<PathBuf> {
    let script = "import firebird.embedded.provider as p; print(p.FirebirdProvider().root)";
    for python in ["python3", "python"] {
        let Ok(out) = Command::new(python).args(["-c", script]).output() else {
            continue;
        };
        if out.status.success() {
            let root = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
            if root.is_dir() {
                return Some(root);
            }
        }
    }
    None
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
