//! A failure the server below already retried and gave up on, and said so,
//! is not retried (DESIGN §4.17): `retry-exhausted` (a `ServerLayer`'s
//! answer), Envoy's `x-envoy-overloaded`, a negative gRPC pushback. Every
//! entry point and ready-made classifier takes it as a give-up from the
//! layer below: reason `nested`, a budget token and a breaker failure, the
//! `on_give_up` hook told, and the enclosing attempt marked, so that the
//! mark climbs the chain. `nested = "retry"` opts out of the HTTP mark
//! only.

use std::cell::Cell;
use std::convert::Infallible;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use http::{Request, Response, StatusCode};
use retry_runtime::classify::{chain, grpc, http as status};
use retry_runtime::hedge::{Hedge, HedgeLayer};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{CircuitBreakerLayer, RetryLayer, RetryPolicy};
use retry_runtime::{
    last_call, retry, CircuitBreaker, CircuitState, Jitter, Nested, Policy, RetryBudget, Stop,
};
use tower::{Service, ServiceBuilder, ServiceExt};

const THREE: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

/// The marks, each on the failure it comes with.
fn marked(header: &'static str, value: &'static str) -> Response<()> {
    Response::builder()
        .status(StatusCode::SERVICE_UNAVAILABLE)
        .header(header, value)
        .body(())
        .unwrap()
}

fn refused() -> tonic::Status {
    let mut status = tonic::Status::unavailable("gave up below");
    status
        .metadata_mut()
        .insert(grpc::PUSHBACK, "-1".parse().unwrap());
    status
}

/// A budget of 10 and a breaker that opens on the first failure: after one
/// marked answer, 9 tokens and an open circuit.
fn accounting() -> (Arc<RetryBudget>, Arc<CircuitBreaker>) {
    let breaker = CircuitBreaker::new()
        .with_consecutive_failures(1)
        .with_open_for(Duration::from_secs(60));
    (Arc::new(RetryBudget::new(10, 0.1)), Arc::new(breaker))
}

fn assert_gave_up_below(budget: &RetryBudget, breaker: &CircuitBreaker) {
    let last = last_call().unwrap();
    assert_eq!((last.reason(), last.attempts()), (Stop::Nested, 1));
    assert_eq!(budget.tokens(), 9.0, "the failure took a token");
    assert_eq!(
        breaker.state(),
        CircuitState::Open,
        "and counts against the breaker"
    );
}

#[tokio::test(start_paused = true)]
async fn the_attribute_honours_each_mark_through_the_ready_made_classifiers() {
    #[retry(max = 3, base = "10ms", on_ok = status::is_transient_response,
            budget = budget, breaker = breaker)]
    async fn http(
        calls: &Cell<u32>,
        answer: fn() -> Response<()>,
        budget: &RetryBudget,
        breaker: &CircuitBreaker,
    ) -> Result<Response<()>, std::io::Error> {
        calls.set(calls.get() + 1);
        Ok(answer())
    }
    #[retry(max = 3, base = "10ms", on = grpc::is_retryable, budget = budget, breaker = breaker,
            circuit_open = |_| tonic::Status::unavailable("circuit open"))]
    async fn grpc_call(
        calls: &Cell<u32>,
        budget: &RetryBudget,
        breaker: &CircuitBreaker,
    ) -> Result<(), tonic::Status> {
        calls.set(calls.get() + 1);
        Err(refused())
    }
    #[retry(max = 3, base = "10ms", on = chain::is_transient, budget = budget, breaker = breaker)]
    async fn in_a_chain(
        calls: &Cell<u32>,
        budget: &RetryBudget,
        breaker: &CircuitBreaker,
    ) -> anyhow::Result<()> {
        calls.set(calls.get() + 1);
        Err(anyhow::Error::new(refused()).context("calling stock"))
    }

    for answer in [
        (|| marked("retry-exhausted", "exhausted")) as fn() -> Response<()>,
        || marked("x-envoy-overloaded", "true"),
    ] {
        let calls = Cell::new(0);
        let (budget, breaker) = accounting();
        let response = http(&calls, answer, &budget, &breaker).await.unwrap();
        assert_eq!(response.status(), 503);
        assert_eq!(calls.get(), 1);
        assert_gave_up_below(&budget, &breaker);
    }
    let calls = Cell::new(0);
    let (budget, breaker) = accounting();
    assert!(grpc_call(&calls, &budget, &breaker).await.is_err());
    assert_eq!(calls.get(), 1);
    assert_gave_up_below(&budget, &breaker);

    let calls = Cell::new(0);
    let (budget, breaker) = accounting();
    assert!(in_a_chain(&calls, &budget, &breaker).await.is_err());
    assert_eq!(calls.get(), 1);
    assert_gave_up_below(&budget, &breaker);

    // Unmarked, the same 503 is retried.
    let calls = Cell::new(0);
    let plain = || Response::builder().status(503).body(()).unwrap();
    let (budget, _) = accounting();
    let _ = http(&calls, plain, &budget, &CircuitBreaker::new()).await;
    assert_eq!(calls.get(), 3);
}

#[tokio::test(start_paused = true)]
async fn the_closure_api_honours_the_mark_and_tells_on_give_up() {
    let told = std::cell::RefCell::new(Vec::new());
    let calls = Cell::new(0);
    let (budget, breaker) = accounting();
    let result: Result<Response<()>, std::io::Error> = THREE
        .retrying()
        .on_ok(status::is_transient_response)
        .budget(&budget)
        .breaker(&breaker)
        .on_give_up(
            |_: &Result<Response<()>, std::io::Error>, stopped: &retry_runtime::Stopped| {
                told.borrow_mut().push(stopped.reason());
            },
        )
        .run(|| {
            calls.set(calls.get() + 1);
            async { Ok(marked("retry-exhausted", "deadline")) }
        })
        .await;
    assert_eq!(result.unwrap().status(), 503);
    assert_eq!(calls.get(), 1);
    assert_eq!(*told.borrow(), [Stop::Nested]);
    assert_gave_up_below(&budget, &breaker);
}

/// A service that counts its calls and answers `answer`.
fn answering(
    answer: fn() -> Response<()>,
) -> (
    impl Service<Request<String>, Response = Response<()>, Error = Infallible, Future: Send>
        + Clone
        + Send
        + 'static,
    Arc<AtomicU32>,
) {
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    let service = tower::service_fn(move |_: Request<String>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, Infallible>(answer()) }
    });
    (service, calls)
}

/// A gRPC answer refused by the server below: Trailers-Only,
/// `UNAVAILABLE` and a negative pushback.
fn grpc_refused() -> Response<()> {
    Response::builder()
        .header("content-type", "application/grpc")
        .header("grpc-status", "14")
        .header(grpc::PUSHBACK, "-1")
        .body(())
        .unwrap()
}

fn request() -> Request<String> {
    Request::get("http://stock.internal/")
        .body(String::new())
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn the_tower_layers_honour_each_mark() {
    for answer in [
        (|| marked("retry-exhausted", "exhausted")) as fn() -> Response<()>,
        || marked("x-envoy-overloaded", "true"),
        grpc_refused,
    ] {
        let (service, calls) = answering(answer);
        let (budget, breaker) = accounting();
        let layer = RetryLayer::new(&THREE)
            .with_budget(Arc::clone(&budget))
            .with_breaker(Arc::clone(&breaker));
        let client = ServiceBuilder::new().layer(layer).service(service);
        client.oneshot(request()).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_gave_up_below(&budget, &breaker);

        // Hedged: no other copy is started.
        let (service, calls) = answering(answer);
        let hedged = ServiceBuilder::new()
            .layer(HedgeLayer::new(
                &THREE,
                Hedge::after(Duration::from_secs(1)),
            ))
            .service(service);
        hedged.oneshot(request()).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(last_call().unwrap().reason(), Stop::Nested);

        // tower's own `Retry`, under the runtime's policy.
        static POLICY: Policy = THREE;
        static BUDGET: RetryBudget = RetryBudget::new(10, 0.1);
        let (service, calls) = answering(answer);
        let retried = ServiceBuilder::new()
            .layer(tower::retry::RetryLayer::new(
                RetryPolicy::new(&POLICY).with_budget(&BUDGET),
            ))
            .service(service);
        retried.oneshot(request()).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);

        // A breaker layer alone counts it as a failure.
        let once: &'static CircuitBreaker =
            Box::leak(Box::new(CircuitBreaker::new().with_consecutive_failures(1)));
        let (service, _) = answering(answer);
        let guarded = ServiceBuilder::new()
            .layer(CircuitBreakerLayer::new(once))
            .service(service);
        guarded.oneshot(request()).await.unwrap();
        assert_eq!(once.state(), CircuitState::Open);
    }
}

#[tokio::test(start_paused = true)]
async fn the_middleware_honours_a_marked_answer_from_a_real_server() {
    async fn handle(State(calls): State<Arc<AtomicU32>>) -> Response<axum::body::Body> {
        calls.fetch_add(1, Ordering::SeqCst);
        Response::builder()
            .status(503)
            .header("retry-exhausted", "exhausted")
            .body(axum::body::Body::empty())
            .unwrap()
    }
    let calls = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route("/", get(handle))
        .with_state(Arc::clone(&calls));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    let (budget, breaker) = accounting();
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    let middleware = RetryMiddleware::new(THREE)
        .with_budget(Arc::clone(&budget))
        .with_breaker(Arc::clone(&breaker));
    let client = reqwest_middleware::ClientBuilder::new(client)
        .with(middleware)
        .build();
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_gave_up_below(&budget, &breaker);

    // reqwest's own classifier, under the attribute.
    #[retry(max = 3, base = "10ms", on_ok = retry_runtime::classify::reqwest::is_transient_response)]
    async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
        client.get(url).send().await
    }
    let plain = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    fetch(&plain, &url).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
}

#[tokio::test(start_paused = true)]
async fn nested_retry_opts_out_of_the_http_mark_only() {
    const MULTIPLY: Policy = THREE.with_nested(Nested::Retry);
    let (service, calls) = answering(|| marked("retry-exhausted", "exhausted"));
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(&MULTIPLY))
        .service(service);
    client.oneshot(request()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 3, "retried, as asked");
    assert_eq!(last_call().unwrap().reason(), Stop::Exhausted);

    // A negative gRPC pushback is never retried (gRFC A6): a hint no policy
    // waits out, its token taken.
    let (service, calls) = answering(grpc_refused);
    let budget = Arc::new(RetryBudget::new(10, 0.1));
    let client = ServiceBuilder::new()
        .layer(RetryLayer::new(&MULTIPLY).with_budget(Arc::clone(&budget)))
        .service(service);
    client.oneshot(request()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    assert_eq!(last_call().unwrap().reason(), Stop::HintTooLong);
    assert_eq!(budget.tokens(), 9.0);
}

/// The mark climbs: a retried call inside another's attempt that gets a
/// marked answer marks that attempt, so the outer call does not retry it
/// either, even with `max = 1` below.
#[tokio::test(start_paused = true)]
async fn a_marked_answer_marks_the_enclosing_attempt() {
    #[retry(max = 1, on_ok = status::is_transient_response)]
    async fn once(calls: &Cell<u32>) -> Result<Response<()>, std::io::Error> {
        calls.set(calls.get() + 1);
        Ok(marked("retry-exhausted", "exhausted"))
    }
    #[retry(max = 3, base = "10ms", on_ok = |r: &Response<()>| r.status() == 503)]
    async fn outer(calls: &Cell<u32>) -> Result<Response<()>, std::io::Error> {
        once(calls).await
    }
    let calls = Cell::new(0);
    outer(&calls).await.unwrap();
    assert_eq!(calls.get(), 1);
    assert_eq!(last_call().unwrap().reason(), Stop::Nested);
}

#[tokio::test(start_paused = true)]
async fn a_mark_on_a_success_or_a_repeated_or_empty_mark_is_no_mark() {
    let ok = Response::builder()
        .header("retry-exhausted", "exhausted")
        .body(())
        .unwrap();
    assert!(!status::is_transient_response(&ok));
    for answer in [
        Response::builder()
            .status(503)
            .header("retry-exhausted", "")
            .body(())
            .unwrap(),
        Response::builder()
            .status(503)
            .header("retry-exhausted", "exhausted")
            .header("retry-exhausted", "deadline")
            .body(())
            .unwrap(),
    ] {
        let calls = Cell::new(0);
        let result: Result<Response<()>, std::io::Error> = THREE
            .retrying()
            .on_ok(status::is_transient_response)
            .run(|| {
                calls.set(calls.get() + 1);
                let copy =
                    Response::builder()
                        .status(answer.status())
                        .body(())
                        .map(|mut response| {
                            *response.headers_mut() = answer.headers().clone();
                            response
                        });
                async move { Ok(copy.unwrap()) }
            })
            .await;
        assert_eq!(result.unwrap().status(), 503);
        assert_eq!(calls.get(), 3, "{:?}", answer.headers());
    }
}
