//! Page size for the commands that compile a catalogue.
//!
//! Compiling the repository's catalogue and analysing it touches about a gigabyte of memory
//! for a few seconds (automata, regex caches, search states), and mimalloc asks the kernel for
//! transparent huge pages, each zeroed whole on its first touch: a third of `faultline check`'s
//! samples were the kernel clearing pages (a perf profile). With ordinary pages, `check` and
//! `test` run a tenth to a fifth faster (docs/performance.md, "Checking a catalogue"). The
//! commands that classify keep huge pages: loading a bundle touches little, and there they
//! cost nothing in wall time and save page faults.

/// Asks the kernel not to back this process's memory with transparent huge pages from now on.
/// Where that is refused or unknown (another system, an old kernel), nothing changes.
pub fn prefer_small_pages() {
    #[cfg(target_os = "linux")]
    {
        // The flag only changes how memory is backed, never what the program computes.
        let _ = rustix::thread::disable_transparent_huge_pages(true);
    }
}
