//! The `faultline` command line: a thin shell over the library crates.

mod cli;

/// Allocation-heavy stages (syntax trees, the collision analysis' search states) run faster on
/// mimalloc than on the system allocator; the library crates leave the choice to their host.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    cli::run()
}
