//! Work on two threads: a check's costly stages (lowering patterns, building automata,
//! classifying examples, product searches) are made of independent items.

use std::sync::atomic::{AtomicUsize, Ordering};

/// Threads at once, at most. Each may hold the memory one automaton build is allowed
/// (docs/bundle.md, "Memory ceiling"), so this also multiplies that ceiling.
pub(crate) const THREADS: usize = 2;

/// How many threads to use for `items` items: none beyond the machine's or the items.
fn threads(items: usize) -> usize {
    std::thread::available_parallelism()
        .map_or(1, std::num::NonZeroUsize::get)
        .min(THREADS)
        .min(items)
}

/// Runs `work` on each item on worker threads, each made by `worker` (for example a handle on
/// the database of its own), items taken in order. Where threads are unavailable none runs,
/// and the caller does the work itself.
pub(crate) fn for_each<T: Sync, W>(
    items: &[T],
    worker: impl Fn() -> W + Sync,
    work: impl Fn(&W, &T) + Sync,
) {
    if threads(items.len()) < 2 {
        return;
    }
    let next = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for _ in 0..threads(items.len()) {
            let (next, worker, work) = (&next, &worker, &work);
            let run = move || {
                let state = worker();
                while let Some(item) = items.get(next.fetch_add(1, Ordering::Relaxed)) {
                    work(&state, item);
                }
            };
            // A thread that cannot be spawned leaves its items to the others.
            let _ = std::thread::Builder::new().spawn_scoped(scope, run);
        }
    });
}

/// `f` of every item, in order, computed on worker threads (or here, where there are none).
pub(crate) fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let results: Vec<std::sync::Mutex<Option<R>>> =
        items.iter().map(|_| std::sync::Mutex::new(None)).collect();
    let indexed: Vec<usize> = (0..items.len()).collect();
    for_each(
        &indexed,
        || (),
        |(), &i| {
            if let (Some(item), Some(slot)) = (items.get(i), results.get(i))
                && let Ok(mut slot) = slot.lock()
            {
                *slot = Some(f(item));
            }
        },
    );
    // Whatever no worker computed (no threads, or a poisoned slot) is computed here.
    results
        .into_iter()
        .zip(items)
        .map(|(slot, item)| slot.into_inner().ok().flatten().unwrap_or_else(|| f(item)))
        .collect()
}

#[cfg(test)]
mod tests {
    #[test]
    fn results_keep_the_items_order() {
        let items: Vec<u64> = (0..1000).collect();
        let squares = super::map(&items, |n| n * n);
        assert_eq!(squares, items.iter().map(|n| n * n).collect::<Vec<_>>());
    }
}
