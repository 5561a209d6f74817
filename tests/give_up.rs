//! The `on_give_up` hook: called exactly once when a call returns an error
//! or a retried `Ok` value, with what the caller gets, the stop reason, the
//! attempts made and the time taken; never for a success.

#[path = "support/events.rs"]
mod events;
#[path = "support/servers.rs"]
mod servers;

use std::cell::RefCell;
use std::time::Duration;

use retry_runtime::{Jitter, Policy, Stop, Stopped};

const POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(100))
    .with_jitter(Jitter::None);

/// What the hook saw: the outcome, and how the call stopped.
type Seen<T> = RefCell<Vec<(Result<T, String>, Stopped)>>;

fn seen<T: Clone>(seen: &Seen<T>) -> impl Fn(&Result<T, std::io::Error>, &Stopped) + '_ {
    move |result, stopped| {
        let result = result.as_ref().cloned().map_err(|error| error.to_string());
        seen.borrow_mut().push((result, *stopped));
    }
}

fn reset() -> std::io::Error {
    std::io::ErrorKind::ConnectionReset.into()
}

#[tokio::test(start_paused = true)]
async fn a_call_that_runs_out_of_attempts_is_reported_once() {
    let hook = Seen::default();
    let result: std::io::Result<u32> = POLICY
        .retrying()
        .on_give_up(seen(&hook))
        .run(|| async { Err(reset()) })
        .await;
    assert!(result.is_err());
    let seen = hook.take();
    assert_eq!(seen.len(), 1);
    let (outcome, stopped) = &seen[0];
    assert_eq!(outcome, &Err(reset().to_string()));
    assert_eq!(stopped.reason(), Stop::Exhausted);
    assert_eq!(stopped.attempts(), 3);
    // Waits of 100ms and 200ms on the paused clock; the attempts take none.
    assert_eq!(stopped.elapsed(), Some(Duration::from_millis(300)));
    assert_eq!(stopped.to_string(), "exhausted after 3 attempts in 300ms");
}

#[tokio::test(start_paused = true)]
async fn an_error_not_retried_is_reported_and_a_success_is_not() {
    let hook = Seen::default();
    let result: std::io::Result<u32> = POLICY
        .on(|error: &std::io::Error| error.kind() == std::io::ErrorKind::ConnectionReset)
        .on_give_up(seen(&hook))
        .run(|| async { Err(std::io::ErrorKind::PermissionDenied.into()) })
        .await;
    assert!(result.is_err());
    let mut calls = 0;
    let result: std::io::Result<u32> = POLICY
        .retrying()
        .on_give_up(seen(&hook))
        .run(|| {
            calls += 1;
            let outcome = if calls < 2 { Err(reset()) } else { Ok(calls) };
            async move { outcome }
        })
        .await;
    assert_eq!(result.unwrap(), 2);
    let seen = hook.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.reason(), Stop::NotRetryable);
    assert_eq!(seen[0].1.attempts(), 1);
    assert_eq!(seen[0].1.elapsed(), Some(Duration::ZERO));
}

#[tokio::test(start_paused = true)]
async fn a_retried_ok_value_returned_when_no_retry_is_left_is_reported() {
    let hook = Seen::default();
    let result: std::io::Result<u16> = POLICY
        .retrying()
        .on_ok(|status: &u16| *status == 503)
        .on_give_up(seen(&hook))
        .run(|| async { Ok(503) })
        .await;
    assert_eq!(result.unwrap(), 503);
    let seen = hook.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, Ok(503));
    assert_eq!(seen[0].1.reason(), Stop::Exhausted);
    assert_eq!(seen[0].1.attempts(), 3);
}

#[test]
fn a_blocking_loop_reports_too() {
    let hook = Seen::default();
    let result: std::io::Result<u32> = POLICY
        .with_base(Duration::from_millis(1))
        .with_max_attempts(2)
        .retrying()
        .on_give_up(seen(&hook))
        .run_blocking(|| Err(reset()));
    assert!(result.is_err());
    let seen = hook.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.reason(), Stop::Exhausted);
    assert_eq!(seen[0].1.attempts(), 2);
    assert!(seen[0].1.elapsed().is_some());
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_that_fails_everywhere_is_reported_once() {
    let hook = Seen::default();
    let result: std::io::Result<u32> = POLICY
        .retrying()
        .hedge(retry_runtime::hedge::Hedge::after(Duration::from_millis(
            50,
        )))
        .on_give_up(seen(&hook))
        .run(|| async { Err(reset()) })
        .await;
    assert!(result.is_err());
    let seen = hook.take();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].1.reason(), Stop::Exhausted);
    assert_eq!(seen[0].1.attempts(), 3);
}

/// A call with the hook dropped before it ends (here by a timeout, during
/// its first wait) leaves `last_call()` as it was, as its docs say: it was
/// set to `None` when the call started.
#[tokio::test(start_paused = true)]
async fn a_call_dropped_before_it_ends_leaves_last_call_as_it_was() {
    let ok: std::io::Result<u32> = POLICY.retrying().run(|| async { Ok(1) }).await;
    assert_eq!(ok.unwrap(), 1);
    let before = retry_runtime::last_call().expect("the call before");
    assert_eq!((before.reason(), before.attempts()), (Stop::Done, 1));
    let hook = Seen::default();
    let dropped = POLICY
        .retrying()
        .on_give_up(seen(&hook))
        .run(|| async { Err::<u32, _>(reset()) });
    tokio::time::timeout(Duration::from_millis(50), dropped)
        .await
        .unwrap_err();
    assert_eq!(retry_runtime::last_call(), Some(before));
    let hedged = POLICY
        .retrying()
        .hedge(retry_runtime::hedge::Hedge::after(Duration::from_millis(
            10,
        )))
        .on_give_up(seen(&hook))
        .run(std::future::pending::<std::io::Result<u32>>);
    tokio::time::timeout(Duration::from_millis(50), hedged)
        .await
        .unwrap_err();
    assert_eq!(retry_runtime::last_call(), Some(before));
    assert!(hook.take().is_empty());
}

mod attribute {
    use std::cell::RefCell;
    use std::time::Duration;

    use retry_runtime::{retry, Stop, Stopped};

    #[derive(Debug, PartialEq)]
    struct Failure {
        transient: bool,
    }

    thread_local! {
        static REPORTED: RefCell<Vec<String>> = RefCell::default();
    }

    fn report(result: &Result<u32, Failure>, stopped: &Stopped) {
        REPORTED.with(|reported| reported.borrow_mut().push(format!("{result:?}: {stopped}")));
    }

    fn reported() -> Vec<String> {
        REPORTED.with(RefCell::take)
    }

    #[retry(max = 3, base = "100ms", jitter = "none", on = |f| f.transient, on_give_up = report)]
    async fn failing(transient: bool) -> Result<u32, Failure> {
        Err(Failure { transient })
    }

    #[retry(max = 3, base = "100ms", jitter = "none", on_give_up = report)]
    async fn succeeding() -> Result<u32, Failure> {
        Ok(7)
    }

    #[tokio::test(start_paused = true)]
    async fn the_key_reports_each_give_up_once_and_no_success() {
        reported();
        failing(true).await.unwrap_err();
        failing(false).await.unwrap_err();
        succeeding().await.unwrap();
        assert_eq!(
            reported(),
            [
                "Err(Failure { transient: true }): exhausted after 3 attempts in 300ms",
                "Err(Failure { transient: false }): not_retryable after 1 attempt in 0ns",
            ]
        );
    }

    /// The attribute's hook, on a call dropped during its first wait:
    /// `last_call()` still tells of the call before.
    #[tokio::test(start_paused = true)]
    async fn a_call_dropped_before_it_ends_leaves_last_call_as_it_was() {
        succeeding().await.unwrap();
        let before = retry_runtime::last_call().expect("the call before");
        assert_eq!((before.reason(), before.attempts()), (Stop::Done, 1));
        tokio::time::timeout(Duration::from_millis(50), failing(true))
            .await
            .unwrap_err();
        assert_eq!(retry_runtime::last_call(), Some(before));
        assert!(reported().is_empty());
    }

    #[tokio::test(start_paused = true)]
    async fn a_closure_infers_its_arguments_and_may_capture_the_arguments() {
        #[retry(max = 2, base = "10ms", on_give_up = |result, stopped| log.borrow_mut().push((result.is_err(), stopped.reason(), stopped.attempts())))]
        async fn logged(log: &RefCell<Vec<(bool, Stop, u32)>>) -> Result<(), Failure> {
            Err(Failure { transient: true })
        }
        let log = RefCell::default();
        logged(&log).await.unwrap_err();
        assert_eq!(log.take(), [(true, Stop::Exhausted, 2)]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_retried_ok_value_returned_at_the_end_is_reported() {
        #[retry(max = 2, base = "10ms", on_ok = |status| *status == 503, on_give_up = |result, stopped| SEEN.with(|seen| seen.borrow_mut().push((*result.as_ref().unwrap(), stopped.reason()))))]
        async fn unavailable() -> Result<u16, Failure> {
            Ok(503)
        }
        thread_local! {
            static SEEN: RefCell<Vec<(u16, Stop)>> = RefCell::default();
        }
        assert_eq!(unavailable().await, Ok(503));
        assert_eq!(SEEN.with(RefCell::take), [(503, Stop::Exhausted)]);
    }

    #[test]
    fn a_plain_function_reports_too() {
        #[retry(max = 2, base = "1ms", on_give_up = report)]
        fn blocking() -> Result<u32, Failure> {
            Err(Failure { transient: true })
        }
        reported();
        blocking().unwrap_err();
        let reported = reported();
        assert_eq!(reported.len(), 1);
        assert!(reported[0]
            .starts_with("Err(Failure { transient: true }): exhausted after 2 attempts in "));
    }

    #[tokio::test(start_paused = true)]
    async fn a_hedged_function_reports_too() {
        #[retry(max = 3, hedge = "50ms", on_give_up = report)]
        async fn hedged() -> Result<u32, Failure> {
            tokio::time::sleep(Duration::from_millis(10)).await;
            Err(Failure { transient: true })
        }
        reported();
        hedged().await.unwrap_err();
        let reported = reported();
        assert_eq!(reported.len(), 1);
        assert!(
            reported[0].starts_with("Err(Failure { transient: true }): exhausted after 3 attempts"),
            "{reported:?}"
        );
    }
}

/// The tower layer's and the middleware's hook, between a client and a
/// real server on 127.0.0.1: told once per call that gives up, with the
/// response or error the caller gets; not for a success.
mod layers {
    use std::sync::{Arc, Mutex};
    use std::time::Duration;

    use axum::http::StatusCode;
    use bytes::Bytes;
    use http_body_util::Full;
    use hyper_util::client::legacy::Client;
    use hyper_util::rt::TokioExecutor;
    use retry_runtime::reqwest_middleware::{Outcome, RetryMiddleware};
    use retry_runtime::tower::{BreakerError, RetryLayer};
    use retry_runtime::{CircuitBreaker, Jitter, Policy, Stop, Stopped};
    use tower::{Service, ServiceBuilder, ServiceExt};

    use super::servers::answering;

    static POLICY: Policy = Policy::new()
        .with_max_attempts(3)
        .with_base(Duration::from_millis(100))
        .with_jitter(Jitter::None);

    /// What a hook saw: the status the caller got, or the error, and how
    /// the call stopped.
    type Seen = Arc<Mutex<Vec<(Result<u16, String>, Stopped)>>>;

    fn request(url: &str) -> http::Request<Full<Bytes>> {
        http::Request::get(url)
            .body(Full::new(Bytes::new()))
            .unwrap()
    }

    #[tokio::test(start_paused = true)]
    async fn the_tower_layer_reports_each_give_up_once() {
        let (down, _) = answering(StatusCode::SERVICE_UNAVAILABLE).await;
        let (up, _) = answering(StatusCode::OK).await;
        let seen = Seen::default();
        let hook = {
            let seen = Arc::clone(&seen);
            move |outcome: &Result<http::Response<_>, _>, stopped: &Stopped| {
                let status = outcome
                    .as_ref()
                    .map(|response: &http::Response<_>| response.status().as_u16())
                    .map_err(|error: &hyper_util::client::legacy::Error| error.to_string());
                seen.lock().unwrap().push((status, *stopped));
            }
        };
        let mut client = ServiceBuilder::new()
            .layer(RetryLayer::new(&POLICY).on_give_up(hook))
            .service(Client::builder(TokioExecutor::new()).build_http());
        let response = client
            .ready()
            .await
            .unwrap()
            .call(request(&down.url("/")))
            .await;
        assert_eq!(response.unwrap().status(), 503);
        let response = client
            .ready()
            .await
            .unwrap()
            .call(request(&up.url("/")))
            .await;
        assert_eq!(response.unwrap().status(), 200);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        let (status, stopped) = &seen[0];
        assert_eq!(status, &Ok(503));
        assert_eq!((stopped.reason(), stopped.attempts()), (Stop::Exhausted, 3));
        // Waits of 100 ms and 200 ms on the paused clock.
        assert!(
            stopped.elapsed() >= Some(Duration::from_millis(300)),
            "{stopped}"
        );
    }

    /// With a breaker, the layer's error is `BreakerError`: a call the open
    /// circuit refuses is told as such, with the reason `open`.
    #[tokio::test(start_paused = true)]
    async fn the_tower_layers_hook_hears_a_refusal() {
        let (down, _) = answering(StatusCode::SERVICE_UNAVAILABLE).await;
        let breaker = Arc::new(CircuitBreaker::new().with_consecutive_failures(3));
        let seen = Seen::default();
        let hook = {
            let seen = Arc::clone(&seen);
            move |outcome: &Result<http::Response<_>, BreakerError<_>>, stopped: &Stopped| {
                let status = outcome
                    .as_ref()
                    .map(|response: &http::Response<_>| response.status().as_u16())
                    .map_err(|error: &BreakerError<hyper_util::client::legacy::Error>| {
                        error.to_string()
                    });
                seen.lock().unwrap().push((status, *stopped));
            }
        };
        let mut client = ServiceBuilder::new()
            .layer(
                RetryLayer::new(&POLICY)
                    .with_breaker(breaker)
                    .on_give_up(hook),
            )
            .service(Client::builder(TokioExecutor::new()).build_http());
        for _ in 0..2 {
            let _ = client
                .ready()
                .await
                .unwrap()
                .call(request(&down.url("/")))
                .await;
        }
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 2, "{seen:?}");
        assert_eq!(seen[0].0, Ok(503));
        assert_eq!(seen[0].1.reason(), Stop::Exhausted);
        assert!(seen[1].0.is_err(), "{seen:?}");
        assert_eq!((seen[1].1.reason(), seen[1].1.attempts()), (Stop::Open, 1));
    }

    #[tokio::test(start_paused = true)]
    async fn the_middleware_reports_each_give_up_once() {
        let (down, _) = answering(StatusCode::SERVICE_UNAVAILABLE).await;
        let (up, _) = answering(StatusCode::OK).await;
        let seen = Seen::default();
        let hook = {
            let seen = Arc::clone(&seen);
            move |outcome: &Outcome, stopped: &Stopped| {
                let status = outcome
                    .as_ref()
                    .map(|response| response.status().as_u16())
                    .map_err(ToString::to_string);
                seen.lock().unwrap().push((status, *stopped));
            }
        };
        let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
            .with(RetryMiddleware::new(POLICY).on_give_up(hook))
            .build();
        assert_eq!(
            client.get(down.url("/")).send().await.unwrap().status(),
            503
        );
        assert_eq!(client.get(up.url("/")).send().await.unwrap().status(), 200);
        let seen = seen.lock().unwrap().clone();
        assert_eq!(seen.len(), 1, "{seen:?}");
        assert_eq!(seen[0].0, Ok(503));
        assert_eq!(
            (seen[0].1.reason(), seen[0].1.attempts()),
            (Stop::Exhausted, 3)
        );
        assert!(seen[0].1.elapsed() >= Some(Duration::from_millis(300)));
    }
}

/// With `tracing`, a call that gives up emits one event, with the attempts,
/// the time and the reason; the `on_give_up` hook is called beside it, once,
/// and adds no event of its own.
#[tokio::test(start_paused = true)]
async fn one_event_per_give_up_beside_the_hook() {
    use tracing_subscriber::layer::SubscriberExt;
    let events = events::Events::default();
    let _guard = events::capture(tracing_subscriber::registry().with(events.clone()));
    let hook = Seen::default();
    let result: std::io::Result<u32> = POLICY
        .retrying()
        .named("give_up::one_event")
        .on_give_up(seen(&hook))
        .run(|| async { Err(reset()) })
        .await;
    assert!(result.is_err());
    assert_eq!(hook.take().len(), 1);
    let events = events.0.lock().unwrap().clone();
    let gave_up: Vec<_> = events
        .iter()
        .filter(|event| event.starts_with("WARN"))
        .collect();
    assert_eq!(
        gave_up,
        [
            "WARN message=attempt failed; giving up function=\"give_up::one_event\" code.function.name=\"give_up::one_event\" attempt=3 attempts=3 elapsed_ms=300.0 reason=\"exhausted\" error.type=\"std::io::error::Error\""
        ]
    );
    assert_eq!(events.len(), 3, "two retries and the give-up: {events:#?}");
}
