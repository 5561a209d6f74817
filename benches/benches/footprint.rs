//! `cargo bench -p retry-benches --bench footprint`
//!
//! What each contender's call holds and asks of the allocator: the size of
//! its future (`std::mem::size_of_val`, before the first poll) and the heap
//! allocations per call, counted by a global allocator, on the success path
//! and with three transient failures before the success.

mod common;

use std::hint::black_box;
use std::sync::atomic::Ordering;

use common::Dependency;

#[global_allocator]
static GLOBAL: common::Counting = common::Counting;

const CALLS: u64 = 1_000;

fn main() {
    let live = common::runtime(false);
    let paused = common::runtime(true);
    let healthy = Dependency::healthy();
    let flaky = Dependency::flaky();
    let hand_size = std::mem::size_of_val(&common::by_hand(&healthy, 7));

    println!("| contender | size of the future | vs hand-written | allocations per call, success | allocations per call, three failures |");
    println!("|---|---|---|---|---|");
    macro_rules! row {
        ($name:expr, $function:path) => {{
            let size = std::mem::size_of_val(&$function(&healthy, 7));
            let mut per_call = [0.0; 2];
            for (slot, (runtime, dependency)) in [(&live, &healthy), (&paused, &flaky)]
                .into_iter()
                .enumerate()
            {
                runtime.block_on(async {
                    // Warm up: the timer wheel and thread-locals allocate once.
                    for call in 0..CALLS {
                        black_box($function(dependency, call).await).ok();
                    }
                    let before = common::ALLOCATIONS.load(Ordering::Relaxed);
                    for call in 0..CALLS {
                        black_box($function(dependency, call).await).ok();
                    }
                    let allocations = common::ALLOCATIONS.load(Ordering::Relaxed) - before;
                    per_call[slot] = allocations as f64 / CALLS as f64;
                });
            }
            let extra = size as i64 - hand_size as i64;
            println!(
                "| {} | {size} B | {extra:+} B | {} | {} |",
                $name, per_call[0], per_call[1]
            );
        }};
    }
    for_each_contender!(row);
}
