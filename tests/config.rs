//! Policies read from configuration: the same duration strings and checks as
//! the attribute, errors as values, and the attribute running such a policy.

use std::sync::LazyLock;
use std::time::Duration;

use retry_runtime::{retry, Jitter, Nested, Policy, TimedOut};

#[test]
fn every_key_from_toml() {
    let policy: Policy<TimedOut> = toml::from_str(
        r#"
        max = 6
        base = "250ms"
        cap = "1m30s"
        multiplier = 3
        jitter = "decorrelated"
        deadline = "2m"
        timeout = "1.5s"
        nested = "retry"
        "#,
    )
    .unwrap();
    let expected = Policy::new()
        .with_max_attempts(6)
        .with_base(Duration::from_millis(250))
        .with_cap(Duration::from_secs(90))
        .with_multiplier(3.0)
        .with_jitter(Jitter::Decorrelated)
        .with_deadline(Duration::from_secs(120))
        .with_timeout(Duration::from_millis(1500))
        .with_nested(Nested::Retry);
    assert_eq!(policy, expected);
}

#[test]
fn missing_keys_take_the_attribute_defaults() {
    let policy: Policy = serde_json::from_str("{}").unwrap();
    assert_eq!(policy, Policy::new());
}

#[test]
fn mistakes_are_errors_that_name_the_problem() {
    let cases = [
        (r#"{ "max": 0 }"#, "`max` must be at least 1"),
        (r#"{ "max": -1 }"#, "invalid value"),
        (r#"{ "max": "3" }"#, "invalid type"),
        (
            r#"{ "base": "200" }"#,
            "`base`: invalid duration \"200\": a number has no unit",
        ),
        (r#"{ "base": 200 }"#, "invalid type"),
        (r#"{ "base": "0s" }"#, "`base` must be above zero"),
        (
            r#"{ "cap": "10sec" }"#,
            "`cap`: invalid duration \"10sec\": `sec` is not a unit",
        ),
        (
            r#"{ "base": "2s", "cap": "1s" }"#,
            "`cap` (1s) must be at least `base` (2s)",
        ),
        (
            r#"{ "multiplier": 0.5 }"#,
            "`multiplier` must be a finite number >= 1",
        ),
        (r#"{ "jitter": "ful" }"#, "`jitter`: unknown jitter `ful`"),
        (r#"{ "deadline": "0ms" }"#, "`deadline` must be above zero"),
        (r#"{ "timeout": "forever" }"#, "`timeout`: invalid duration"),
        (
            r#"{ "nested": "never" }"#,
            "`nested`: unknown value \"never\"",
        ),
        (r#"{ "maxx": 3 }"#, "unknown field `maxx`"),
        (r#"{ "base": "99999999999999999999h" }"#, "too large"),
        (
            "true",
            "invalid type: boolean `true`, expected struct Policy",
        ),
    ];
    for (json, expected) in cases {
        let error = serde_json::from_str::<Policy>(json)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(expected),
            "{json}: {error:?} should contain {expected:?}"
        );
    }
    let error = toml::from_str::<Policy>("base = \"1 s\"")
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("`base`: invalid duration \"1 s\""),
        "{error}"
    );
}

/// A value of the wrong kind names its key and says what to write, in JSON
/// as in TOML, as the docs promise of every mistake ("an error value naming
/// the key and the problem").
#[test]
fn a_value_of_the_wrong_kind_names_its_key() {
    let cases = [
        (r#"{ "base": 200 }"#, "`base` as a duration string"),
        (r#"{ "cap": 10 }"#, "`cap` as a duration string"),
        (r#"{ "deadline": 30 }"#, "`deadline` as a duration string"),
        (r#"{ "timeout": 2.5 }"#, "`timeout` as a duration string"),
        (r#"{ "max": "3" }"#, "`max` as a whole number of attempts"),
        (r#"{ "max": -1 }"#, "`max` as a whole number of attempts"),
        (
            r#"{ "max": 4294967296 }"#,
            "`max` as a whole number of attempts",
        ),
        (r#"{ "max": 2.5 }"#, "`max` as a whole number of attempts"),
        (r#"{ "multiplier": "2" }"#, "`multiplier` as a number"),
        (r#"{ "jitter": 1 }"#, "`jitter` as one of \"full\""),
        (r#"{ "nested": true }"#, "`nested` as \"once\" or \"retry\""),
    ];
    for (json, expected) in cases {
        let error = serde_json::from_str::<Policy>(json)
            .unwrap_err()
            .to_string();
        assert!(
            error.contains(expected),
            "{json}: {error:?} should contain {expected:?}"
        );
    }
    for (toml, expected) in [
        ("base = 200", "`base` as a duration string"),
        ("max = -1", "`max` as a whole number of attempts"),
        ("multiplier = \"2\"", "`multiplier` as a number"),
    ] {
        let error = toml::from_str::<Policy>(toml).unwrap_err().to_string();
        assert!(
            error.contains(expected),
            "{toml}: {error:?} should contain {expected:?}"
        );
    }
    // What reads still reads: whole multipliers, `null` for a default.
    let policy: Policy =
        serde_json::from_str(r#"{ "max": 4, "multiplier": 3, "deadline": null }"#).unwrap();
    assert_eq!(
        (
            policy.max_attempts(),
            policy.multiplier(),
            policy.deadline()
        ),
        (4, 3.0, None)
    );
    let policy: Policy = toml::from_str("multiplier = 2\nmax = 5").unwrap();
    assert_eq!((policy.max_attempts(), policy.multiplier()), (5, 2.0));
}

/// A `timeout` in the file is read by a `Policy<TimedOut>` only: a
/// `Policy`, which runs with any error type, refuses it with an error that
/// names the key and both ways out, in JSON as in TOML, and never drops it.
#[test]
fn a_policy_without_a_timeout_refuses_one_in_the_file() {
    let json = r#"{ "max": 4, "timeout": "1500ms" }"#;
    let error = serde_json::from_str::<Policy>(json)
        .unwrap_err()
        .to_string();
    for part in [
        "`timeout` (1.5s) is set",
        "remove `timeout`",
        "`Policy<TimedOut>`",
    ] {
        assert!(error.contains(part), "{error}");
    }
    let error = toml::from_str::<Policy>("timeout = \"2s\"")
        .unwrap_err()
        .to_string();
    assert!(error.contains("`timeout` (2s) is set"), "{error}");
    // The other keys are checked first, in the order the table lists them.
    let error = serde_json::from_str::<Policy>(r#"{ "base": "0s", "timeout": "1s" }"#)
        .unwrap_err()
        .to_string();
    assert!(error.contains("`base` must be above zero"), "{error}");
    // Without one, the same file reads as either form.
    let json = r#"{ "max": 4 }"#;
    let untimed: Policy = serde_json::from_str(json).unwrap();
    let timed: Policy<TimedOut> = serde_json::from_str(json).unwrap();
    assert_eq!((untimed.max_attempts(), timed.timeout()), (4, None));
    assert_eq!(timed.without_timeout(), untimed);
}

#[derive(Debug, PartialEq)]
enum Error {
    Busy,
    TimedOut,
}

impl From<TimedOut> for Error {
    fn from(_: TimedOut) -> Self {
        Error::TimedOut
    }
}

static SETTINGS: LazyLock<Policy<TimedOut>> = LazyLock::new(|| {
    toml::from_str(
        r#"
        max = 4
        base = "100ms"
        jitter = "none"
        timeout = "1s"
        "#,
    )
    .expect("valid retry settings")
});

#[retry(policy = &SETTINGS, on = |e| *e != Error::TimedOut)]
async fn configured(calls: &std::cell::Cell<u32>, hang: bool) -> Result<u32, Error> {
    calls.set(calls.get() + 1);
    if hang {
        tokio::time::sleep(Duration::from_secs(60)).await;
    }
    Err(Error::Busy)
}

#[tokio::test(start_paused = true)]
async fn the_attribute_runs_a_policy_from_configuration() {
    let calls = std::cell::Cell::new(0);
    let start = tokio::time::Instant::now();
    assert_eq!(configured(&calls, false).await, Err(Error::Busy));
    assert_eq!(calls.get(), 4);
    assert_eq!(start.elapsed(), Duration::from_millis(700));

    // The configured timeout cuts the attempt off; `on` rejects timeouts.
    let calls = std::cell::Cell::new(0);
    let start = tokio::time::Instant::now();
    assert_eq!(configured(&calls, true).await, Err(Error::TimedOut));
    assert_eq!(calls.get(), 1);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}

#[retry(policy = &SETTINGS)]
fn configured_blocking(calls: &std::cell::Cell<u32>) -> Result<u32, Error> {
    calls.set(calls.get() + 1);
    Err(Error::Busy)
}

#[test]
fn plain_functions_run_a_configured_policy() {
    let calls = std::cell::Cell::new(0);
    assert_eq!(configured_blocking(&calls), Err(Error::Busy));
    assert_eq!(calls.get(), 4);
}

/// A service logs the policy it runs with: what it writes reads back as the
/// same policy.
#[test]
fn a_policy_serializes_to_the_keys_it_reads() {
    let policy = Policy::new()
        .with_max_attempts(6)
        .with_base(Duration::from_millis(250))
        .with_cap(Duration::from_secs(90))
        .with_multiplier(1.5)
        .with_jitter(Jitter::Decorrelated)
        .with_deadline(Duration::from_secs(120))
        .with_timeout(Duration::from_nanos(1_500_000_001))
        .with_nested(Nested::Retry);
    let json = serde_json::to_string(&policy).unwrap();
    assert_eq!(
        json,
        r#"{"max":6,"base":"250ms","cap":"90s","multiplier":1.5,"jitter":"decorrelated","deadline":"2m","timeout":"1500000001ns","nested":"retry"}"#
    );
    assert_eq!(
        serde_json::from_str::<Policy<TimedOut>>(&json).unwrap(),
        policy
    );
    let toml = toml::to_string(&policy).unwrap();
    assert_eq!(toml::from_str::<Policy<TimedOut>>(&toml).unwrap(), policy);
    // The defaults: no deadline, no timeout.
    assert_eq!(
        serde_json::to_string(&Policy::new()).unwrap(),
        r#"{"max":3,"base":"100ms","cap":"10s","multiplier":2.0,"jitter":"full","nested":"once"}"#
    );
}
