//! Where the client library is looked for, and in what order.
//!
//! The order differs by platform. On Linux and other Unixes a Firebird
//! installation puts `libfbclient.so.2` on the system library path, so
//! after `FIREBIRD` and the `firebird-embedded` Python package the dynamic
//! loader is asked by name. On Windows the habits are others: a program
//! ships the DLLs it needs beside its `.exe`, the Firebird installer
//! records where it put the server in the registry, and `PATH` is the last
//! resort. So there the order is: next to the program, `FIREBIRD`, the
//! Python package, the registry's Firebird installation, then each `PATH`
//! directory.
//!
//! The search is a plain function over a [`Lookup`] that says where each
//! place is on this machine, so the order is tested on any platform with
//! made-up directories; only [`ThisMachine`] asks the real environment. A
//! place is asked only when the ones before it had nothing: finding the
//! Python package starts an interpreter, which is not free.

use std::path::{Path, PathBuf};

/// A place the client library may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Place {
    /// The directory of the running program.
    NextToProgram,
    /// The installation or runtime root in the `FIREBIRD` variable.
    FirebirdEnv,
    /// The runtime of the `firebird-embedded` Python package.
    PythonPackage,
    /// The default instance of a Firebird server installed on Windows.
    RegistryInstall,
    /// Every directory of `PATH`, in order.
    SearchPath,
}

/// The order on Unix; the dynamic loader's own search comes after it.
pub(crate) const UNIX_ORDER: &[Place] = &[Place::FirebirdEnv, Place::PythonPackage];

/// The order on Windows; the system's own DLL search (which also covers
/// a client the Firebird installer copied into `System32`) comes after it.
pub(crate) const WINDOWS_ORDER: &[Place] = &[
    Place::NextToProgram,
    Place::FirebirdEnv,
    Place::PythonPackage,
    Place::RegistryInstall,
    Place::SearchPath,
];

/// How a platform's Firebird lays out its client library.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Layout {
    /// File names of the client library, preferred first.
    pub names: &'static [&'static str],
    /// Folders of an installation root that may hold it ("" is the root).
    pub folders: &'static [&'static str],
}

pub(crate) const UNIX_LAYOUT: Layout = Layout {
    names: &["libfbclient.so.2", "libfbclient.so"],
    folders: &["", "lib"],
};

/// Firebird 3 and later keep `fbclient.dll` in the installation root,
/// Firebird 2.5 in its `bin` folder.
pub(crate) const WINDOWS_LAYOUT: Layout = Layout {
    names: &["fbclient.dll"],
    folders: &["", "bin"],
};

/// This platform's order.
pub(crate) const ORDER: &[Place] = if cfg!(windows) {
    WINDOWS_ORDER
} else {
    UNIX_ORDER
};
/// This platform's layout.
pub(crate) const LAYOUT: Layout = if cfg!(windows) {
    WINDOWS_LAYOUT
} else {
    UNIX_LAYOUT
};

/// Says where each place is; an empty list when it is not there.
pub(crate) trait Lookup {
    fn directories(&self, place: Place) -> Vec<PathBuf>;
}

/// The first client library found: where, and its path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Found {
    pub place: Place,
    pub library: PathBuf,
}

/// Looks through `order`, first hit wins. Without a hit, says what each
/// place had, for the error message.
pub(crate) fn search(
    order: &[Place],
    lookup: &dyn Lookup,
    layout: Layout,
) -> Result<Found, Vec<String>> {
    let mut tried = Vec::new();
    for &place in order {
        let directories = lookup.directories(place);
        // A PATH entry is the folder itself, not an installation root.
        let folders: &[&str] = if place == Place::SearchPath {
            &[""]
        } else {
            layout.folders
        };
        let hit = directories
            .iter()
            .flat_map(|dir| folders.iter().map(move |folder| dir.join(folder)))
            .flat_map(|dir| layout.names.iter().map(move |name| dir.join(name)))
            .find(|candidate| candidate.is_file());
        if let Some(library) = hit {
            return Ok(Found { place, library });
        }
        tried.push(missing(place, &directories, layout.names[0]));
    }
    Err(tried)
}

/// What a place that had no client library had, in words.
fn missing(place: Place, directories: &[PathBuf], name: &str) -> String {
    let first = directories.first().map(|d| d.display().to_string());
    match (place, first) {
        (Place::NextToProgram, Some(dir)) => format!("no {name} next to the program in {dir}"),
        (Place::NextToProgram, None) => "the program's own folder is unknown".into(),
        (Place::FirebirdEnv, Some(dir)) => format!("FIREBIRD={dir} has no {name}"),
        (Place::FirebirdEnv, None) => "FIREBIRD is not set".into(),
        (Place::PythonPackage, Some(dir)) => {
            format!("the Python package firebird-embedded ({dir}) has no {name}")
        }
        (Place::PythonPackage, None) => "no Python package firebird-embedded".into(),
        (Place::RegistryInstall, Some(dir)) => {
            format!("the registry's Firebird installation {dir} has no {name}")
        }
        (Place::RegistryInstall, None) => "no Firebird installation in the registry".into(),
        (Place::SearchPath, _) => format!("no {name} on PATH"),
    }
}

/// The real places of this machine.
pub(crate) struct ThisMachine;

impl Lookup for ThisMachine {
    fn directories(&self, place: Place) -> Vec<PathBuf> {
        match place {
            Place::NextToProgram => std::env::current_exe()
                .ok()
                .and_then(|exe| exe.parent().map(Path::to_path_buf))
                .into_iter()
                .collect(),
            Place::FirebirdEnv => std::env::var_os("FIREBIRD")
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
                .into_iter()
                .collect(),
            Place::PythonPackage => embedded_runtime_root().into_iter().collect(),
            Place::RegistryInstall => registry_install().into_iter().collect(),
            Place::SearchPath => std::env::var_os("PATH")
                .map(|path| std::env::split_paths(&path).collect())
                .unwrap_or_default(),
        }
    }
}

/// How the Python this program runs in, if it runs in one, finds
/// `firebird-embedded`'s runtime; set by the Python module.
static THIS_PYTHON: std::sync::OnceLock<fn() -> Option<PathBuf>> = std::sync::OnceLock::new();

/// Lets the Python module answer where `firebird-embedded` keeps its
/// runtime from the interpreter it runs in, instead of a new interpreter
/// being started to ask (0.04-0.1 s, most of a small run's start-up). The
/// first lookup set stays.
pub fn set_embedded_runtime_lookup(lookup: fn() -> Option<PathBuf>) {
    let _ = THIS_PYTHON.set(lookup);
}

/// Asks Python where `firebird-embedded` keeps its runtime: the Python this
/// program runs in, if any and if it has the package, else a new `python3`
/// from `PATH`. A subprocess is the only reliable answer across
/// virtualenvs, pyenv and user installs.
fn embedded_runtime_root() -> Option<PathBuf> {
    if let Some(root) = THIS_PYTHON.get().and_then(|lookup| lookup()) {
        if root.is_dir() {
            return Some(root);
        }
    }
    let script = "import firebird.embedded.provider as p; print(p.FirebirdProvider().root)";
    // Windows installs `python` (and the `py` launcher), rarely `python3`.
    let interpreters: &[&str] = if cfg!(windows) {
        &["python", "py", "python3"]
    } else {
        &["python3", "python"]
    };
    for python in interpreters {
        let mut command = std::process::Command::new(python);
        command
            .args(["-c", script])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null());
        // `python -c` imports from its working directory first: a
        // `./firebird/embedded/provider.py` planted there would choose the
        // client library this process loads (and hands the password).
        // From `/` nothing can be planted.
        #[cfg(unix)]
        command.current_dir("/");
        let Some(out) = output_within(command, PYTHON_LOOKUP_LIMIT) else {
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

/// How long the interpreter asked where `firebird-embedded` is may take.
const PYTHON_LOOKUP_LIMIT: std::time::Duration = std::time::Duration::from_secs(30);

/// `command`'s output, if it ends within `limit` (else it is killed: a
/// lookup must not hang the run).
fn output_within(
    mut command: std::process::Command,
    limit: std::time::Duration,
) -> Option<std::process::Output> {
    let mut child = command.spawn().ok()?;
    let deadline = std::time::Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => return child.wait_with_output().ok(),
            Ok(None) if std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10))
            }
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
}

/// The folder of the default Firebird server instance, as the Windows
/// installer records it: `HKLM\SOFTWARE\Firebird Project\Firebird
/// Server\Instances`, value `DefaultInstance`.
#[cfg(windows)]
fn registry_install() -> Option<PathBuf> {
    use std::ffi::OsString;
    use std::os::windows::ffi::{OsStrExt, OsStringExt};
    use windows_sys::Win32::System::Registry::{
        RegGetValueW, HKEY_LOCAL_MACHINE, RRF_RT_REG_EXPAND_SZ, RRF_RT_REG_SZ,
    };

    fn wide(text: &str) -> Vec<u16> {
        std::ffi::OsStr::new(text)
            .encode_wide()
            .chain(std::iter::once(0))
            .collect()
    }
    let key = wide(r"SOFTWARE\Firebird Project\Firebird Server\Instances");
    let value = wide("DefaultInstance");
    let mut buffer = vec![0u16; 1024];
    let mut bytes = (buffer.len() * 2) as u32;
    // SAFETY: both names are NUL-terminated; `bytes` is the buffer's size
    // in bytes, and the call writes at most that many.
    let status = unsafe {
        RegGetValueW(
            HKEY_LOCAL_MACHINE,
            key.as_ptr(),
            value.as_ptr(),
            RRF_RT_REG_SZ | RRF_RT_REG_EXPAND_SZ,
            std::ptr::null_mut(),
            buffer.as_mut_ptr().cast(),
            &mut bytes,
        )
    };
    if status != 0 {
        return None;
    }
    let chars = (bytes as usize / 2).min(buffer.len());
    let text: Vec<u16> = buffer[..chars]
        .iter()
        .copied()
        .take_while(|&c| c != 0)
        .collect();
    let dir = PathBuf::from(OsString::from_wide(&text));
    (!dir.as_os_str().is_empty()).then_some(dir)
}

/// Only Windows has a registry.
#[cfg(not(windows))]
fn registry_install() -> Option<PathBuf> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::RefCell;
    use std::collections::HashMap;

    /// Made-up places; remembers which were asked.
    #[derive(Default)]
    struct Places {
        at: HashMap<&'static str, Vec<PathBuf>>,
        asked: RefCell<Vec<Place>>,
    }

    impl Places {
        fn with(mut self, place: Place, dirs: &[&Path]) -> Self {
            self.at
                .insert(key(place), dirs.iter().map(|d| d.to_path_buf()).collect());
            self
        }
    }

    fn key(place: Place) -> &'static str {
        match place {
            Place::NextToProgram => "exe",
            Place::FirebirdEnv => "env",
            Place::PythonPackage => "python",
            Place::RegistryInstall => "registry",
            Place::SearchPath => "path",
        }
    }

    impl Lookup for Places {
        fn directories(&self, place: Place) -> Vec<PathBuf> {
            self.asked.borrow_mut().push(place);
            self.at.get(key(place)).cloned().unwrap_or_default()
        }
    }

    /// A directory with `fbclient.dll` in `folder` ("" for the root).
    fn install(root: &Path, name: &str, folder: &str) -> PathBuf {
        let dir = root.join(name);
        std::fs::create_dir_all(dir.join(folder)).unwrap();
        std::fs::write(dir.join(folder).join("fbclient.dll"), b"").unwrap();
        dir
    }

    #[test]
    fn on_windows_the_program_folder_wins_and_later_places_are_not_asked() {
        let tmp = tempfile::tempdir().unwrap();
        let exe = install(tmp.path(), "exe", "");
        let env = install(tmp.path(), "env", "");
        let places = Places::default()
            .with(Place::NextToProgram, &[&exe])
            .with(Place::FirebirdEnv, &[&env]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.place, Place::NextToProgram);
        assert_eq!(found.library, exe.join("fbclient.dll"));
        assert_eq!(*places.asked.borrow(), [Place::NextToProgram]);
    }

    #[test]
    fn on_windows_firebird_comes_before_python_the_registry_and_path() {
        let tmp = tempfile::tempdir().unwrap();
        let empty_exe = tmp.path().join("exe");
        std::fs::create_dir_all(&empty_exe).unwrap();
        let env = install(tmp.path(), "env", "");
        let python = install(tmp.path(), "python", "");
        let registry = install(tmp.path(), "registry", "");
        let path = install(tmp.path(), "path", "");
        let places = Places::default()
            .with(Place::NextToProgram, &[&empty_exe])
            .with(Place::FirebirdEnv, &[&env])
            .with(Place::PythonPackage, &[&python])
            .with(Place::RegistryInstall, &[&registry])
            .with(Place::SearchPath, &[&path]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.place, Place::FirebirdEnv);
        // Python is not started when FIREBIRD already had the library.
        assert_eq!(
            *places.asked.borrow(),
            [Place::NextToProgram, Place::FirebirdEnv]
        );
    }

    #[test]
    fn on_windows_each_place_is_tried_in_turn() {
        let tmp = tempfile::tempdir().unwrap();
        let python = install(tmp.path(), "python", "");
        let registry = install(tmp.path(), "registry", "");
        let path = install(tmp.path(), "path", "");

        let places = Places::default()
            .with(Place::PythonPackage, &[&python])
            .with(Place::RegistryInstall, &[&registry])
            .with(Place::SearchPath, &[&path]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.place, Place::PythonPackage);

        let places = Places::default()
            .with(Place::RegistryInstall, &[&registry])
            .with(Place::SearchPath, &[&path]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.place, Place::RegistryInstall);

        let places = Places::default().with(Place::SearchPath, &[&path]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.place, Place::SearchPath);
        assert_eq!(*places.asked.borrow(), WINDOWS_ORDER);
    }

    #[test]
    fn an_old_installation_keeps_the_client_in_bin_but_a_path_entry_is_only_itself() {
        let tmp = tempfile::tempdir().unwrap();
        let firebird25 = install(tmp.path(), "Firebird_2_5", "bin");
        let places = Places::default().with(Place::RegistryInstall, &[&firebird25]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.library, firebird25.join("bin").join("fbclient.dll"));

        let places = Places::default().with(Place::SearchPath, &[&firebird25]);
        assert!(search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).is_err());
    }

    #[test]
    fn path_directories_are_searched_in_their_order() {
        let tmp = tempfile::tempdir().unwrap();
        let first = install(tmp.path(), "first", "");
        let second = install(tmp.path(), "second", "");
        let nothing = tmp.path().join("nothing");
        let places = Places::default().with(Place::SearchPath, &[&nothing, &second, &first]);
        let found = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap();
        assert_eq!(found.library, second.join("fbclient.dll"));
    }

    #[test]
    fn on_unix_only_firebird_and_python_are_searched_and_lib_counts() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join("opt-firebird");
        std::fs::create_dir_all(root.join("lib")).unwrap();
        std::fs::write(root.join("lib/libfbclient.so"), b"").unwrap();
        let exe = tmp.path().join("bin");
        std::fs::create_dir_all(&exe).unwrap();
        std::fs::write(exe.join("libfbclient.so.2"), b"").unwrap();
        let places = Places::default()
            .with(Place::NextToProgram, &[&exe])
            .with(Place::PythonPackage, &[&root]);
        let found = search(UNIX_ORDER, &places, UNIX_LAYOUT).unwrap();
        assert_eq!(found.place, Place::PythonPackage);
        assert_eq!(found.library, root.join("lib/libfbclient.so"));
        assert_eq!(
            *places.asked.borrow(),
            [Place::FirebirdEnv, Place::PythonPackage]
        );
    }

    #[test]
    fn without_a_hit_every_place_says_what_it_had() {
        let tmp = tempfile::tempdir().unwrap();
        let places = Places::default().with(Place::FirebirdEnv, &[tmp.path()]);
        let tried = search(WINDOWS_ORDER, &places, WINDOWS_LAYOUT).unwrap_err();
        assert_eq!(
            tried,
            [
                "the program's own folder is unknown".to_string(),
                format!("FIREBIRD={} has no fbclient.dll", tmp.path().display()),
                "no Python package firebird-embedded".into(),
                "no Firebird installation in the registry".into(),
                "no fbclient.dll on PATH".into(),
            ]
        );
    }
}
