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
/// It also fixes glibc's mmap threshold, at [`MMAP_THRESHOLD`]: glibc
/// raises it, up to 32 MiB, each time a big block is freed, after which
/// batches and encoded pages of up to 32 MiB come from the arenas, which
/// keep them once freed. With 16 arenas (16 cores), Parquet at `-j 16` on
/// a 2M-row STOCK peaked at 563 MB, 234 with the threshold kept at its
/// first 128 KiB (measured on 2 cores with `MALLOC_ARENA_MAX=16`). An
/// explicit `MALLOC_MMAP_THRESHOLD_` or `GLIBC_TUNABLES` still wins.
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
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
        }
    }
}

/// Blocks from this size up are mapped on their own, and unmapped when
/// freed. 32 KiB, not glibc's first 128 KiB: a batch of a 500-column
/// table is 500 columns of 30-100 KiB, which came from the arenas, and
/// the arenas kept them once freed, scattered among blocks still in use:
/// Parquet of WIDE (100,000 rows, -j1, `--memory 64`) peaked at 181-184
/// MB, 155 with 32 KiB, for 98 MB of heap (heaptrack). Narrow tables'
/// CPU is the same (STOCK, 500,000 rows, -j2: docs/PERFORMANCE.md). Small
/// tables' too, as long as a batch's first builders stay under it
/// (`fbunload_decode::FIRST_BATCH_ROWS`): made for 8,192 rows, each of
/// 5,000 small tables mapped, faulted in and unmapped its columns, 0.6
/// system CPU s in all.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 32 << 10;

#[cfg(all(test, target_os = "linux", target_env = "gnu"))]
mod tests {
    #[test]
    fn a_column_of_a_wide_batch_is_mapped_on_its_own_and_unmapped_when_freed() {
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some()
            || std::env::var_os("GLIBC_TUNABLES").is_some()
        {
            return;
        }
        super::limit_malloc_arenas();
        // SAFETY: mallinfo2 only reads malloc's counters.
        let mapped = || unsafe { libc::mallinfo2() }.hblks;
        let before = mapped();
        // Columns of 48 KiB, under glibc's first threshold of 128 KiB:
        // glibc maps a block once its arena's free top is used up.
        let columns: Vec<Vec<u64>> = (0..64).map(|_| vec![1u64; 6 << 10]).collect();
        let during = mapped();
        assert!(during >= before + 32, "{} of 64 mapped", during - before);
        drop(columns);
        assert_eq!(mapped(), before, "unmapped when freed");
    }
}
