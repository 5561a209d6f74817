//! The standards' own numbers, as tables, each with its source: gRFC A6
//! (gRPC client retries, as amended by grpc/proposal#452 in 2024) for a
//! policy read from a gRPC service config, and RFC 9110 for the HTTP
//! `Retry-After` field. Each row is what the standard says; the code is
//! checked against it, not against itself.

use std::cell::RefCell;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use retry_runtime::classify::grpc::{self, PUSHBACK};
use retry_runtime::config::grpc::ServiceConfig;
use retry_runtime::retry_after::parse_at;
use retry_runtime::{last_call, seed_thread_rng, Stop};
use tonic::{Code, Status};

fn ms(millis: u64) -> Duration {
    Duration::from_millis(millis)
}

/// A service config with one `retryPolicy` for every method.
fn retry_policy(fields: &str) -> Result<ServiceConfig, String> {
    serde_json::from_str(&format!(
        r#"{{ "methodConfig": [{{ "name": [{{}}], "retryPolicy": {{ {fields} }} }}],
            "retryThrottling": {{ "maxTokens": 10, "tokenRatio": 0.1 }} }}"#
    ))
    .map_err(|error| error.to_string())
}

fn backoff(initial: &str, max: &str, multiplier: &str) -> ServiceConfig {
    retry_policy(&format!(
        r#""maxAttempts": 5, "initialBackoff": "{initial}", "maxBackoff": "{max}",
           "backoffMultiplier": {multiplier}, "retryableStatusCodes": ["UNAVAILABLE"]"#
    ))
    .unwrap()
}

// ---------------------------------------------------------------- gRFC A6

/// gRFC A6, "Exponential Backoff", as amended (grpc/proposal#452): "the
/// n-th attempt will occur at `min(initialBackoff *
/// backoffMultiplier**(n-1), maxBackoff) * random(0.8, 1.2)`", the first
/// retry (n = 1) included. Rows: `initialBackoff`, `maxBackoff`,
/// `backoffMultiplier`, retry n, and the un-jittered wait in milliseconds.
/// The first rows are A6's own example policy (".1s", "1s", 2).
const BACKOFF: &[(&str, &str, &str, u32, u64)] = &[
    (".1s", "1s", "2", 1, 100),
    (".1s", "1s", "2", 2, 200),
    (".1s", "1s", "2", 3, 400),
    (".1s", "1s", "2", 4, 800),
    (".1s", "1s", "2", 5, 1000),   // capped at maxBackoff
    ("1s", "10s", "0.5", 1, 1000), // A6: "greater than zero"
    ("1s", "10s", "0.5", 2, 500),
    ("1s", "10s", "0.5", 3, 250),
    ("4s", "1s", "0.5", 1, 1000), // initialBackoff above maxBackoff
    ("4s", "1s", "0.5", 3, 1000), // 4s * 0.25 = 1s
    ("4s", "1s", "0.5", 4, 500),  // 4s * 0.125
    ("5s", "1s", "2", 1, 1000),
    (".025s", ".4s", "1.5", 2, 38), // 37.5 ms, to the nearest nanosecond
    (".1s", "1s", "1", 4, 100),
    (".1s", "1s", "\"Infinity\"", 1, 100),
    (".1s", "1s", "\"Infinity\"", 2, 1000),
];

#[test]
fn a6_backoff_bounds_are_point_eight_to_one_point_two_times_the_ceiling() {
    for &(initial, max, multiplier, n, millis) in BACKOFF {
        let config = backoff(initial, max, multiplier);
        let policy = config.methods()[0].policy();
        let ceiling = policy.ceiling(n - 1);
        let expected = if (initial, n) == (".025s", 2) {
            Duration::from_micros(37_500)
        } else {
            ms(millis)
        };
        let row = format!("{initial} {max} x{multiplier} retry {n}");
        assert_eq!(ceiling, expected, "{row}");
        // The extreme draws: exactly 0.8 and 1.2 times the ceiling.
        let low = policy.wait_with(n - 1, policy.base(), 0);
        let high = policy.wait_with(n - 1, policy.base(), u64::MAX);
        assert_eq!(low.as_nanos(), ceiling.as_nanos() * 4 / 5, "{row}");
        assert_eq!(high.as_nanos(), ceiling.as_nanos() * 6 / 5, "{row}");
    }
}

/// 10,000 waits drawn by the retry loop itself (the closure API's
/// `on_retry` sees each) under a service config: every one within A6's
/// bounds, spread as its uniform factor is (the smallest below 0.82 and the
/// largest above 1.18 times the un-jittered wait, the mean within 2% of it).
#[tokio::test(start_paused = true)]
async fn ten_thousand_drawn_waits_spread_as_a6s_uniform_factor() {
    // maxAttempts 5: four retries a call, the fourth capped (".1s" x 2^3 =
    // 0.8s, capped at ".5s").
    let config = backoff(".1s", ".5s", "2");
    let method = &config.methods()[0];
    let policy = method.policy();
    let ceilings = [100, 200, 400, 500].map(ms);
    seed_thread_rng(0xA6);
    let ratios = RefCell::new(Vec::with_capacity(10_000));
    for _ in 0..2_500 {
        let _: Result<(), Status> = policy
            .on(|status: &Status| method.retryable().is_retryable(status))
            .on_retry(|_, attempt, wait| {
                let ceiling = ceilings[attempt as usize - 1];
                ratios
                    .borrow_mut()
                    .push(wait.as_secs_f64() / ceiling.as_secs_f64());
            })
            .run(|| async { Err(Status::unavailable("down")) })
            .await;
    }
    let ratios = ratios.into_inner();
    assert_eq!(ratios.len(), 10_000);
    let min = ratios.iter().copied().fold(f64::INFINITY, f64::min);
    let max = ratios.iter().copied().fold(0.0, f64::max);
    #[allow(clippy::cast_precision_loss)]
    let mean = ratios.iter().sum::<f64>() / ratios.len() as f64;
    println!("a6 spread over 10000 draws: min {min:.5} max {max:.5} mean {mean:.5}");
    assert!(ratios.iter().all(|ratio| (0.8..=1.2).contains(ratio)));
    assert!(min < 0.82, "smallest {min}");
    assert!(max > 1.18, "largest {max}");
    assert!((mean - 1.0).abs() < 0.02, "mean {mean}");
}

/// gRFC A6, "Limits on Retries and Hedges": `maxAttempts` above 5 "will be
/// treated as equal to the maximum value" (5); "Integration with Service
/// Config": it "must be two or greater". Rows: the value as written, and
/// the attempts made, or the error.
const MAX_ATTEMPTS: &[(&str, Result<u32, &str>)] = &[
    ("2", Ok(2)),
    ("4", Ok(4)),
    ("5", Ok(5)),
    ("6", Ok(5)),
    ("100", Ok(5)),
    ("4294967295", Ok(5)),
    ("\"7\"", Ok(5)),
    ("1e1", Ok(5)),
    ("1", Err("`retryPolicy.maxAttempts`: must be 2 or more")),
    ("0", Err("`retryPolicy.maxAttempts`: must be 2 or more")),
];

#[test]
fn a6_max_attempts_is_capped_at_five_and_at_least_two() {
    for (written, expected) in MAX_ATTEMPTS {
        for policy in ["retryPolicy", "hedgingPolicy"] {
            let fields = if policy == "retryPolicy" {
                format!(
                    r#""maxAttempts": {written}, "initialBackoff": "0.1s", "maxBackoff": "1s",
                       "backoffMultiplier": 2, "retryableStatusCodes": [14]"#
                )
            } else {
                format!(r#""maxAttempts": {written}, "nonFatalStatusCodes": [14]"#)
            };
            let loaded = serde_json::from_str::<ServiceConfig>(&format!(
                r#"{{ "methodConfig": [{{ "name": [{{}}], "{policy}": {{ {fields} }} }}] }}"#
            ));
            match (loaded, expected) {
                (Ok(config), Ok(attempts)) => assert_eq!(
                    config.methods()[0].policy().max_attempts(),
                    *attempts,
                    "{policy} {written}"
                ),
                (Err(error), Err(message)) => {
                    let message = message.replace("retryPolicy", policy);
                    assert!(
                        error.to_string().contains(&message),
                        "{policy} {written}: {error}"
                    );
                }
                (loaded, _) => panic!("{policy} {written}: {loaded:?}"),
            }
        }
    }
}

/// gRFC A6, "Throttling Retry Attempts and Hedged RPCs", with its example
/// `retryThrottling` (`maxTokens` 10, `tokenRatio` 0.1): the count starts at
/// 10 and stays within 0 and 10, "every failed RPC will decrement the
/// token_count by 1", "every successful RPC will increment the token_count
/// by tokenRatio", and "if token_count is less than or equal to the
/// threshold, defined to be (maxTokens / 2), then RPCs will not be
/// retried". Rows: the RPC's outcome, the count after it, and whether a
/// failed RPC may then be retried.
const THROTTLING: &[(bool, f64, bool)] = &[
    (false, 9.0, true),
    (false, 8.0, true),
    (false, 7.0, true),
    (false, 6.0, true),
    (false, 5.0, false), // 5 is the threshold: not above it
    (true, 5.1, false),
    (false, 4.1, false),
    (true, 4.2, false),
    (false, 3.2, false),
    (false, 2.2, false),
    (false, 1.2, false),
    (false, 0.2, false),
    (false, 0.0, false), // never below zero
    (true, 0.1, false),
];

#[test]
fn a6_throttling_token_by_token() {
    let config = backoff(".1s", "1s", "2");
    let budget = config.budget().unwrap();
    assert_eq!((budget.max_tokens(), budget.tokens()), (10.0, 10.0));
    for (row, &(success, count, retried)) in THROTTLING.iter().enumerate() {
        let allowed = if success {
            budget.record_success();
            None
        } else {
            Some(budget.record_failure())
        };
        assert!(
            (budget.tokens() - count).abs() < 1e-9,
            "row {row}: {budget:?}"
        );
        if let Some(allowed) = allowed {
            assert_eq!(allowed, retried, "row {row}");
        }
    }
    // Up to `maxTokens`, never above.
    for _ in 0..200 {
        budget.record_success();
    }
    assert_eq!(budget.tokens(), 10.0);
}

/// The same arithmetic through the retry loop under the config: each call
/// that always fails takes a token per attempt, and retries stop once the
/// count is not above 5.
#[tokio::test(start_paused = true)]
async fn a6_throttling_through_the_loop() {
    let config = backoff(".1s", "1s", "2");
    let method = &config.methods()[0];
    let budget = config.budget().unwrap();
    // Rows: the attempts each call makes, and the count after it.
    for (attempts, count) in [(5, 5.0), (1, 4.0), (1, 3.0)] {
        let mut calls = 0;
        let _: Result<(), Status> = method
            .policy()
            .on(|status: &Status| method.retryable().is_retryable(status))
            .budget(&budget)
            .run(|| {
                calls += 1;
                async { Err(Status::unavailable("down")) }
            })
            .await;
        assert_eq!(calls, attempts);
        assert!((budget.tokens() - count).abs() < 1e-9, "{budget:?}");
    }
}

/// gRFC A6, "Pushback": `grpc-retry-pushback-ms` "is to be an ASCII
/// encoded signed 32-bit integer ... If the value for pushback is negative
/// or unparseble, then it will be seen as the server asking the client not
/// to retry at all". Rows: the metadata value, and the wait it asks for
/// (`Duration::MAX`: do not retry). Leading zeros are read, as gRPC
/// clients read them; a sign, blanks and values past `i32::MAX` are not a
/// number.
const PUSHBACKS: &[(&str, Option<Duration>)] = &[
    ("0", Some(Duration::ZERO)),
    ("250", Some(Duration::from_millis(250))),
    ("0250", Some(Duration::from_millis(250))),
    ("2147483647", Some(Duration::from_millis(2_147_483_647))),
    ("-1", Some(Duration::MAX)),
    ("-250", Some(Duration::MAX)),
    ("-0", Some(Duration::MAX)),
    ("+250", Some(Duration::MAX)),
    ("2147483648", Some(Duration::MAX)),
    ("99999999999999999999", Some(Duration::MAX)),
    ("", Some(Duration::MAX)),
    ("1.5", Some(Duration::MAX)),
    ("1e3", Some(Duration::MAX)),
    (" 250", Some(Duration::MAX)),
    ("soon", Some(Duration::MAX)),
];

#[test]
fn a6_pushback_valid_negative_and_malformed() {
    let mut status = Status::unavailable("busy");
    assert_eq!(grpc::pushback(&status), None, "no pushback");
    for &(value, expected) in PUSHBACKS {
        status
            .metadata_mut()
            .insert(PUSHBACK, value.parse().unwrap());
        assert_eq!(grpc::pushback(&status), expected, "{value:?}");
        // A status whose pushback says not to retry is not retryable.
        let retryable = expected.is_some_and(|wait| wait < Duration::MAX);
        assert_eq!(grpc::is_retryable(&status), retryable, "{value:?}");
    }
}

/// gRFC A6: "The only RPCs that are counted as failures for the throttling
/// policy are RPCs that fail with a status code that qualifies as a
/// retryable ... status code, or that receive a pushback response
/// indicating not to retry." A negative pushback on a retryable code takes
/// a token and is not retried; a valid one is waited out exactly, even
/// past `maxBackoff`; a code outside the set takes none.
#[tokio::test(start_paused = true)]
async fn a6_a_do_not_retry_pushback_is_a_throttling_failure() {
    let config = backoff(".1s", "1s", "2");
    let method = &config.methods()[0];
    // Rows: the pushback of the first answer (then OK), the code, the
    // attempts made, the tokens left, and why the call stopped.
    let rows: [(Option<&str>, Code, u32, f64, Stop); 4] = [
        // Not retried, as the server's mark of a give-up below (DESIGN
        // §4.17): reason `nested`.
        (Some("-1"), Code::Unavailable, 1, 9.0, Stop::Nested),
        (Some("soon"), Code::Unavailable, 1, 9.0, Stop::Nested),
        (Some("5000"), Code::Unavailable, 2, 9.1, Stop::Done),
        (
            Some("-1"),
            Code::InvalidArgument,
            1,
            10.0,
            Stop::NotRetryable,
        ),
    ];
    for (pushback, code, attempts, tokens, stop) in rows {
        let budget = config.budget().unwrap();
        let mut calls = 0;
        let started = tokio::time::Instant::now();
        let _: Result<(), Status> = method
            .policy()
            // By the code alone: the pushback is the hint.
            .on(|status: &Status| method.retryable().contains(status.code()))
            .retry_after(grpc::pushback)
            .budget(&budget)
            .run(|| {
                calls += 1;
                let first = calls == 1;
                async move {
                    if !first {
                        return Ok(());
                    }
                    let mut status = Status::new(code, "scripted");
                    if let Some(pushback) = pushback {
                        status
                            .metadata_mut()
                            .insert(PUSHBACK, pushback.parse().unwrap());
                    }
                    Err(status)
                }
            })
            .await;
        let row = format!("{pushback:?} {code:?}");
        assert_eq!(calls, attempts, "{row}");
        assert!((budget.tokens() - tokens).abs() < 1e-9, "{row}: {budget:?}");
        assert_eq!(last_call().unwrap().reason(), stop, "{row}");
        if pushback == Some("5000") {
            // Exactly the pushback, five times `maxBackoff`.
            assert_eq!(started.elapsed(), Duration::from_secs(5), "{row}");
        }
    }
}

// ------------------------------------------------------------- RFC 9110

/// 2026-11-29 00:00:00 UTC, a Sunday.
const NOW: u64 = 1_795_910_400;

fn at(secs: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(secs)
}

/// RFC 9110 section 10.2.3 (`Retry-After = HTTP-date / delay-seconds`,
/// `delay-seconds = 1*DIGIT`) and section 5.6.7 (the three date forms,
/// the 50-year rule, `time-of-day` up to `23:59:60`), with section 5.5's
/// optional whitespace around a field value. Rows: the value, the clock
/// it is read at (seconds since the epoch), and the wait (`None`:
/// malformed). Each edge decided here is listed in `retry_after`'s docs.
#[allow(clippy::type_complexity)]
const RETRY_AFTER: &[(&str, u64, Option<Duration>)] = &[
    // delay-seconds, section 10.2.3's example.
    ("120", NOW, Some(Duration::from_secs(120))),
    ("0", NOW, Some(Duration::ZERO)),
    ("007", NOW, Some(Duration::from_secs(7))),
    // Past 64 bits: the longest wait, not garbage.
    (
        "18446744073709551615",
        NOW,
        Some(Duration::from_secs(u64::MAX)),
    ),
    ("18446744073709551616", NOW, Some(Duration::MAX)),
    (
        "340282366920938463463374607431768211456",
        NOW,
        Some(Duration::MAX),
    ),
    // A sign, a fraction, an exponent, a unit: not 1*DIGIT.
    ("+120", NOW, None),
    ("-120", NOW, None),
    ("+0", NOW, None),
    ("1.5", NOW, None),
    ("1e3", NOW, None),
    ("120s", NOW, None),
    // Optional whitespace (SP, HTAB) around the value; nothing else.
    (" 120", NOW, Some(Duration::from_secs(120))),
    ("\t120 \t", NOW, Some(Duration::from_secs(120))),
    ("1 20", NOW, None),
    ("\n120", NOW, None),
    ("120\r\n", NOW, None),
    ("\u{a0}120", NOW, None),
    // Section 10.2.3's date example, an hour ahead.
    (
        "Fri, 31 Dec 1999 23:59:59 GMT",
        946_684_799 - 3600,
        Some(Duration::from_secs(3600)),
    ),
    // Section 5.6.7's three forms of one instant, 1994-11-06 08:49:37.
    (
        "Sun, 06 Nov 1994 08:49:37 GMT",
        784_111_777 - 90,
        Some(Duration::from_secs(90)),
    ),
    (
        "Sunday, 06-Nov-94 08:49:37 GMT",
        784_111_777 - 90,
        Some(Duration::from_secs(90)),
    ),
    (
        "Sun Nov  6 08:49:37 1994",
        784_111_777 - 90,
        Some(Duration::from_secs(90)),
    ),
    (
        "Sun, 06 Nov 1994 08:49:37 GMT",
        784_111_777,
        Some(Duration::ZERO),
    ),
    (
        "Sun, 06 Nov 1994 08:49:37 GMT",
        784_111_777 + 90,
        Some(Duration::ZERO),
    ),
    (
        "  Sun, 06 Nov 1994 08:49:37 GMT\t",
        784_111_777 - 1,
        Some(Duration::from_secs(1)),
    ),
    // The 50-year rule, read on 2026-11-29: 2076-11-29 00:00:00 is 50
    // years ahead, not more, so "76" is 2076 ...
    (
        "Sunday, 29-Nov-76 00:00:00 GMT",
        NOW,
        Some(Duration::from_secs(3_373_833_600 - NOW)),
    ),
    // ... one second later is more than 50 years ahead: 1976, in the past
    // (a Monday then) ...
    ("Monday, 29-Nov-76 00:00:01 GMT", NOW, Some(Duration::ZERO)),
    ("Sunday, 29-Nov-76 00:00:01 GMT", NOW, None),
    // ... a date under 50 years ahead is in this century ...
    (
        "Sunday, 01-Jan-34 00:00:00 GMT",
        NOW,
        Some(Duration::from_secs(2_019_686_400 - NOW)),
    ),
    // ... and one in this century's past stays there.
    ("Friday, 31-Dec-99 23:59:59 GMT", NOW, Some(Duration::ZERO)),
    // February 29: in leap years only (2000 is one, 1900 and 2023 not).
    (
        "Thu, 29 Feb 2024 00:00:00 GMT",
        1_709_164_800 - 5,
        Some(Duration::from_secs(5)),
    ),
    ("Tue, 29 Feb 2000 00:00:00 GMT", NOW, Some(Duration::ZERO)),
    ("Thu, 29 Feb 1900 00:00:00 GMT", NOW, None),
    ("Wed, 29 Feb 2023 00:00:00 GMT", NOW, None),
    (
        "Thu Feb 29 00:00:05 2024",
        1_709_164_800,
        Some(Duration::from_secs(5)),
    ),
    (
        "Thursday, 29-Feb-24 00:00:05 GMT",
        1_709_164_800,
        Some(Duration::from_secs(5)),
    ),
    // Read in 2060, "00" is 2100 (40 years ahead), which has no February
    // 29; read in 2026, it is 2000.
    ("Tuesday, 29-Feb-00 00:00:00 GMT", 2_840_140_800, None),
    ("Tuesday, 29-Feb-00 00:00:00 GMT", NOW, Some(Duration::ZERO)),
    // A leap second: 2016-12-31 23:59:60 is 2017-01-01 00:00:00.
    (
        "Sat, 31 Dec 2016 23:59:60 GMT",
        1_483_228_799,
        Some(Duration::from_secs(1)),
    ),
    (
        "Saturday, 31-Dec-16 23:59:60 GMT",
        1_483_228_799,
        Some(Duration::from_secs(1)),
    ),
    (
        "Sat Dec 31 23:59:60 2016",
        1_483_228_799,
        Some(Duration::from_secs(1)),
    ),
    ("Sat, 31 Dec 2016 23:59:61 GMT", 1_483_228_799, None),
    // The day name must be the date's.
    ("Mon, 06 Nov 1994 08:49:37 GMT", 784_111_777 - 90, None),
    // Case-sensitive, as the grammar is.
    ("Sun, 06 Nov 1994 08:49:37 gmt", 784_111_777 - 90, None),
    ("sunday, 06-Nov-94 08:49:37 GMT", 784_111_777 - 90, None),
];

#[test]
fn rfc_9110_retry_after_forms() {
    for &(value, now, expected) in RETRY_AFTER {
        assert_eq!(parse_at(value, at(now)), expected, "{value:?} at {now}");
    }
}

/// Section 10.2.3: a date is an instant, so a clock part of the way into
/// its second waits that much less, and never ends before the date.
#[test]
fn rfc_9110_a_date_is_measured_from_the_clocks_own_instant() {
    let date = "Sun, 06 Nov 1994 08:49:37 GMT";
    for nanos in [0, 1, 250_000_000, 999_999_999] {
        let now = at(784_111_777 - 10) + Duration::from_nanos(nanos);
        let wait = parse_at(date, now).unwrap();
        assert_eq!(now + wait, at(784_111_777), "{nanos} ns into the second");
    }
}
