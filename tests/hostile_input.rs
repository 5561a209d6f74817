//! Hostile input against the parts added with per-host breakers, gRPC call
//! deadlines, service config checks and replayed bodies: any `grpc-timeout`
//! bytes through the retry layer, mutated service configs, a registry under
//! many threads with keys of any length, breakers with odd names under
//! metrics and tracing, and replayed bodies at and around their bound, or
//! that fail or never end. None may panic, hang, retry past a deadline or
//! lose the last answer. Paused clocks, no wall-clock asserts.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt, StreamBody};
use proptest::prelude::*;
use retry_runtime::config::grpc::ServiceConfig;
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::tower::{HttpClassifier, RetryLayer};
use retry_runtime::{CircuitBreaker, Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

fn paused_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------
// grpc-timeout through the retry layer
// ---------------------------------------------------------------------

/// gRPC's grammar for `grpc-timeout`, read independently: 1 to 8 digits
/// and a unit.
fn grpc_timeout(bytes: &[u8]) -> Option<Duration> {
    let (&unit, digits) = bytes.split_last()?;
    if digits.is_empty() || digits.len() > 8 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let number: u64 = std::str::from_utf8(digits).ok()?.parse().ok()?;
    Some(match unit {
        b'H' => Duration::from_secs(number * 3600),
        b'M' => Duration::from_secs(number * 60),
        b'S' => Duration::from_secs(number),
        b'm' => Duration::from_millis(number),
        b'u' => Duration::from_micros(number),
        b'n' => Duration::from_nanos(number),
        _ => return None,
    })
}

static LAYER_POLICY: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_millis(40))
    .with_cap(Duration::from_millis(40))
    .with_jitter(Jitter::None);

/// What the mock server saw: each attempt's `grpc-timeout`, raw, and when
/// it came (paused clock).
type Seen = Arc<Mutex<Vec<(Option<Vec<u8>>, Duration)>>>;

/// Answers 503 `failures` times, then 200; each response carries its call
/// number, so the test can tell which answer the caller got.
fn flaky_server(
    failures: u32,
    seen: Seen,
) -> impl Service<
    Request<String>,
    Response = Response<String>,
    Error = Infallible,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    let started = tokio::time::Instant::now();
    tower::service_fn(move |request: Request<String>| {
        let seen = Arc::clone(&seen);
        async move {
            let header = request
                .headers()
                .get("grpc-timeout")
                .map(|value| value.as_bytes().to_vec());
            let call = {
                let mut seen = seen.lock().unwrap();
                seen.push((header, started.elapsed()));
                u32::try_from(seen.len()).unwrap()
            };
            let status = if call <= failures {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            };
            Ok(Response::builder()
                .status(status)
                .header("x-call", call)
                .body(format!("call {call}"))
                .unwrap())
        }
    })
}

/// Header bytes: grammar-shaped values (with digit counts past 8), values
/// near the grammar, and anything a header value can hold.
fn header_bytes() -> impl Strategy<Value = Vec<u8>> {
    let unit = prop::sample::select(vec![b'H', b'M', b'S', b'm', b'u', b'n', b's', b'h', b'x']);
    prop_oneof![
        (prop::collection::vec(b'0'..=b'9', 0..12), unit).prop_map(|(mut digits, unit)| {
            digits.push(unit);
            digits
        }),
        prop::sample::select(vec![
            b"0n".to_vec(),
            b"0S".to_vec(),
            b"00000000H".to_vec(),
            b"99999999H".to_vec(),
            b"99999999M".to_vec(),
            b"99999999S".to_vec(),
            b"100000000S".to_vec(),
            b"1".to_vec(),
            b"H".to_vec(),
            b"-1S".to_vec(),
            b"1.5S".to_vec(),
            b" 1S".to_vec(),
            "1\u{fffd}S".as_bytes().to_vec(),
        ]),
        prop::collection::vec(any::<u8>(), 0..16),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, failure_persistence: None, ..ProptestConfig::default() })]

    /// Any `grpc-timeout` through the retry layer: no panic, the caller
    /// gets the last attempt's response, no retry starts past the
    /// timeout, and each retry's header tells no more time than is left.
    #[test]
    fn any_grpc_timeout_through_the_retry_layer(bytes in header_bytes(), failures in 0_u32..5) {
        let Ok(value) = http::HeaderValue::from_bytes(&bytes) else {
            return Ok(());
        };
        let timeout = grpc_timeout(&bytes);
        let seen: Seen = Arc::default();
        let response = paused_runtime().block_on(async {
            let mut service = ServiceBuilder::new()
                .layer(RetryLayer::new(&LAYER_POLICY))
                .service(flaky_server(failures, Arc::clone(&seen)));
            let request = Request::builder()
                .method(Method::GET)
                .uri("http://upstream.test/")
                .header("grpc-timeout", value)
                .body(String::new())
                .unwrap();
            service.ready().await.unwrap().call(request).await.unwrap()
        });
        let seen = seen.lock().unwrap().clone();
        let calls = u32::try_from(seen.len()).unwrap();
        // The last answer, whatever it was.
        prop_assert_eq!(response.headers()["x-call"].to_str().unwrap(), calls.to_string());
        prop_assert!(calls <= failures + 1 && calls <= 4);
        prop_assert_eq!(seen[0].0.as_deref(), Some(bytes.as_slice()));
        match timeout {
            Some(timeout) => {
                for (header, at) in &seen[1..] {
                    // No retry started past the call's timeout ...
                    prop_assert!(*at <= timeout, "{:?} past {:?}", at, timeout);
                    // ... and each tells the server no more than is left.
                    let told = grpc_timeout(header.as_deref().unwrap()).unwrap();
                    prop_assert!(told + *at <= timeout, "{:?} at {:?} of {:?}", told, at, timeout);
                }
                if calls < failures + 1 && calls < 4 {
                    // Stopped early: the next wait would have passed it.
                    let last = seen.last().unwrap().1;
                    prop_assert!(last + Duration::from_millis(40) > timeout);
                }
            }
            None => {
                // Not a timeout: the call is retried as without it, and the
                // header is passed on as it came.
                prop_assert_eq!(calls, (failures + 1).min(4));
                for (header, _) in &seen {
                    prop_assert_eq!(header.as_deref(), Some(bytes.as_slice()));
                }
            }
        }
    }
}

// ---------------------------------------------------------------------
// grpc-timeout against a real tonic server
// ---------------------------------------------------------------------

#[path = "support/grpc.rs"]
mod grpc_server;

mod tonic_deadlines {
    use super::grpc_server::{self, status};
    use super::*;
    use tonic::Code;

    static POLICY: Policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(10))
        .with_jitter(Jitter::None);

    /// One call whose `grpc-timeout` header is `raw`, set under the layer
    /// (as a hand-written client or a proxy would), through the retry
    /// layer to a real tonic server that answers `script` first.
    async fn call_with(
        raw: &'static [u8],
        script: Vec<tonic::Status>,
    ) -> (Result<Bytes, tonic::Status>, u32) {
        let (channel, calls) = grpc_server::serve(script).await;
        let value = http::HeaderValue::from_bytes(raw).unwrap();
        let client = ServiceBuilder::new()
            .map_request(move |mut request: Request<tonic::body::Body>| {
                request.headers_mut().insert("grpc-timeout", value.clone());
                request
            })
            .layer(RetryLayer::new(&POLICY))
            .service(channel);
        let result = grpc_server::say(client, tonic::Request::new(Bytes::from_static(b"hi"))).await;
        (result, calls.load(Ordering::SeqCst))
    }

    /// A timeout of 99,999,999 hours (the most the grammar allows), or a
    /// malformed one, is no bound: the call retries as without it, to the
    /// server's answer.
    #[tokio::test(start_paused = true)]
    async fn a_huge_or_malformed_timeout_retries_as_without_one() {
        for raw in [
            &b"99999999H"[..],
            b"123456789S",
            b"1.5S",
            b"soon",
            b"-1m",
            b"10",
        ] {
            let (result, calls) = call_with(
                raw,
                vec![
                    status(Code::Unavailable, None),
                    status(Code::Unavailable, None),
                ],
            )
            .await;
            assert_eq!(result.unwrap(), "hi", "{raw:?}");
            assert_eq!(calls, 3, "{raw:?}");
        }
    }

    /// A zero timeout: one attempt at most, never retried, and the caller
    /// gets its real error back.
    #[tokio::test(start_paused = true)]
    async fn a_zero_timeout_is_not_retried_and_the_error_comes_back() {
        for raw in [&b"0n"[..], b"0S", b"00000000H"] {
            let (result, calls) = call_with(raw, vec![status(Code::Unavailable, None); 3]).await;
            let error = result.unwrap_err();
            assert!(calls <= 1, "{raw:?}: {calls} calls");
            if calls == 1 {
                assert_eq!(error.code(), Code::Unavailable, "{raw:?}: {error:?}");
            }
        }
    }

    /// A timeout shorter than the server's pushback: the pushback is not
    /// waited, the last status comes back.
    #[tokio::test(start_paused = true)]
    async fn pushback_past_the_timeout_returns_the_last_status() {
        let started = tokio::time::Instant::now();
        let (result, calls) =
            call_with(b"50m", vec![status(Code::Unavailable, Some("100")); 3]).await;
        assert_eq!(result.unwrap_err().code(), Code::Unavailable);
        assert_eq!(calls, 1);
        assert!(started.elapsed() < Duration::from_millis(50));
    }
}

// ---------------------------------------------------------------------
// gRPC service config
// ---------------------------------------------------------------------

fn json_duration() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        (0_u64..100, 0_u32..1_000_000_000)
            .prop_map(|(s, n)| serde_json::json!(format!("{s}.{n:09}s"))),
        prop::sample::select(vec![
            "0s",
            "0.000000001s",
            "1s",
            "0.1s",
            "315576000000s",
            "99999999999999999999999999s",
            "18446744073709551616s",
            "1.0000000001s",
            "-1s",
            ".5s",
            "1.s",
            "1",
            "s",
            "",
            "1ms",
            "1e3s",
            "+1s",
            "１s",
        ])
        .prop_map(|text| serde_json::json!(text)),
        Just(serde_json::json!(1)),
        Just(serde_json::Value::Null),
    ]
}

fn json_code() -> impl Strategy<Value = serde_json::Value> {
    prop_oneof![
        prop::sample::select(vec![
            "UNAVAILABLE",
            "unavailable",
            "OK",
            "RESOURCE_EXHAUSTED",
            "",
            "NOPE",
            "UNAVAİLABLE",
        ])
        .prop_map(|name| serde_json::json!(name)),
        prop::sample::select(vec![
            serde_json::json!(0),
            serde_json::json!(14),
            serde_json::json!(16),
            serde_json::json!(17),
            serde_json::json!(-1),
            serde_json::json!(u64::MAX),
            serde_json::json!(1.5),
            serde_json::json!(null),
            serde_json::json!([]),
        ]),
    ]
}

fn json_name() -> impl Strategy<Value = serde_json::Value> {
    let part = prop::sample::select(vec!["", "a.S", "b.S", "M", "N", "é", "\u{0}"]);
    (
        prop::option::of(part.clone()),
        prop::option::of(part),
        any::<bool>(),
    )
        .prop_map(|(service, method, capital)| {
            let mut name = serde_json::Map::new();
            let (s, m) = if capital {
                ("Service", "Method")
            } else {
                ("service", "method")
            };
            if let Some(service) = service {
                name.insert(s.into(), serde_json::json!(service));
            }
            if let Some(method) = method {
                name.insert(m.into(), serde_json::json!(method));
            }
            serde_json::Value::Object(name)
        })
}

fn json_attempts() -> impl Strategy<Value = serde_json::Value> {
    prop::sample::select(vec![
        serde_json::json!(0),
        serde_json::json!(1),
        serde_json::json!(2),
        serde_json::json!(5),
        serde_json::json!(u32::MAX),
        serde_json::json!(u64::from(u32::MAX) + 1),
        serde_json::json!(-3),
        serde_json::json!(2.5),
        serde_json::json!("3"),
    ])
}

fn json_method_config() -> impl Strategy<Value = serde_json::Value> {
    let retry = (
        prop::option::of(json_attempts()),
        prop::option::of(json_duration()),
        prop::option::of(json_duration()),
        prop::option::of(prop::sample::select(vec![
            serde_json::json!(1),
            serde_json::json!(2.5),
            serde_json::json!(0.5),
            serde_json::json!(1e300),
            serde_json::json!(-1),
        ])),
        prop::collection::vec(json_code(), 0..3),
    )
        .prop_map(|(attempts, initial, max, multiplier, codes)| {
            let mut policy = serde_json::Map::new();
            for (key, value) in [
                ("maxAttempts", attempts),
                ("initialBackoff", initial),
                ("maxBackoff", max),
                ("backoffMultiplier", multiplier),
            ] {
                if let Some(value) = value {
                    policy.insert(key.into(), value);
                }
            }
            policy.insert("retryableStatusCodes".into(), serde_json::json!(codes));
            serde_json::Value::Object(policy)
        });
    let hedging = (
        prop::option::of(json_attempts()),
        prop::option::of(json_duration()),
        prop::collection::vec(json_code(), 0..3),
    )
        .prop_map(|(attempts, delay, codes)| {
            let mut policy = serde_json::Map::new();
            if let Some(attempts) = attempts {
                policy.insert("maxAttempts".into(), attempts);
            }
            if let Some(delay) = delay {
                policy.insert("hedgingDelay".into(), delay);
            }
            policy.insert("nonFatalStatusCodes".into(), serde_json::json!(codes));
            serde_json::Value::Object(policy)
        });
    (
        prop::collection::vec(json_name(), 0..3),
        prop::option::of(json_duration()),
        prop::option::of(retry),
        prop::option::of(hedging),
    )
        .prop_map(|(names, timeout, retry, hedging)| {
            let mut config = serde_json::Map::new();
            config.insert("name".into(), serde_json::json!(names));
            if let Some(timeout) = timeout {
                config.insert("timeout".into(), timeout);
            }
            if let Some(retry) = retry {
                config.insert("retryPolicy".into(), retry);
            }
            if let Some(hedging) = hedging {
                config.insert("hedgingPolicy".into(), hedging);
            }
            serde_json::Value::Object(config)
        })
}

fn json_service_config() -> impl Strategy<Value = serde_json::Value> {
    (
        prop::collection::vec(json_method_config(), 0..4),
        prop::option::of((
            prop::sample::select(vec![
                serde_json::json!(0),
                serde_json::json!(1),
                serde_json::json!(1000),
                serde_json::json!(1001),
            ]),
            prop::sample::select(vec![
                serde_json::json!(0.1),
                serde_json::json!(0),
                serde_json::json!(1e-45),
                serde_json::json!(1e300),
                serde_json::json!(-1),
            ]),
        )),
    )
        .prop_map(|(methods, throttling)| {
            let mut config = serde_json::Map::new();
            config.insert("methodConfig".into(), serde_json::json!(methods));
            if let Some((tokens, ratio)) = throttling {
                config.insert(
                    "retryThrottling".into(),
                    serde_json::json!({ "maxTokens": tokens, "tokenRatio": ratio }),
                );
            }
            serde_json::Value::Object(config)
        })
}

/// Any JSON value, to a small depth.
fn any_json() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::Bool),
        any::<i64>().prop_map(|n| serde_json::json!(n)),
        any::<f64>()
            .prop_filter("finite", |n| n.is_finite())
            .prop_map(|n| serde_json::json!(n)),
        "[a-zA-Z_.]{0,12}".prop_map(serde_json::Value::String),
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::Array),
            prop::collection::vec(
                (
                    prop::sample::select(vec![
                        "methodConfig",
                        "name",
                        "service",
                        "method",
                        "retryPolicy",
                        "hedgingPolicy",
                        "maxAttempts",
                        "initialBackoff",
                        "timeout",
                        "retryThrottling",
                        "maxTokens",
                        "x",
                    ]),
                    inner
                ),
                0..4
            )
            .prop_map(|pairs| serde_json::Value::Object(
                pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
            )),
        ]
    })
}

/// What a loaded config must satisfy, and that using it panics nowhere.
fn check_loaded(config: &ServiceConfig) -> Result<(), TestCaseError> {
    let mut seen = std::collections::HashSet::new();
    for method in config.methods() {
        for (service, name) in method.names() {
            prop_assert!(
                !service.is_empty() || name.is_empty(),
                "a method without its service was accepted"
            );
            prop_assert!(
                seen.insert((service.to_owned(), name.to_owned())),
                "a name given twice was accepted"
            );
        }
        let policy = method.policy();
        prop_assert!((1..=5).contains(&policy.max_attempts()));
        if let Some(retry) = method.retry_policy() {
            prop_assert!(retry.base() > Duration::ZERO);
        }
        let _ = method.retryable();
        let _ = method.hedging_policy().map(|hedging| hedging.hedge());
    }
    let _ = config.budget();
    for path in ["/a.S/M", "/b.S/N", "/x/y", "", "/", "//", "/a.S/"] {
        let _ = config.for_path(path);
    }
    Ok(())
}

/// The names a generated config gives, and whether the rules reject them.
fn names_break_the_rules(value: &serde_json::Value) -> bool {
    let mut seen = std::collections::HashSet::new();
    let Some(methods) = value["methodConfig"].as_array() else {
        return false;
    };
    for method in methods {
        for name in method["name"].as_array().into_iter().flatten() {
            let part = |lower: &str, upper: &str| {
                name.get(lower)
                    .or_else(|| name.get(upper))
                    .and_then(serde_json::Value::as_str)
                    .unwrap_or("")
                    .to_owned()
            };
            let (service, method) = (part("service", "Service"), part("method", "Method"));
            if service.is_empty() && !method.is_empty() {
                return true;
            }
            if !seen.insert((service, method)) {
                return true;
            }
        }
    }
    false
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, ..ProptestConfig::default() })]

    /// Service configs with every field right, wrong or missing: loaded or
    /// an error, never a panic; a config that names a method without its
    /// service, or a name twice, is an error.
    #[test]
    fn generated_service_configs_load_or_are_errors(value in json_service_config()) {
        let text = value.to_string();
        match serde_json::from_str::<ServiceConfig>(&text) {
            Ok(config) => {
                prop_assert!(!names_break_the_rules(&value), "{}", text);
                check_loaded(&config)?;
            }
            Err(error) => {
                // An error value with a message, the rule's or serde's.
                prop_assert!(!error.to_string().is_empty());
            }
        }
        let _ = serde_json::from_value::<ServiceConfig>(value);
    }

    /// Arbitrary JSON, and arbitrary bytes cut from a real config: never a
    /// panic.
    #[test]
    fn any_json_or_bytes_load_or_are_errors(
        value in any_json(),
        cut in 0_usize..600,
        byte in any::<u8>(),
    ) {
        if let Ok(config) = serde_json::from_value::<ServiceConfig>(value) {
            check_loaded(&config)?;
        }
        let real = include_str!("grpc_service_config.json");
        let mut bytes = real.as_bytes().to_vec();
        let at = cut.min(bytes.len().saturating_sub(1));
        if let Some(slot) = bytes.get_mut(at) {
            *slot = byte;
        }
        if let Ok(text) = std::str::from_utf8(&bytes) {
            if let Ok(config) = serde_json::from_str::<ServiceConfig>(text) {
                check_loaded(&config)?;
            }
        }
    }
}

// ---------------------------------------------------------------------
// Registry under threads, with keys of any length
// ---------------------------------------------------------------------

/// The most entries a registry of `capacity` may hold: its capacity.
fn bound(capacity: usize) -> usize {
    capacity
}

/// Keys of every length: empty, one byte, non-ASCII, a megabyte.
fn hostile_keys() -> Vec<String> {
    let mut keys = vec![
        String::new(),
        "a".to_owned(),
        "é".to_owned(),
        "\u{0}".to_owned(),
        "🦀:443".to_owned(),
        "x".repeat(1 << 20),
        "y".repeat(70_000),
    ];
    keys.extend((0..64).map(|n| format!("host-{n}.internal:443")));
    keys
}

#[test]
fn many_threads_and_keys_keep_the_size_bound_and_name_each_breaker() {
    let keys = Arc::new(hostile_keys());
    for capacity in [1, 2, 3, 15, 16, 17, 31, 32, 33, 100, 255, 256, 257] {
        let registry = Arc::new(Registry::new(capacity, |_: &str| {
            Upstream::new().with_breaker(CircuitBreaker::new().with_consecutive_failures(2))
        }));
        let threads: Vec<_> = (0..6_usize)
            .map(|thread| {
                let registry = Arc::clone(&registry);
                let keys = Arc::clone(&keys);
                std::thread::spawn(move || {
                    for round in 0..300 {
                        let key = &keys[(round * 7 + thread * 13) % keys.len()];
                        let upstream = registry.get(key);
                        let breaker = upstream.breaker().unwrap();
                        assert_eq!(breaker.name(), key.as_str());
                        if let Ok(permit) = breaker.acquire() {
                            permit.record(round % 3 == 0);
                        }
                        assert!(registry.len() <= bound(capacity), "{capacity}");
                    }
                })
            })
            .collect();
        for thread in threads {
            thread.join().unwrap();
        }
        assert!(registry.len() <= bound(capacity), "{capacity}");
        assert!(!registry.is_empty());
    }
}

/// An entry in use is never forgotten while the registry holds one no
/// call is using: with T threads each holding one entry throughout and at
/// most one more for a moment, a capacity above 2T always has an unused
/// entry to forget.
#[test]
fn entries_in_use_outlive_entries_nobody_holds() {
    let keys = Arc::new(hostile_keys());
    for (capacity, threads) in [(3, 1), (5, 2), (9, 4), (15, 7)] {
        let made = Arc::new(AtomicU32::new(0));
        let counter = Arc::clone(&made);
        let registry = Arc::new(Registry::new(capacity, move |_: &str| {
            counter.fetch_add(1, Ordering::Relaxed);
            Upstream::new()
        }));
        let handles: Vec<_> = (0..threads)
            .map(|thread: usize| {
                let registry = Arc::clone(&registry);
                let keys = Arc::clone(&keys);
                std::thread::spawn(move || {
                    // Held keys of every length: empty, a megabyte, ...
                    let own = format!("{}#{thread}", &keys[thread % keys.len()]);
                    let held = registry.get(&own);
                    for round in 0..2_000 {
                        let other = &keys[(round * 31 + thread * 17) % keys.len()];
                        drop(registry.get(other));
                        if round % 50 == 0 {
                            let again = registry.get(&own);
                            assert!(
                                Arc::ptr_eq(&held, &again),
                                "capacity {capacity}: an entry in use was forgotten"
                            );
                        }
                    }
                })
            })
            .collect();
        for handle in handles {
            handle.join().unwrap();
        }
        assert!(registry.len() <= capacity);
        assert!(made.load(Ordering::Relaxed) > 0);
    }
}

// ---------------------------------------------------------------------
// Breakers named at run time, under metrics and tracing
// ---------------------------------------------------------------------

#[path = "support/events.rs"]
mod events;

#[test]
fn breakers_with_empty_huge_and_non_ascii_names_open_and_report() {
    use metrics_util::debugging::DebuggingRecorder;
    use tracing_subscriber::layer::SubscriberExt;

    let names = [
        String::new(),
        "é/日本/🦀".to_owned(),
        "\u{0}\n\"quoted\"\t".to_owned(),
        "n".repeat(1 << 20),
        "\u{202e}reversed".to_owned(),
    ];
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    let seen = events::Events::default();
    let subscriber = tracing_subscriber::registry().with(seen.clone());
    {
        let _guard = events::capture(subscriber);
        metrics::with_local_recorder(&recorder, || {
            for name in &names {
                let breaker = CircuitBreaker::new()
                    .with_consecutive_failures(1)
                    .with_open_for(Duration::from_secs(3600))
                    .with_owned_name(name.as_str());
                assert_eq!(breaker.name(), name.as_str());
                breaker.acquire().unwrap().record(false);
                assert!(breaker.acquire().is_err());
                breaker.force_closed();
                breaker.acquire().unwrap().record(true);
                let shared: Arc<str> = Arc::from(name.as_str());
                let again = CircuitBreaker::new().with_owned_name(Arc::clone(&shared));
                assert_eq!(again.name(), name.as_str());
            }
        });
    }
    let labels: Vec<String> = snapshotter
        .snapshot()
        .into_vec()
        .into_iter()
        .flat_map(|(key, _, _, _)| {
            key.key()
                .labels()
                .filter(|label| label.key() == "breaker")
                .map(|label| label.value().to_owned())
                .collect::<Vec<_>>()
        })
        .collect();
    for name in &names {
        assert!(labels.contains(name), "no series for {:.20?}", name);
    }
    assert!(!seen.0.lock().unwrap().is_empty());
}

// ---------------------------------------------------------------------
// Replayed bodies under the hedge layer
// ---------------------------------------------------------------------

type Body = UnsyncBoxBody<Bytes, std::io::Error>;

const LIMIT: usize = 8;

static HEDGE_POLICY: Policy = Policy::new().with_max_attempts(3);

/// A body of `chunks`, then an error if `fails`, or no end if `endless`.
fn body(chunks: Vec<&'static [u8]>, fails: bool, endless: bool) -> Body {
    use futures_util::StreamExt;
    let frames = futures_util::stream::iter(
        chunks
            .into_iter()
            .map(|chunk| Ok(hyper::body::Frame::data(Bytes::from_static(chunk)))),
    );
    let tail = futures_util::stream::iter(
        fails.then(|| Err(std::io::Error::other("the body failed midway"))),
    );
    if endless {
        StreamBody::new(frames.chain(tail).chain(futures_util::stream::pending())).boxed_unsync()
    } else {
        StreamBody::new(frames.chain(tail)).boxed_unsync()
    }
}

/// Each copy: reads the body (if `reads`; its first frame only otherwise),
/// then answers 503 for the first copy and 200 after, 100 ms later; the
/// response's body is the body read.
fn replay_server(
    sent: Arc<AtomicU32>,
    reads: bool,
) -> impl Service<
    Request<Body>,
    Response = Response<String>,
    Error = std::io::Error,
    Future = impl Send + 'static,
> + Clone
       + Send
       + 'static {
    tower::service_fn(move |request: Request<Body>| {
        let sent = Arc::clone(&sent);
        async move {
            let n = sent.fetch_add(1, Ordering::SeqCst) + 1;
            let read = if reads {
                match request.into_body().collect().await {
                    Ok(collected) => String::from_utf8_lossy(&collected.to_bytes()).into_owned(),
                    Err(error) => format!("error: {error}"),
                }
            } else {
                // Its first frame only: a body nothing was read from is
                // given back whole, and sent again by the next copy.
                let mut body = request.into_body();
                let _ = body.frame().await;
                String::new()
            };
            tokio::time::sleep(Duration::from_millis(100)).await;
            let status = if n == 1 {
                StatusCode::SERVICE_UNAVAILABLE
            } else {
                StatusCode::OK
            };
            Ok(Response::builder()
                .status(status)
                .header("x-copy", n)
                .body(read)
                .unwrap())
        }
    })
}

async fn hedged(request_body: Body, reads: bool) -> (Response<String>, u32) {
    let sent = Arc::new(AtomicU32::new(0));
    let mut service = ServiceBuilder::new()
        .layer(
            HedgeLayer::new(&HEDGE_POLICY, Hedge::after(Duration::from_millis(20)))
                .with_classifier(HttpClassifier::default())
                .with_max_body(LIMIT),
        )
        .service(replay_server(Arc::clone(&sent), reads));
    let request = Request::builder()
        .method(Method::PUT)
        .uri("http://upstream.test/")
        .body(request_body)
        .unwrap();
    let response = tokio::time::timeout(
        Duration::from_secs(3600),
        service.ready().await.unwrap().call(request),
    )
    .await
    .expect("the hedged call never ended")
    .unwrap();
    (response, sent.load(Ordering::SeqCst))
}

/// Bodies of 0 bytes and exactly the bound are played back to the hedge
/// and the retry; one byte more is sent once, unhedged, and its failure
/// comes back as it was.
#[tokio::test(start_paused = true)]
async fn bodies_at_and_past_the_bound() {
    for (chunks, replayable) in [
        (vec![], true),
        (vec![&b""[..], b""], true),
        (vec![&b"abcd"[..], b"efgh"], true),
        (vec![&b"abcd"[..], b"efghi"], false),
        (vec![&b"abcdefghi"[..]], false),
    ] {
        let whole: Vec<u8> = chunks.concat();
        let (response, sent) = hedged(body(chunks, false, false), true).await;
        let copy: u32 = response.headers()["x-copy"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        assert_eq!(response.body().as_bytes(), whole.as_slice());
        if replayable {
            assert_eq!(response.status(), StatusCode::OK, "{whole:?}");
            assert!(sent >= 2 && copy >= 2, "{whole:?}: {sent} sent");
        } else {
            assert_eq!(
                response.status(),
                StatusCode::SERVICE_UNAVAILABLE,
                "{whole:?}"
            );
            assert_eq!((sent, copy), (1, 1), "{whole:?}");
        }
    }
}

/// A body that fails midway is not played back: the request is sent once
/// and its answer comes back.
#[tokio::test(start_paused = true)]
async fn a_body_that_fails_midway_is_sent_once() {
    let (response, sent) = hedged(body(vec![b"ab"], true, false), true).await;
    assert_eq!(sent, 1);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        response.body().starts_with("error"),
        "{:?}",
        response.body()
    );
}

/// A body that never ends, to a server that answers after reading its
/// first chunk: no copy can be made, and the first copy's answer comes back; no
/// hang, no busy loop.
#[tokio::test(start_paused = true)]
async fn a_body_that_never_ends_is_sent_once() {
    let started = tokio::time::Instant::now();
    let (response, sent) = hedged(body(vec![b"ab"], false, true), false).await;
    assert_eq!(sent, 1);
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(started.elapsed(), Duration::from_millis(100));
}
