//! The `fbunload` binary: the command line of [`fbunload_cli`].

fn main() {
    limit_malloc_arenas();
    let argv: Vec<_> = std::env::args_os().collect();
    if argv.get(1).is_some_and(|a| a == fbunload::READER_ARG) {
        // A run of this program started it to read units (see
        // fbunload::Processes).
        std::process::exit(fbunload::serve_reader());
    }
    if let Ok(program) = std::env::current_exe() {
        fbunload::set_reader_command(Some(fbunload::ReaderCommand {
            program,
            args: vec![fbunload::READER_ARG.into()],
        }));
    }
    fbunload_cli::exit(fbunload_cli::run(argv));
}

/// Caps glibc's malloc arenas at the core count before any thread starts.
///
/// By default glibc gives up to 8 arenas per core to threads that contend,
/// and each keeps the pages its thread freed for reuse by that arena only:
/// with `-j 16` workers that each build and drop batches of megabytes, the
/// freed memory piled up in arenas made peak RSS grow with the worker count
/// (Parquet at `-j 16`: 460 MB, with the cap under 300 MB), though no more
/// than cores run at once. An explicit `MALLOC_ARENA_MAX` still wins.
fn limit_malloc_arenas() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let arenas = libc::c_int::try_from(cores).unwrap_or(libc::c_int::MAX);
        // SAFETY: mallopt only sets a malloc parameter; no thread runs yet.
        unsafe {
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
