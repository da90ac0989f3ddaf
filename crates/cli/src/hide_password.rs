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

/// Where the passwords of a PostgreSQL URI argument (`-o`) are, as
/// typed (percent-encoded or not), read as the URI parser reads them: the
/// login is everything up to the first `@` (so a password may hold `/`,
/// `?` or `:`), and what stands between it and the last `@` of the host
/// part is masked too (a password with an unescaped `@`, which the run
/// then refuses); and each `password=` (or `sslpassword=`) value of the
/// query. Any spelling that starts like a PostgreSQL URI, so that a
/// mistyped one (`POSTGRESQL://`, `postgresql:/`) is masked while the run
/// refuses it.
#[cfg(any(test, all(target_os = "linux", target_env = "gnu")))]
fn uri_password_ranges(args: &[&[u8]]) -> Vec<(usize, std::ops::Range<usize>)> {
    let mut ranges = Vec::new();
    for (i, arg) in args.iter().enumerate().skip(1) {
        // `-opostgresql:...` and `--output=postgresql:...` too.
        let lower = arg.to_ascii_lowercase();
        let Some(scheme_end) = [&b"postgresql:"[..], b"postgres:"]
            .iter()
            .find_map(|scheme| {
                lower
                    .windows(scheme.len())
                    .position(|w| w == *scheme)
                    .map(|p| p + scheme.len())
            })
        else {
            continue;
        };
        let mut rest = scheme_end;
        while arg.get(rest) == Some(&b'/') {
            rest += 1;
        }
        let tail = &arg[rest..];
        if let Some(first_at) = tail.iter().position(|&b| b == b'@') {
            // The host part ends at the first '/' or '?' after the login.
            let host_end = tail[first_at..]
                .iter()
                .position(|&b| b == b'/' || b == b'?')
                .map_or(tail.len(), |p| first_at + p);
            let last_at = tail[..host_end]
                .iter()
                .rposition(|&b| b == b'@')
                .unwrap_or(first_at);
            let login = &tail[..first_at];
            match login.iter().position(|&b| b == b':') {
                Some(colon) => ranges.push((i, rest + colon + 1..rest + last_at)),
                None if last_at > first_at => {
                    ranges.push((i, rest + first_at + 1..rest + last_at));
                }
                None => {}
            }
        }
        // The query: after the first '?' that follows the login.
        let login_end = tail.iter().position(|&b| b == b'@').map_or(0, |p| p + 1);
        let Some(question) = tail[login_end..].iter().position(|&b| b == b'?') else {
            continue;
        };
        let mut at = rest + login_end + question + 1;
        for pair in arg[at..].split(|&b| b == b'&') {
            if let Some(eq) = pair.iter().position(|&b| b == b'=') {
                let key = percent_decoded(&pair[..eq]).to_ascii_lowercase();
                if (key == b"password" || key == b"sslpassword") && eq + 1 < pair.len() {
                    ranges.push((i, at + eq + 1..at + pair.len()));
                }
            }
            at += pair.len() + 1;
        }
    }
    ranges.retain(|(_, r)| !r.is_empty());
    ranges
}

/// `%XX` decoded, as the URI parser decodes a parameter's name.
#[cfg(any(test, all(target_os = "linux", target_env = "gnu")))]
fn percent_decoded(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        let hex = text
            .get(i + 1..i + 3)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (text[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    out
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
        let masked = |uri: &str| {
            let args = ["f", "-o", uri];
            let mut bytes = uri.as_bytes().to_vec();
            let all: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
            for (_, range) in super::uri_password_ranges(&all) {
                bytes[range].fill(b'x');
            }
            String::from_utf8(bytes).unwrap()
        };
        // Passwords holding '/', '?', ':' or '@', and in the query.
        assert_eq!(
            masked("postgresql://u:a/b?c@h/db"),
            "postgresql://u:xxxxx@h/db"
        );
        assert_eq!(masked("postgresql://u:p:q@h/db"), "postgresql://u:xxx@h/db");
        assert_eq!(
            masked("postgresql://u:p@SECRET@h:5/db?x=1"),
            "postgresql://u:xxxxxxxx@h:5/db?x=1"
        );
        assert_eq!(
            masked("postgresql://h/db?password=SECRET&sslmode=verify-full"),
            "postgresql://h/db?password=xxxxxx&sslmode=verify-full"
        );
        assert_eq!(
            masked("postgresql://h/db?user=u&pass%77ord=SECRET"),
            "postgresql://h/db?user=u&pass%77ord=xxxxxx"
        );
        assert_eq!(
            masked("POSTGRESQL://u:SECRET@h/db"),
            "POSTGRESQL://u:xxxxxx@h/db"
        );
        assert_eq!(
            masked("postgresql:/u:SECRET@h/db"),
            "postgresql:/u:xxxxxx@h/db"
        );
    }

    #[test]
    fn leaves_other_arguments_and_the_program_alone() {
        assert!(ranges(&["pw1", "-d", "db.fdb", "-o", "out"], "pw1").is_empty());
        assert!(ranges(&["fbunload", "-d", "pw1.fdb"], "pw1").is_empty());
        assert!(ranges(&["fbunload", "-d", "x"], "").is_empty());
    }
}
