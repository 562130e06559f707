//! The `opcat` binary: argument parsing and process exit codes only; everything else is in the
//! library.

use std::process::ExitCode;

/// jemalloc instead of glibc's malloc. opcat makes many small allocations from many threads (a
/// watch store's objects, JSON of every request and event): with glibc, malloc and free were a
/// quarter of opcat's CPU while converging (perf), and its per-thread arenas kept freed memory.
/// Side by side at 10,000 Subscriptions (scripts/bench-scale.sh): peak RSS 529.5 → 495.1 MB,
/// opcat CPU to converge 171.3 → 130.2 s.
/// Without the `jemalloc` feature (the quickstart's build), glibc's malloc.
#[cfg(feature = "jemalloc")]
#[global_allocator]
static GLOBAL: tikv_jemallocator::Jemalloc = tikv_jemallocator::Jemalloc;

fn main() -> ExitCode {
    opcat::cli::main()
}
