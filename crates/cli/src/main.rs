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
        // Reader processes run this very program, even if its file is
        // replaced during the run.
        fbunload::set_reader_command(Some(fbunload::ReaderCommand::this_program(
            program,
            vec![fbunload::READER_ARG.into()],
        )));
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
///
/// It also keeps glibc's mmap threshold where it starts (128 KiB): glibc
/// raises it, up to 32 MiB, each time a big block is freed, after which
/// batches and encoded pages of up to 32 MiB come from the arenas, which
/// keep them once freed. With 16 arenas (16 cores), Parquet at `-j 16` on
/// a 2M-row STOCK peaked at 563 MB, 234 with the threshold kept (measured
/// on 2 cores with `MALLOC_ARENA_MAX=16`). An explicit
/// `MALLOC_MMAP_THRESHOLD_` or `GLIBC_TUNABLES` still wins. Not lower:
/// 32 KiB took 26 MB off a 500-column table's Parquet peak, but every
/// small table's first batch (builders for 8,192 rows) was then mapped
/// and faulted in afresh: 5,000 tables cost 0.6 system CPU s more
/// (docs/PERFORMANCE.md, "The mmap threshold, tried and put back").
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
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_none()
        && std::env::var_os("GLIBC_TUNABLES").is_none()
    {
        // SAFETY: as above.
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, 128 << 10);
        }
    }
}
