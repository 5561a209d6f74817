//! `cargo run -p retry-clients --example chain`
//!
//! Retry at one layer across services (docs/services.md). A chain of real
//! services on 127.0.0.1, each retrying three times with this library, in
//! front of a dependency that always fails; the same traffic is sent with
//! and without `tower::ServerLayer` on every tier, and the example prints
//! the calls that reach the failing dependency per user request, the
//! requests each tier sends after the user's deadline has passed, and the
//! user's latency. It takes about ten seconds.

mod tiers;

use std::time::Duration;

use tiers::{Figures, Traffic, DB_LATENCY, HOPS};

/// User requests per row.
const REQUESTS: u32 = 3;

/// The user's deadline in the second table.
const DEADLINE: Duration = Duration::from_millis(30);

#[tokio::main]
async fn main() {
    println!(
        "A chain of real services on 127.0.0.1, each retrying 3 times (waits of 5 and 10 ms):"
    );
    println!(
        "  user -HTTP-> gateway -HTTP-> orders -gRPC-> stock -HTTP-> db (always 503, after {} ms)",
        DB_LATENCY.as_millis()
    );
    println!("Each row: {REQUESTS} user requests, one after the other; figures per request.");

    println!();
    println!("1. Calls reaching the failing db, per user request (no deadline)");
    println!(
        "{:40}{:>22}{:>20}",
        "", "without ServerLayer", "with ServerLayer"
    );
    for (label, attempts) in [
        ("user's client sends once", 1),
        ("user's client retries 3 times", 3),
    ] {
        let (without, with) = both(attempts, None).await;
        println!("   {label:37}{:>22}{:>20}", without.sent[3], with.sent[3]);
        println!(
            "   {:37}{:>22}{:>20}",
            "  user's latency",
            millis(without.latency),
            millis(with.latency)
        );
    }

    println!();
    println!(
        "2. The user gives each request {} ms (its `deadline`, sent as x-envoy-expected-rq-timeout-ms)",
        DEADLINE.as_millis()
    );
    println!(
        "{:40}{:>22}{:>20}",
        "", "without ServerLayer", "with ServerLayer"
    );
    let (without, with) = both(1, Some(DEADLINE)).await;
    println!(
        "   {:37}{:>22}{:>20}",
        "user's latency",
        millis(without.latency),
        millis(with.latency)
    );
    println!(
        "   {:37}{:>22}{:>20}",
        "calls reaching the db", without.sent[3], with.sent[3]
    );
    println!("   requests sent after the deadline:");
    for (hop, name) in HOPS.iter().enumerate() {
        println!(
            "     {name:35}{:>22}{:>20}",
            without.after_deadline[hop], with.after_deadline[hop]
        );
    }
}

/// The same traffic without the layer, then with it.
async fn both(user_attempts: u32, user_deadline: Option<Duration>) -> (Figures, Figures) {
    let traffic = |server_layer| Traffic {
        server_layer,
        user_attempts,
        user_deadline,
        requests: REQUESTS,
    };
    (
        tiers::run(traffic(false)).await,
        tiers::run(traffic(true)).await,
    )
}

fn millis(latency: Duration) -> String {
    format!("{} ms", latency.as_millis())
}
