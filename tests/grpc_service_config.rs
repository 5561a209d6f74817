//! A gRPC service config file (tests/grpc_service_config.json, as gRPC
//! clients in other languages read it) loads into policies, status codes
//! and a retry budget unchanged, and drives the retry loop: the closure API
//! and the attribute make the attempts gRFC A6 says, with its waits.

use std::sync::LazyLock;
use std::time::Duration;

use retry_runtime::classify::grpc::RetryableCodes;
use retry_runtime::config::grpc::{MethodConfig, ServiceConfig};
use retry_runtime::{retry, Jitter, Policy, RetryBudget};
use tonic::{Code, Status};

static CONFIG: LazyLock<ServiceConfig> = LazyLock::new(|| {
    serde_json::from_str(include_str!("grpc_service_config.json")).expect("a valid service config")
});

fn say_hello() -> &'static MethodConfig {
    CONFIG.method("helloworld.Greeter", "SayHello").unwrap()
}

#[test]
fn the_file_loads_as_grpc_reads_it() {
    let hello = say_hello();
    let policy = hello.policy();
    assert_eq!(policy.max_attempts(), 4);
    assert_eq!(policy.base(), Duration::from_millis(100));
    assert_eq!(policy.cap(), Duration::from_secs(1));
    assert_eq!(policy.multiplier(), 2.0);
    assert_eq!(policy.deadline(), Some(Duration::from_secs(10)));
    // gRFC A6's waits, none of the attribute's four jitters: the first
    // retry's between 0.8 and 1.2 times `initialBackoff`.
    assert!(!Jitter::ALL.contains(&policy.jitter()));
    assert_eq!(
        policy.wait_with(0, policy.base(), 0),
        Duration::from_millis(80)
    );
    assert_eq!(
        policy.wait_with(0, policy.base(), u64::MAX),
        Duration::from_millis(120)
    );
    assert_eq!(
        hello.retryable(),
        [Code::Unavailable, Code::ResourceExhausted]
            .into_iter()
            .collect::<RetryableCodes>()
    );

    // The service-wide config answers for the service's other methods; its
    // `maxAttempts` of 9 is taken as 5, as every gRPC client takes it.
    let other = CONFIG.for_path("/helloworld.Greeter/SayGoodbye").unwrap();
    assert_eq!(other.policy().max_attempts(), 5);
    assert_eq!(other.policy().multiplier(), 1.5);
    assert_eq!(other.policy().base(), Duration::from_millis(25));
    assert_eq!(other.retryable(), RetryableCodes::UNAVAILABLE);

    // Hedging is read as written.
    let query = CONFIG.method("search.Index", "Query").unwrap();
    let hedging = query.hedging_policy().unwrap();
    assert_eq!(hedging.max_attempts(), 3);
    assert_eq!(hedging.delay(), Duration::from_millis(50));
    assert!(hedging.non_fatal().contains(Code::Internal));
    assert_eq!(query.retry_policy(), None);
    assert_eq!(query.policy().max_attempts(), 3);
    assert_eq!(query.retryable(), hedging.non_fatal());

    // Anything else falls to the default config: one attempt, its timeout
    // as the deadline.
    let default = CONFIG.method("billing.Ledger", "Post").unwrap();
    assert_eq!(default.policy().max_attempts(), 1);
    assert_eq!(default.policy().deadline(), Some(Duration::from_secs(30)));
    assert_eq!(default.retryable(), RetryableCodes::NONE);

    let throttling = CONFIG.budget().unwrap();
    assert_eq!(
        (throttling.max_tokens(), throttling.token_ratio()),
        (10.0, 0.1)
    );
    assert_eq!(CONFIG.budget().unwrap().max_tokens(), 10.0);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_runs_the_configured_policy() {
    let policy: Policy = say_hello().policy();
    let retryable = say_hello().retryable();
    let budget = CONFIG.budget().unwrap();

    // UNAVAILABLE twice, then OK: 3 calls.
    let mut calls = 0;
    let waits = std::cell::RefCell::new(Vec::new());
    let answer: Result<&str, Status> = policy
        .on(|status: &Status| retryable.is_retryable(status))
        .on_retry(|_, _, wait| waits.borrow_mut().push(wait))
        .budget(&budget)
        .run(|| {
            calls += 1;
            let outcome = if calls < 3 {
                Err(Status::unavailable("restarting"))
            } else {
                Ok("hello")
            };
            async move { outcome }
        })
        .await;
    assert_eq!(answer.unwrap(), "hello");
    assert_eq!(calls, 3);
    // gRFC A6 as amended: 0.8 to 1.2 times `initialBackoff`, then twice it.
    let waits = waits.take();
    assert_eq!(waits.len(), 2);
    let within = |wait: Duration, ceiling: u64| {
        (ceiling * 4 / 5..=ceiling * 6 / 5).contains(&u64::try_from(wait.as_millis()).unwrap())
    };
    assert!(within(waits[0], 100) && within(waits[1], 200), "{waits:?}");

    // A code outside `retryableStatusCodes` is returned at once.
    let mut calls = 0;
    let answer: Result<(), Status> = policy
        .on(|status: &Status| retryable.is_retryable(status))
        .run(|| {
            calls += 1;
            async { Err(Status::invalid_argument("no such user")) }
        })
        .await;
    assert_eq!(answer.unwrap_err().code(), Code::InvalidArgument);
    assert_eq!(calls, 1);

    // Always UNAVAILABLE: `maxAttempts` calls.
    let mut calls = 0;
    let answer: Result<(), Status> = policy
        .on(|status: &Status| retryable.is_retryable(status))
        .run(|| {
            calls += 1;
            async { Err(Status::unavailable("down")) }
        })
        .await;
    assert_eq!(answer.unwrap_err().code(), Code::Unavailable);
    assert_eq!(calls, 4);
}

#[tokio::test(start_paused = true)]
async fn retry_throttling_stops_retries_as_grpc_does() {
    // maxTokens 10: each failure takes one, and retries stop once the count
    // is not above 5. Six failing calls in a row: 10 -> 4 tokens.
    let budget: RetryBudget = CONFIG.budget().unwrap();
    let policy = say_hello().policy();
    let mut calls = 0;
    let answer: Result<(), Status> = policy
        .retrying()
        .budget(&budget)
        .run(|| {
            calls += 1;
            async { Err(Status::unavailable("down")) }
        })
        .await;
    assert!(answer.is_err());
    // Attempts 1 to 4 each take a token (10 -> 6); every retry was allowed.
    assert_eq!(calls, 4);
    let mut calls = 0;
    let _: Result<(), Status> = policy
        .retrying()
        .budget(&budget)
        .run(|| {
            calls += 1;
            async { Err(Status::unavailable("down")) }
        })
        .await;
    // 6 -> 5 after the first failure: not above 5, so no retry.
    assert_eq!(calls, 1);
}

static POLICY: LazyLock<Policy> = LazyLock::new(|| say_hello().policy());

#[retry(policy = &POLICY, on = |status| say_hello().retryable().is_retryable(status))]
async fn greet(calls: &mut u32) -> Result<String, Status> {
    *calls += 1;
    if *calls < 3 {
        Err(Status::resource_exhausted("busy"))
    } else {
        Ok("hello".to_owned())
    }
}

#[tokio::test(start_paused = true)]
async fn the_attribute_runs_the_configured_policy() {
    let mut calls = 0;
    assert_eq!(greet(&mut calls).await.unwrap(), "hello");
    assert_eq!(calls, 3);
}

#[test]
fn mistakes_are_errors_that_name_the_field() {
    let load = |text: &str| {
        serde_json::from_str::<ServiceConfig>(text)
            .unwrap_err()
            .to_string()
    };
    let retry = |policy: &str| {
        load(&format!(
            r#"{{ "methodConfig": [{{ "name": [{{}}], "retryPolicy": {policy} }}] }}"#
        ))
    };
    let valid =
        r#""maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2"#;
    assert!(retry(&format!(
        r#"{{ {valid}, "retryableStatusCodes": ["UNAVAILABLE", "SOMETIMES"] }}"#
    ))
    .contains("unknown status code \"SOMETIMES\""));
    assert!(
        retry(&format!(r#"{{ {valid}, "retryableStatusCodes": [] }}"#))
            .contains("`retryPolicy.retryableStatusCodes`: must name at least one")
    );
    assert!(retry(r#"{ "maxAttempts": 1, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14] }"#)
        .contains("`retryPolicy.maxAttempts`: must be 2 or more"));
    assert!(retry(r#"{ "maxAttempts": 3, "initialBackoff": "100ms", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14] }"#)
        .contains("`retryPolicy.initialBackoff`: \"100ms\" is not a protobuf duration"));
    assert!(retry(r#"{ "maxAttempts": 3, "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14] }"#)
        .contains("`initialBackoff` is required"));
    assert!(
        load(r#"{ "retryThrottling": { "maxTokens": 0, "tokenRatio": 0.1 } }"#)
            .contains("`retryThrottling.maxTokens`")
    );
}

#[tokio::test(start_paused = true)]
async fn the_hedging_policy_hedges_after_its_delay() {
    use std::sync::atomic::{AtomicU32, Ordering};
    let query = CONFIG.method("search.Index", "Query").unwrap();
    let hedging = query.hedging_policy().unwrap();
    let started = AtomicU32::new(0);
    let answer: Result<u32, Status> = query
        .policy()
        .on(|status: &Status| query.retryable().is_retryable(status))
        .hedge(hedging.hedge())
        .run(|| async {
            let copy = started.fetch_add(1, Ordering::Relaxed) + 1;
            // The first copy hangs; the second, sent after `hedgingDelay`
            // (50ms), answers.
            let took = if copy == 1 { 10_000 } else { 10 };
            tokio::time::sleep(Duration::from_millis(took)).await;
            Ok(copy)
        })
        .await;
    assert_eq!(answer.unwrap(), 2);
    assert_eq!(started.load(Ordering::Relaxed), 2);
}

/// Names gRPC clients reject are errors here too: a `method` without its
/// `service` (read as the default config, it would retry every method of
/// every service), and a name in two method configs (clients would
/// disagree on which applies). Neither panics.
/// protobuf's JSON mapping holds a `Duration` of at most 315,576,000,000
/// seconds (about 10,000 years) and rejects more, as gRPC clients that load
/// the file through protobuf do; such durations loaded here.
#[test]
fn durations_past_protobufs_range_are_errors() {
    let timeout = |timeout: &str| {
        serde_json::from_str::<ServiceConfig>(&format!(
            r#"{{ "methodConfig": [{{ "name": [{{}}], "timeout": "{timeout}" }}] }}"#
        ))
        .map(|config| config.methods()[0].timeout())
        .map_err(|error| error.to_string())
    };
    assert_eq!(
        timeout("315576000000.999999999s"),
        Ok(Some(Duration::new(315_576_000_000, 999_999_999)))
    );
    for beyond in [
        "315576000001s",
        "18446744073709551615s",
        "99999999999999999999999s",
    ] {
        let error = timeout(beyond).unwrap_err();
        assert!(
            error.contains("`methodConfig.timeout`")
                && error.contains("more than a protobuf duration holds"),
            "{beyond}: {error}"
        );
    }
    let error = serde_json::from_str::<ServiceConfig>(
        r#"{ "methodConfig": [{ "name": [{}], "retryPolicy": { "maxAttempts": 3, "initialBackoff": "0.1s",
            "maxBackoff": "400000000000s", "backoffMultiplier": 2, "retryableStatusCodes": [14] } }] }"#,
    )
    .unwrap_err()
    .to_string();
    assert!(error.contains("`retryPolicy.maxBackoff`"), "{error}");
}

#[test]
fn names_grpc_rejects_are_errors() {
    let load = |text: &str| serde_json::from_str::<ServiceConfig>(text).map_err(|e| e.to_string());
    let retry = r#""retryPolicy": { "maxAttempts": 3, "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2, "retryableStatusCodes": [14] }"#;

    let error = load(&format!(
        r#"{{ "methodConfig": [{{ "name": [{{ "method": "Charge" }}], {retry} }}] }}"#
    ))
    .unwrap_err();
    assert!(error.contains("`methodConfig.name`"), "{error}");
    assert!(error.contains("\"Charge\""), "{error}");

    for twice in [
        r#"[{ "name": [{ "service": "a.B", "method": "C" }] }, { "name": [{ "service": "a.B", "method": "C" }] }]"#,
        r#"[{ "name": [{ "service": "a.B" }, { "service": "a.B" }] }]"#,
        r#"[{ "name": [{}] }, { "name": [{ "service": "" }] }]"#,
    ] {
        let error = load(&format!(r#"{{ "methodConfig": {twice} }}"#)).unwrap_err();
        assert!(error.contains("more than one method config"), "{error}");
    }

    // The same service with and without a method, and the default beside
    // them, are three names.
    let config = load(&format!(
        r#"{{ "methodConfig": [{{ "name": [{{ "service": "a.B", "method": "C" }}], {retry} }},
        {{ "name": [{{ "service": "a.B" }}, {{}}] }}] }}"#
    ))
    .unwrap();
    assert_eq!(
        config.method("a.B", "C").unwrap().policy().max_attempts(),
        3
    );
    assert_eq!(
        config.method("x.Y", "Z").unwrap().policy().max_attempts(),
        1
    );
}

/// gRPC caps every ceiling at `maxBackoff`, the first one included, so an
/// `initialBackoff` above it waits as `maxBackoff` does. It loads as
/// written (a multiplier below 1 brings the later ceilings down from it),
/// into a policy `Policy::validate` accepts under gRFC A6's rules.
#[test]
fn an_initial_backoff_above_the_max_waits_as_the_max() {
    let config: ServiceConfig = serde_json::from_str(
        r#"{ "methodConfig": [{ "name": [{ "service": "s" }], "retryPolicy": {
            "maxAttempts": 3, "initialBackoff": "5s", "maxBackoff": "1s",
            "backoffMultiplier": 2, "retryableStatusCodes": ["UNAVAILABLE"] } }] }"#,
    )
    .unwrap();
    let policy = config.method("s", "m").unwrap().retry_policy().unwrap();
    assert_eq!(policy.validate(), Ok(()));
    assert_eq!(
        (policy.base(), policy.cap()),
        (Duration::from_secs(5), Duration::from_secs(1))
    );
    assert_eq!(policy.ceiling(0), Duration::from_secs(1));
    assert_eq!(policy.ceiling(1), Duration::from_secs(1));
}
