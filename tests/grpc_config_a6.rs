//! Under a gRPC service config, the loop follows gRFC A6 as amended where
//! it differs from the attribute's own rules, on every entry point a
//! config drives (the attribute's `policy` key, the closure API, the tower
//! layer over a tonic channel to a real server, a hedged call): waits of
//! `ceiling * uniform(0.8, 1.2)`, a valid pushback waited out even past
//! `maxBackoff` and the backoff restarted after it, a do-not-retry
//! pushback counted by the throttle, and hedges that check the count
//! without taking a token. The configs A6 accepts load; those it refuses,
//! and a value of the wrong JSON type, are errors that name the field.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use bytes::Bytes;
use grpc_server::{serve, status};
use retry_runtime::classify::grpc::{self, PUSHBACK};
use retry_runtime::config::grpc::{MethodConfig, ServiceConfig};
use retry_runtime::tower::{HttpClassifier, RetryLayer};
use retry_runtime::{last_call, retry, Policy, RetryBudget, Stop};
use tokio::time::Instant;
use tonic::{Code, Status};
use tower::ServiceBuilder;

/// A6's example policy and throttling, a hedged method, and one with a
/// shrinking multiplier.
static CONFIG: LazyLock<ServiceConfig> = LazyLock::new(|| {
    serde_json::from_str(
        r#"{
        "methodConfig": [
            { "name": [{ "service": "test.Echo" }],
              "retryPolicy": { "maxAttempts": 4, "initialBackoff": ".1s", "maxBackoff": "1s",
                               "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] } },
            { "name": [{ "service": "test.Search" }],
              "hedgingPolicy": { "maxAttempts": 3, "hedgingDelay": "0.05s",
                                 "nonFatalStatusCodes": ["UNAVAILABLE"] } },
            { "name": [{ "service": "test.Shrink" }],
              "retryPolicy": { "maxAttempts": 5, "initialBackoff": "0.8s", "maxBackoff": "0.5s",
                               "backoffMultiplier": 0.5, "retryableStatusCodes": [14] } }
        ],
        "retryThrottling": { "maxTokens": 10, "tokenRatio": 0.1 }
    }"#,
    )
    .unwrap()
});

fn echo() -> &'static MethodConfig {
    CONFIG.method("test.Echo", "Say").unwrap()
}

fn search() -> &'static MethodConfig {
    CONFIG.method("test.Search", "Query").unwrap()
}

static POLICY: LazyLock<Policy> = LazyLock::new(|| echo().policy());

/// `ceiling` times 0.8 to 1.2, plus tokio's tick of 1 ms per wait.
fn a6_range(ceilings_ms: &[u64]) -> std::ops::RangeInclusive<Duration> {
    let sum: u64 = ceilings_ms.iter().sum();
    let ticks = ceilings_ms.len() as u64;
    Duration::from_millis(sum * 4 / 5)..=Duration::from_millis(sum * 6 / 5 + ticks)
}

fn unavailable(pushback: Option<&str>) -> Status {
    let mut status = Status::unavailable("busy");
    if let Some(pushback) = pushback {
        status
            .metadata_mut()
            .insert(PUSHBACK, pushback.parse().unwrap());
    }
    status
}

// ------------------------------------------------------ the attribute

static ATTRIBUTE_BUDGET: LazyLock<RetryBudget> = LazyLock::new(|| CONFIG.budget().unwrap());

/// The script of one call: what attempt n answers (then OK).
static SCRIPT: std::sync::Mutex<Vec<Status>> = std::sync::Mutex::new(Vec::new());

#[retry(
    policy = &POLICY,
    on = |status| echo().retryable().contains(status.code()),
    retry_after = grpc::pushback,
    budget = &*ATTRIBUTE_BUDGET,
)]
async fn say(calls: &AtomicU32) -> Result<(), Status> {
    let n = calls.fetch_add(1, Ordering::SeqCst) as usize;
    match SCRIPT.lock().unwrap().get(n) {
        Some(status) => Err(status.clone()),
        None => Ok(()),
    }
}

/// The attribute's `policy` key: a pushback of 3s, three times
/// `maxBackoff`, is waited out exactly, and the next wait starts the
/// backoff again from `initialBackoff` (0.1s, not 0.2s); a pushback that
/// says not to retry is not retried and takes its token.
#[tokio::test(start_paused = true)]
async fn the_attribute_waits_a_pushback_out_and_restarts_the_backoff() {
    *SCRIPT.lock().unwrap() = vec![
        unavailable(None),
        unavailable(Some("3000")),
        unavailable(None),
    ];
    let calls = AtomicU32::new(0);
    let started = Instant::now();
    say(&calls).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    // 0.1s (first step), then 3s exactly, then 0.1s again (restarted).
    let waited = started.elapsed() - Duration::from_secs(3);
    assert!(a6_range(&[100, 100]).contains(&waited), "{waited:?}");

    *SCRIPT.lock().unwrap() = vec![unavailable(Some("-1"))];
    let calls = AtomicU32::new(0);
    let before = ATTRIBUTE_BUDGET.tokens();
    say(&calls).await.unwrap_err();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!((before - ATTRIBUTE_BUDGET.tokens() - 1.0).abs() < 1e-9);
    // The server's "do not retry" is a give-up below (DESIGN §4.17).
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
}

// ------------------------------------------------------ the closure API

/// The closure API: the waits are A6's, from a `base` above `cap` and a
/// multiplier below 1 too (0.8s capped to 0.5s, then 0.4s, 0.2s, 0.1s).
#[tokio::test(start_paused = true)]
async fn the_closure_api_draws_a6_waits_from_any_multiplier() {
    let shrink = CONFIG.method("test.Shrink", "Any").unwrap();
    for _ in 0..50 {
        let waits = std::cell::RefCell::new(Vec::new());
        let _: Result<(), Status> = shrink
            .policy()
            .on(|status: &Status| shrink.retryable().is_retryable(status))
            .on_retry(|_, _, wait| waits.borrow_mut().push(wait))
            .run(|| async { Err(Status::unavailable("down")) })
            .await;
        let waits = waits.into_inner();
        assert_eq!(waits.len(), 4);
        for (wait, ceiling) in waits.into_iter().zip([500, 400, 200, 100]) {
            assert!(
                a6_range(&[ceiling]).contains(&wait),
                "{wait:?} for {ceiling}"
            );
        }
    }
}

/// Outside a config, the same hint longer than `cap` is not waited out,
/// and a hint is waited with its spread (DESIGN §4.3).
#[tokio::test(start_paused = true)]
async fn outside_a_config_a_hint_longer_than_cap_is_not_waited_out() {
    let own = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(100))
        .with_cap(Duration::from_secs(1));
    let mut calls = 0;
    let answer: Result<(), Status> = own
        .on(|status: &Status| status.code() == Code::Unavailable)
        .retry_after(grpc::pushback)
        .run(|| {
            calls += 1;
            async { Err(unavailable(Some("3000"))) }
        })
        .await;
    assert!(answer.is_err());
    assert_eq!(calls, 1);
    assert_eq!(last_call().unwrap().reason(), Stop::HintTooLong);
}

// ---------------------------------------------- the tower layer over tonic

/// The layer as a service would build it from the config, with a throttle
/// of its own.
fn layer(budget: &Arc<RetryBudget>) -> RetryLayer {
    RetryLayer::new(&*POLICY)
        .with_classifier(HttpClassifier::default().with_grpc_codes(echo().retryable()))
        .with_budget(Arc::clone(budget))
}

async fn say_through<T>(channel: T) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    grpc_server::say(channel, tonic::Request::new(Bytes::from_static(b"hi"))).await
}

/// The tower layer over a tonic channel to a real server: A6's waits (0.1,
/// 0.2 and 0.4 s, each 0.8 to 1.2 times), a pushback of 3s waited out and
/// the backoff restarted, a do-not-retry pushback counted by the throttle.
#[tokio::test(start_paused = true)]
async fn the_tower_layer_over_tonic_follows_a6() {
    let (channel, calls) = serve([
        status(Code::Unavailable, None),
        status(Code::Unavailable, None),
        status(Code::Unavailable, None),
    ])
    .await;
    let budget = Arc::new(CONFIG.budget().unwrap());
    let started = Instant::now();
    let reply = say_through(ServiceBuilder::new().layer(layer(&budget)).service(channel)).await;
    assert_eq!(reply.unwrap(), "hi");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let waited = started.elapsed();
    assert!(a6_range(&[100, 200, 400]).contains(&waited), "{waited:?}");

    let (channel, calls) = serve([
        status(Code::Unavailable, None),
        status(Code::Unavailable, Some("3000")),
        status(Code::Unavailable, None),
    ])
    .await;
    let budget = Arc::new(CONFIG.budget().unwrap());
    let started = Instant::now();
    let reply = say_through(ServiceBuilder::new().layer(layer(&budget)).service(channel)).await;
    assert_eq!(reply.unwrap(), "hi");
    assert_eq!(calls.load(Ordering::SeqCst), 4);
    let waited = started.elapsed().saturating_sub(Duration::from_secs(3));
    assert!(a6_range(&[100, 100]).contains(&waited), "{waited:?}");

    let (channel, calls) = serve([status(Code::Unavailable, Some("-1"))]).await;
    let budget = Arc::new(CONFIG.budget().unwrap());
    let error = say_through(ServiceBuilder::new().layer(layer(&budget)).service(channel))
        .await
        .unwrap_err();
    assert_eq!(error.code(), Code::Unavailable);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert!((budget.tokens() - 9.0).abs() < 1e-9, "{budget:?}");
}

// ----------------------------------------------------------- a hedged call

/// A hedged call of the config's `hedgingPolicy` with its throttle: the
/// first copy hangs, the second (sent after 50 ms) answers. How many copies
/// started, and the tokens left.
async fn hedged(policy: &Policy, budget: &RetryBudget) -> u32 {
    let started = AtomicU32::new(0);
    let answer: Result<u32, Status> = policy
        .on(|status: &Status| search().retryable().is_retryable(status))
        .budget(budget)
        .hedge(search().hedging_policy().unwrap().hedge())
        .run(|| async {
            let copy = started.fetch_add(1, Ordering::SeqCst) + 1;
            let took = if copy == 1 { 10_000 } else { 10 };
            tokio::time::sleep(Duration::from_millis(took)).await;
            Ok(copy)
        })
        .await;
    answer.unwrap();
    started.load(Ordering::SeqCst)
}

/// gRFC A6: "subsequent hedged RPCs will only be sent if token_count is
/// greater than the threshold", and only failed RPCs take from it. With 6
/// tokens of 10 the hedge is sent and takes none; the library's own rule
/// (DESIGN §4.15: a hedge is a retry, and takes a token) refuses it there,
/// since 6 - 1 is not above 5. At the threshold, neither sends one.
#[tokio::test(start_paused = true)]
async fn a_hedge_checks_the_throttle_without_taking_a_token() {
    let a6 = search().policy();
    let own = Policy::new().with_max_attempts(3);
    let budget = |tokens: u32| {
        let budget = CONFIG.budget().unwrap();
        for _ in tokens..10 {
            budget.record_failure();
        }
        budget
    };
    // Rows: the tokens before the call, the copies started and the tokens
    // after (the success gives back 0.1), under A6 and under the library.
    for (tokens, a6_copies, a6_after, own_copies, own_after) in [
        (10, 2, 10.0, 2, 9.1),
        (6, 2, 6.1, 1, 6.1),
        (5, 1, 5.1, 1, 5.1),
    ] {
        let throttle = budget(tokens);
        assert_eq!(hedged(&a6, &throttle).await, a6_copies, "{tokens}");
        assert!(
            (throttle.tokens() - a6_after).abs() < 1e-9,
            "{tokens}: {throttle:?}"
        );
        let throttle = budget(tokens);
        assert_eq!(hedged(&own, &throttle).await, own_copies, "{tokens}");
        assert!(
            (throttle.tokens() - own_after).abs() < 1e-9,
            "{tokens}: {throttle:?}"
        );
    }
}

/// gRFC A6: "If the pushback says to retry after a given delay, the next
/// hedged request (if any) will be issued after the given delay has
/// elapsed", whatever `cap`; one that says not to retry sends no more.
#[tokio::test(start_paused = true)]
async fn a_hedged_call_waits_a_pushback_out() {
    for (pushback, copies) in [("20000", 2), ("-1", 1)] {
        let started_at = Instant::now();
        let started = AtomicU32::new(0);
        let answer: Result<Duration, Status> = search()
            .policy()
            .on(|status: &Status| search().retryable().contains(status.code()))
            .retry_after(grpc::pushback)
            .hedge(retry_runtime::hedge::Hedge::after(Duration::from_secs(
                3600,
            )))
            .run(|| async {
                if started.fetch_add(1, Ordering::SeqCst) == 0 {
                    Err(unavailable(Some(pushback)))
                } else {
                    Ok(started_at.elapsed())
                }
            })
            .await;
        assert_eq!(started.load(Ordering::SeqCst), copies, "{pushback}");
        if copies == 2 {
            assert_eq!(answer.unwrap(), Duration::from_secs(20), "{pushback}");
        } else {
            assert_eq!(answer.unwrap_err().code(), Code::Unavailable);
        }
    }
}

// ------------------------------------------------------------- loading

fn load(text: &str) -> Result<ServiceConfig, String> {
    serde_json::from_str::<ServiceConfig>(text).map_err(|error| error.to_string())
}

fn with_retry(fields: &str) -> String {
    format!(r#"{{ "methodConfig": [{{ "name": [{{}}], "retryPolicy": {{ {fields} }} }}] }}"#)
}

const VALID: &str = r#""maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14]"#;

/// Values gRFC A6 accepts, some of which were refused before: a multiplier
/// above zero but below 1, or infinite; a `maxTokens` above 1000 (A6:
/// "greater than zero"); `initialBackoff` above `maxBackoff`; durations
/// without whole seconds, as A6's examples write them. The policy they
/// give passes `Policy::validate`.
#[test]
fn configs_a6_accepts_load() {
    for fields in [
        VALID.replace(r#""backoffMultiplier": 2"#, r#""backoffMultiplier": 0.5"#),
        VALID.replace(r#""backoffMultiplier": 2"#, r#""backoffMultiplier": 0.001"#),
        VALID.replace(
            r#""backoffMultiplier": 2"#,
            r#""backoffMultiplier": "Infinity""#,
        ),
        VALID.replace(r#""initialBackoff": "0.1s""#, r#""initialBackoff": "5s""#),
        VALID.replace(r#""initialBackoff": "0.1s""#, r#""initialBackoff": ".1s""#),
        VALID.replace(r#""maxAttempts": 3"#, r#""maxAttempts": 1000"#),
    ] {
        let config = load(&with_retry(&fields)).unwrap_or_else(|error| panic!("{fields}: {error}"));
        let policy = config.methods()[0].policy();
        assert_eq!(policy.validate(), Ok(()), "{fields}");
        // Never a panic, and never a wait past 1.2 x `maxBackoff`.
        for n in [0, 1, 4, 100, u32::MAX] {
            assert!(policy.wait_with(n, policy.base(), u64::MAX) <= Duration::from_millis(1200));
        }
    }
    let throttled = load(r#"{ "retryThrottling": { "maxTokens": 5000, "tokenRatio": 0.5 } }"#);
    assert_eq!(throttled.unwrap().budget().unwrap().max_tokens(), 5000.0);
}

/// Values gRFC A6 refuses: each an error naming the field and the rule.
/// `maxAttempts` below 2 was refused already; the rows marked new loaded
/// before (see docs/integrations.md, "gRPC service configs").
#[test]
fn configs_a6_refuses_name_the_field_and_the_rule() {
    let retry = |from: &str, to: &str| with_retry(&VALID.replace(from, to));
    let rows = [
        (
            retry(r#""maxAttempts": 3"#, r#""maxAttempts": 1"#),
            "`retryPolicy.maxAttempts`: must be 2 or more",
        ),
        (
            retry(r#""initialBackoff": "0.1s""#, r#""initialBackoff": "0s""#),
            "`retryPolicy.initialBackoff`: must be above zero",
        ),
        (
            retry(r#""maxBackoff": "1s""#, r#""maxBackoff": "-1s""#),
            "`retryPolicy.maxBackoff`: \"-1s\" is negative",
        ),
        (
            retry(r#""backoffMultiplier": 2"#, r#""backoffMultiplier": 0"#),
            "`retryPolicy.backoffMultiplier`: 0: must be greater than zero",
        ),
        (
            retry(r#""backoffMultiplier": 2"#, r#""backoffMultiplier": "NaN""#),
            "`retryPolicy.backoffMultiplier`: NaN: must be greater than zero",
        ),
        (
            retry(r#""retryableStatusCodes": [14]"#, r#""retryableStatusCodes": []"#),
            "`retryPolicy.retryableStatusCodes`: must name at least one status code",
        ),
        (
            retry(r#", "retryableStatusCodes": [14]"#, ""),
            "`retryPolicy`: `retryableStatusCodes` is required",
        ),
        // New: A6 requires `nonFatalStatusCodes`, not empty.
        (
            r#"{ "methodConfig": [{ "name": [{}], "hedgingPolicy": { "maxAttempts": 2 } }] }"#
                .to_owned(),
            "`hedgingPolicy`: `nonFatalStatusCodes` is required",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{}], "hedgingPolicy": { "maxAttempts": 2, "nonFatalStatusCodes": [] } }] }"#
                .to_owned(),
            "`hedgingPolicy.nonFatalStatusCodes`: must name at least one status code",
        ),
        // New: a negative `hedgingDelay`.
        (
            r#"{ "methodConfig": [{ "name": [{}], "hedgingPolicy": { "maxAttempts": 2, "hedgingDelay": "-0.5s", "nonFatalStatusCodes": [14] } }] }"#
                .to_owned(),
            "`hedgingPolicy.hedgingDelay`: \"-0.5s\" is negative",
        ),
        (
            r#"{ "retryThrottling": { "maxTokens": 0, "tokenRatio": 0.1 } }"#.to_owned(),
            "`retryThrottling.maxTokens`: must be greater than zero",
        ),
        (
            r#"{ "retryThrottling": { "tokenRatio": 0.1 } }"#.to_owned(),
            "`retryThrottling`: `maxTokens` is required",
        ),
        (
            r#"{ "retryThrottling": { "maxTokens": 10, "tokenRatio": -0.1 } }"#.to_owned(),
            "`retryThrottling.tokenRatio`: -0.1: must be at least 0.001",
        ),
    ];
    for (text, message) in rows {
        let error = load(&text).unwrap_err();
        assert!(error.contains(message), "{text}\n  {error}");
    }
}

/// A value of the wrong JSON type names its field, as every other mistake
/// does: serde alone said "invalid type: integer `5`, expected a string at
/// line 1 column 91".
#[test]
fn a_wrong_json_type_names_its_field() {
    let retry = |from: &str, to: &str| with_retry(&VALID.replace(from, to));
    let rows = [
        (
            retry(r#""initialBackoff": "0.1s""#, r#""initialBackoff": 5"#),
            "expected `retryPolicy.initialBackoff` as a protobuf duration",
        ),
        (
            retry(r#""maxBackoff": "1s""#, r#""maxBackoff": true"#),
            "expected `retryPolicy.maxBackoff`",
        ),
        (
            retry(r#""retryableStatusCodes": [14]"#, r#""retryableStatusCodes": "UNAVAILABLE""#),
            "expected `retryPolicy.retryableStatusCodes` as a list",
        ),
        (
            retry(r#""retryableStatusCodes": [14]"#, r#""retryableStatusCodes": [null]"#),
            "expected `retryPolicy.retryableStatusCodes` as a gRPC status code",
        ),
        (
            retry(r#""maxAttempts": 3"#, r#""maxAttempts": [3]"#),
            "expected `retryPolicy.maxAttempts`",
        ),
        (
            retry(r#""backoffMultiplier": 2"#, r#""backoffMultiplier": {}"#),
            "expected `retryPolicy.backoffMultiplier`",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{}], "timeout": 5 }] }"#.to_owned(),
            "expected `methodConfig.timeout`",
        ),
        (
            r#"{ "methodConfig": [{ "name": { "service": "a" } }] }"#.to_owned(),
            "expected `methodConfig.name` as a list",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{ "service": 7 }] }] }"#.to_owned(),
            "expected `methodConfig.name.service`",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{ "method": [] }] }] }"#.to_owned(),
            "expected `methodConfig.name.method`",
        ),
        (
            r#"{ "methodConfig": [{ "name": ["a.B"] }] }"#.to_owned(),
            "expected a `methodConfig.name` object",
        ),
        (
            r#"{ "methodConfig": { "name": [] } }"#.to_owned(),
            "expected `methodConfig` as a list",
        ),
        (
            r#"{ "methodConfig": [3] }"#.to_owned(),
            "expected a `methodConfig` object",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{}], "retryPolicy": "fast" }] }"#.to_owned(),
            "expected `retryPolicy` as an object",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{}], "hedgingPolicy": { "maxAttempts": 2, "hedgingDelay": 0.5, "nonFatalStatusCodes": [14] } }] }"#
                .to_owned(),
            "expected `hedgingPolicy.hedgingDelay`",
        ),
        (
            r#"{ "methodConfig": [{ "name": [{}], "hedgingPolicy": { "maxAttempts": 2, "nonFatalStatusCodes": 14 } }] }"#
                .to_owned(),
            "expected `hedgingPolicy.nonFatalStatusCodes` as a list",
        ),
        (
            r#"{ "retryThrottling": [10, 0.1] }"#.to_owned(),
            "expected `retryThrottling` as an object",
        ),
        (
            r#"{ "retryThrottling": { "maxTokens": 10, "tokenRatio": {} } }"#.to_owned(),
            "expected `retryThrottling.tokenRatio`",
        ),
    ];
    for (text, message) in rows {
        let error = load(&text).unwrap_err();
        assert!(error.contains(message), "{text}\n  {error}");
    }
}

/// A policy read from a service config follows A6, which the policy's own
/// keys cannot say: it is not written back as another policy.
#[test]
fn a_config_policy_is_not_written_as_the_attributes_keys() {
    let error = serde_json::to_string(&echo().policy()).unwrap_err();
    assert!(error.to_string().contains("gRPC service config"), "{error}");
    // Another jitter set on it leaves A6: then it writes.
    let own = echo().policy().with_jitter(retry_runtime::Jitter::Full);
    assert!(serde_json::to_string(&own).is_ok());
}
