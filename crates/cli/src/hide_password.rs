//! Keeps `-p/--password` out of `ps` and `/proc/<pid>/cmdline`.
//!
//! The kernel shows a process's arguments straight from the memory the
//! program was started with; Rust's `std::env::args` hands out copies, so
//! nothing in safe Rust can change what `ps` prints. On Linux with glibc,
//! functions in `.init_array` receive the original `argv` (std relies on
//! the same thing), so we keep that pointer and, once clap has parsed its
//! copy, overwrite the password's bytes in place with `x`.
//!
//! There is a window between exec and this overwrite; `ISC_PASSWORD`, which
//! only the same user and root can read, has none. docs/command-line.md says so.

/// Where, in each argument, the password's bytes are: the whole argument
/// (`-p secret`) or its tail (`-psecret`, `--password=secret`).
#[cfg(any(test, all(target_os = "linux", target_env = "gnu")))]
fn password_ranges(args: &[&[u8]], password: &[u8]) -> Vec<(usize, std::ops::Range<usize>)> {
    if password.is_empty() {
        return Vec::new();
    }
    let mut ranges = Vec::new();
    // argv[0] is the program, never a password.
    for (i, arg) in args.iter().enumerate().skip(1) {
        if *arg == password {
            ranges.push((i, 0..arg.len()));
        } else if arg.starts_with(b"-") && arg.len() > password.len() && arg.ends_with(password) {
            ranges.push((i, arg.len() - password.len()..arg.len()));
        }
    }
    ranges
}

/// Where the password of a `postgresql://USER:PASSWORD@HOST/DB` argument
/// (`-o`) is, as typed (percent-encoded or not).
#[cfg(any(test, all(target_os = "linux", target_env = "gnu")))]
fn uri_password_ranges(args: &[&[u8]]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut ranges = Vec::new();
    for (i, arg) in args.iter().enumerate().skip(1) {
        let Some(scheme_end) = arg.windows(3).position(|w| w == b"://") else {
            continue;
        };
        let scheme = &arg[..scheme_end];
        // `-opostgresql://...` and `--output=postgresql://...` too.
        if !(scheme.ends_with(b"postgresql") || scheme.ends_with(b"postgres")) {
            continue;
        }
        let rest = scheme_end + 3;
        let authority_end = arg[rest..]
            .iter()
            .position(|&b| b == b'/' || b == b'?')
            .map_or(arg.len(), |p| rest + p);
        let Some(at) = arg[rest..authority_end].iter().rposition(|&b| b == b'@') else {
            continue;
        };
        let userinfo = rest..rest + at;
        if let Some(colon) = arg[userinfo.clone()].iter().position(|&b| b == b':') {
            let start = userinfo.start + colon + 1;
            if start < userinfo.end {
                ranges.push((i, start..userinfo.end));
            }
        }
    }
    ranges
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod original_argv {
    use std::ffi::{c_char, c_int, CStr};
    use std::sync::atomic::{AtomicIsize, AtomicPtr, Ordering};

    static ARGC: AtomicIsize = AtomicIsize::new(0);
    static ARGV: AtomicPtr<*mut c_char> = AtomicPtr::new(std::ptr::null_mut());

    extern "C" fn capture(argc: c_int, argv: *mut *mut c_char, _envp: *mut *mut c_char) {
        ARGC.store(argc as isize, Ordering::Relaxed);
        ARGV.store(argv, Ordering::Relaxed);
    }

    #[used]
    #[link_section = ".init_array.00099"]
    static CAPTURE: extern "C" fn(c_int, *mut *mut c_char, *mut *mut c_char) = capture;

    /// Overwrites the password wherever it stands in the original argv.
    pub fn hide(password: &str) {
        overwrite(&|args| super::password_ranges(args, password.as_bytes()));
    }

    /// Overwrites the passwords of PostgreSQL URIs in the original argv.
    pub fn hide_uri_passwords() {
        overwrite(&super::uri_password_ranges);
    }

    type Ranges = Vec<(usize, std::ops::Range<usize>)>;

    fn overwrite(find: &dyn Fn(&[&[u8]]) -> Ranges) {
        let argv = ARGV.load(Ordering::Relaxed);
        let argc = ARGC.load(Ordering::Relaxed);
        if argv.is_null() || argc <= 0 {
            return;
        }
        // SAFETY: glibc passes the process's own argv, argc entries long,
        // each a NUL-terminated string that lives until exit. We only
        // overwrite bytes inside those strings, never their terminators.
        unsafe {
            let pointers: Vec<*mut c_char> = (0..argc).map(|i| *argv.offset(i)).collect();
            let args: Vec<&[u8]> = pointers
                .iter()
                .map(|&p| {
                    if p.is_null() {
                        &[][..]
                    } else {
                        CStr::from_ptr(p).to_bytes()
                    }
                })
                .collect();
            let ranges = find(&args);
            drop(args);
            for (i, range) in ranges {
                let start = pointers[i].cast::<u8>().add(range.start);
                std::ptr::write_bytes(start, b'x', range.len());
            }
        }
    }
}

/// Hides the password of a `postgresql://` argument from the process's
/// visible command line, where the platform allows it.
pub fn hide_uri_passwords() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    original_argv::hide_uri_passwords();
}

/// Hides `password` from the process's visible command line, where the
/// platform allows it; elsewhere it does nothing.
pub fn hide(password: &str) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    original_argv::hide(password);
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = password;
}

#[cfg(test)]
mod tests {
    use super::password_ranges;

    fn ranges(args: &[&str], password: &str) -> Vec<(usize, std::ops::Range<usize>)> {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        password_ranges(&args, password.as_bytes())
    }

    #[test]
    fn finds_the_password_in_every_spelling_clap_accepts() {
        assert_eq!(
            ranges(&["fbunload", "-p", "pw1", "-j", "2"], "pw1"),
            [(2, 0..3)]
        );
        assert_eq!(ranges(&["fbunload", "-ppw1"], "pw1"), [(1, 2..5)]);
        assert_eq!(ranges(&["fbunload", "-p=pw1"], "pw1"), [(1, 3..6)]);
        assert_eq!(
            ranges(&["fbunload", "--password=pw1"], "pw1"),
            [(1, 11..14)]
        );
        assert_eq!(
            ranges(&["fbunload", "--password", "pw1"], "pw1"),
            [(2, 0..3)]
        );
    }

    #[test]
    fn finds_the_password_of_a_postgresql_uri() {
        let r = |args: &[&str]| {
            let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            super::uri_password_ranges(&args)
        };
        assert_eq!(
            r(&["f", "-o", "postgresql://u:p%40w@h:5/db"]),
            [(2, 15..20)]
        );
        assert_eq!(r(&["f", "--output=postgres://u:pw@h/db"]), [(1, 22..24)]);
        assert!(r(&["f", "-o", "postgresql://u@h/db"]).is_empty());
        assert!(r(&["f", "-o", "out:dir@x"]).is_empty());
    }

    #[test]
    fn leaves_other_arguments_and_the_program_alone() {
        assert!(ranges(&["pw1", "-d", "db.fdb", "-o", "out"], "pw1").is_empty());
        assert!(ranges(&["fbunload", "-d", "pw1.fdb"], "pw1").is_empty());
        assert!(ranges(&["fbunload", "-d", "x"], "").is_empty());
    }
}
