//! Retry at one layer across services (DESIGN §4.17), with real servers on
//! 127.0.0.1: the chain of `cargo run -p retry-clients --example chain`
//! (gateway and orders over HTTP, stock over gRPC, a db that always fails),
//! each tier retrying three times. With `tower::ServerLayer` on every tier the db sees three
//! calls per user request, whether or not the user's client retries; 27
//! without it, 81 when the user's client retries too. Under a user's
//! deadline, no tier sends a request after it. On tokio's paused clock, so
//! the deadline's edge is exact and the test takes no time.

#[path = "../examples/clients/chain/tiers.rs"]
mod tiers;

use std::time::Duration;

use tiers::{run, Traffic, HOPS};

fn traffic(server_layer: bool, user_attempts: u32, user_deadline: Option<Duration>) -> Traffic {
    Traffic {
        server_layer,
        user_attempts,
        user_deadline,
        requests: 2,
    }
}

#[tokio::test(start_paused = true)]
async fn three_tiers_retrying_three_times_send_three_calls_to_a_failing_dependency() {
    for user_attempts in [1, 3] {
        let with = run(traffic(true, user_attempts, None)).await;
        // The user's client, told the gateway gave up below, does not retry.
        assert_eq!(
            with.sent,
            [1.0, 1.0, 1.0, 3.0],
            "user attempts {user_attempts}"
        );
        // The db's 10 ms three times, and waits of 5 and 10 ms.
        assert_eq!(with.latency, Duration::from_millis(45));
    }
    let without = run(traffic(false, 1, None)).await;
    assert_eq!(without.sent, [1.0, 3.0, 9.0, 27.0]);
    let without = run(traffic(false, 3, None)).await;
    assert_eq!(without.sent, [3.0, 9.0, 27.0, 81.0]);
}

#[tokio::test(start_paused = true)]
async fn no_tier_sends_a_request_after_the_users_deadline() {
    let deadline = Duration::from_millis(30);
    let with = run(traffic(true, 1, Some(deadline))).await;
    for (hop, name) in HOPS.iter().enumerate() {
        assert_eq!(with.after_deadline[hop], 0.0, "{name}: {with:?}");
    }
    // The db's second failure ends at 25 ms; the 10 ms wait before a third
    // would pass 30 ms, so stock stops there, and every tier above with it.
    assert_eq!(with.sent, [1.0, 1.0, 1.0, 2.0]);
    assert_eq!(with.latency, Duration::from_millis(25));

    // The same traffic without the layer: the deadline is sent, and nobody
    // reads it.
    let without = run(traffic(false, 1, Some(deadline))).await;
    assert_eq!(without.sent, [1.0, 3.0, 9.0, 27.0]);
    assert!(
        without.after_deadline[1..].iter().all(|late| *late > 0.0),
        "{without:?}"
    );
    assert!(without.latency > Duration::from_millis(400), "{without:?}");
}
