//! Instructions per call, counted by callgrind: the primary cost figure,
//! since a shared machine's noise does not move it. Run through
//! `benches/instructions.sh`, which builds this binary and runs it once per
//! contender and path under `valgrind --tool=callgrind`, collecting only
//! inside `measure_*` (so the runtime's start-up and the loop around the
//! calls are not counted), and divides by the number of calls.
//!
//! `instructions <contender> <success|failures> <calls>`
//!
//! - `success`: the dependency answers at once; each call's future is made
//!   and polled once to completion, inside a tokio runtime's context.
//! - `failures`: three transient failures, then a success; each call is one
//!   `block_on` on a current-thread runtime with a paused clock, so the
//!   waits go through tokio's timer (the same for every contender) and no
//!   real time passes.

mod common;

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use common::Dependency;

/// The dependency alone, for the floor every contender stands on.
async fn dependency_alone(dependency: &Dependency, x: u64) -> Result<u64, common::Failure> {
    dependency.call(x).await
}

/// One call on the success path: made, polled once, dropped.
#[inline(never)]
fn measure_success<F: Future>(make: impl FnOnce() -> F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    let future = pin!(make());
    match future.poll(&mut cx) {
        Poll::Ready(output) => output,
        Poll::Pending => panic!("the success path does not wait"),
    }
}

/// One call that waits: driven by the runtime.
#[inline(never)]
fn measure_block_on<F: Future>(
    runtime: &tokio::runtime::Runtime,
    make: impl FnOnce() -> F,
) -> F::Output {
    runtime.block_on(make())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (contender, path, calls) = match args.as_slice() {
        [_, contender, path, calls] => (
            contender.as_str(),
            path.as_str(),
            calls.parse::<u64>().expect("a number of calls"),
        ),
        // `cargo bench` runs every benchmark with `--bench`: this one counts
        // nothing by itself, and says how it is run rather than failing the
        // others' run.
        [_, flag] if flag == "--bench" => {
            println!(
                "instructions: counted under callgrind by benches/instructions.sh [calls]; \
                 see BENCHMARKS.md"
            );
            return;
        }
        _ => {
            eprintln!("usage: instructions <contender> <success|failures> <calls>");
            std::process::exit(2);
        }
    };
    let healthy = Dependency::healthy();
    let flaky = Dependency::flaky();
    macro_rules! run {
        ($function:path) => {{
            match path {
                "success" => {
                    let runtime = common::runtime(false);
                    let _context = runtime.enter();
                    for call in 0..calls {
                        black_box(measure_success(|| $function(&healthy, call))).ok();
                    }
                }
                "failures" => {
                    let runtime = common::runtime(true);
                    for call in 0..calls {
                        black_box(measure_block_on(&runtime, || $function(&flaky, call))).ok();
                    }
                }
                other => panic!("unknown path {other}"),
            }
        }};
    }
    match contender {
        "dependency" => run!(dependency_alone),
        "hand" => run!(common::by_hand),
        "attribute" => run!(common::with_attribute),
        "attribute-deadline" => run!(common::with_attribute_and_deadline),
        "hand-deadline" => run!(common::by_hand_with_deadline),
        "attribute-breaker" => run!(common::with_attribute_and_breaker),
        "closure" => run!(common::with_closure),
        "backon" => run!(common::with_backon),
        other => panic!("unknown contender {other}"),
    }
}
