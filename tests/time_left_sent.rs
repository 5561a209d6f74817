//! Every attempt the tower layer, the reqwest middleware and a tonic channel
//! under the layer send carries its number and the time it has left
//! (DESIGN §4.17): the nearer of its call's deadline and an enclosing
//! attempt's (an outer `#[retry]`, a handler under `ServerLayer`); the
//! layers' policies cut no attempt off of their own. HTTP:
//! `x-envoy-attempt-count` on every attempt and
//! `x-envoy-expected-rq-timeout-ms`; gRPC: one `grpc-timeout` and
//! `grpc-previous-rpc-attempts` on retries. Real servers on 127.0.0.1.

#[path = "support/grpc.rs"]
mod grpc_server;

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use bytes::Bytes;
use http::{HeaderMap, Request, Response, StatusCode};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{RetryLayer, ServerLayer};
use retry_runtime::{retry, Jitter, Policy};
use tonic::server::NamedService;
use tonic::{Code, Status};
use tower::{Service, ServiceBuilder, ServiceExt};

const ATTEMPT: &str = "x-envoy-attempt-count";
const LEFT: &str = "x-envoy-expected-rq-timeout-ms";

/// Three attempts, 100 ms then 200 ms apart.
const THREE: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(100))
    .with_jitter(Jitter::None);

/// The headers each request arrived with.
#[derive(Clone, Default)]
struct Seen(Arc<Mutex<Vec<HeaderMap>>>);

impl Seen {
    fn note(&self, headers: &HeaderMap) {
        self.0.lock().unwrap().push(headers.clone());
    }

    /// `name`'s values, one a request, `-` where it was absent.
    fn values(&self, name: &str) -> Vec<String> {
        self.0
            .lock()
            .unwrap()
            .iter()
            .map(|headers| {
                let values: Vec<_> = headers.get_all(name).iter().collect();
                assert!(values.len() <= 1, "{name} sent {} times", values.len());
                values
                    .first()
                    .map_or("-".to_owned(), |value| value.to_str().unwrap().to_owned())
            })
            .collect()
    }
}

/// An axum server that notes each request's headers and answers 503.
async fn failing_server() -> (String, Seen) {
    async fn handle(State(seen): State<Seen>, headers: HeaderMap) -> StatusCode {
        seen.note(&headers);
        StatusCode::SERVICE_UNAVAILABLE
    }
    let seen = Seen::default();
    let router = Router::new()
        .route("/", get(handle))
        .with_state(seen.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });
    (url, seen)
}

fn middleware_client(policy: Policy) -> reqwest_middleware::ClientWithMiddleware {
    // No idle connections, whose timers would move the paused clock.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    reqwest_middleware::ClientBuilder::new(client)
        .with(RetryMiddleware::new(policy))
        .build()
}

#[tokio::test(start_paused = true)]
async fn the_middleware_sends_each_attempts_number_and_time_left() {
    let (url, seen) = failing_server().await;
    let client = middleware_client(THREE.with_deadline(Duration::from_secs(1)));
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(seen.values(ATTEMPT), ["1", "2", "3"]);
    assert_eq!(seen.values(LEFT), ["1000", "900", "700"]);
}

#[tokio::test(start_paused = true)]
async fn no_deadline_and_no_timeout_send_no_time() {
    let (url, seen) = failing_server().await;
    middleware_client(THREE).get(&url).send().await.unwrap();
    assert_eq!(seen.values(ATTEMPT), ["1", "2", "3"]);
    assert_eq!(seen.values(LEFT), ["-", "-", "-"]);
}

#[tokio::test(start_paused = true)]
async fn a_call_inside_an_outer_retry_sends_the_outer_deadline() {
    #[retry(max = 2, base = "1s", jitter = "none", deadline = "500ms", on_ok = |r: &reqwest::Response| r.status() == 503)]
    async fn outer(
        client: &reqwest_middleware::ClientWithMiddleware,
        url: &str,
    ) -> reqwest_middleware::Result<reqwest::Response> {
        client.get(url).send().await
    }
    let (url, seen) = failing_server().await;
    let client = middleware_client(THREE.with_deadline(Duration::from_secs(10)));
    outer(&client, &url).await.unwrap();
    // The inner call's own waits (100, 200 ms) fit in the outer 500 ms.
    assert_eq!(seen.values(LEFT), ["500", "400", "200"]);
}

#[tokio::test(start_paused = true)]
async fn a_handler_under_the_server_layer_sends_its_callers_deadline() {
    let (dependency, seen) = failing_server().await;
    let client = middleware_client(THREE);
    let handler = tower::service_fn(move |_: Request<()>| {
        let request = client.get(&dependency);
        async move {
            let status = request.send().await.unwrap().status();
            Ok::<_, Infallible>(Response::builder().status(status).body(()).unwrap())
        }
    });
    let server = ServiceBuilder::new()
        .layer(ServerLayer::new())
        .service(handler);
    let request = Request::get("/").header(LEFT, "250").body(()).unwrap();
    let response = server.oneshot(request).await.unwrap();
    assert_eq!(response.status(), 503);
    // The 200 ms wait before a third attempt would pass 250 ms.
    assert_eq!(seen.values(LEFT), ["250", "150"]);
    assert_eq!(response.headers()["retry-exhausted"], "deadline");
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_sends_each_attempts_number_and_time_left() {
    let seen = Seen::default();
    let noted = seen.clone();
    let service = tower::service_fn(move |request: Request<String>| {
        noted.note(request.headers());
        async {
            let response = Response::builder().status(503).body(()).unwrap();
            Ok::<_, Infallible>(response)
        }
    });
    let mut client = ServiceBuilder::new()
        .layer(RetryLayer::new(Arc::new(
            THREE.with_deadline(Duration::from_secs(1)),
        )))
        .service(service);
    let request = Request::get("http://example.com/")
        .header(LEFT, "5")
        .body(String::new())
        .unwrap();
    let response = client.ready().await.unwrap().call(request).await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(seen.values(ATTEMPT), ["1", "2", "3"]);
    assert_eq!(seen.values(LEFT), ["1000", "900", "700"]);
}

/// `test.Echo`, noting the headers each call arrives with.
#[derive(Clone, Default)]
struct Noting {
    echo: grpc_server::Echo,
    seen: Seen,
}

impl NamedService for Noting {
    const NAME: &'static str = "test.Echo";
}

impl Service<Request<tonic::body::Body>> for Noting {
    type Response = Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        self.seen.note(request.headers());
        self.echo.call(request)
    }
}

async fn say_through_the_layer(policy: Policy, timeout: Option<Duration>) -> Seen {
    let noting = Noting::default();
    noting.echo.script.lock().unwrap().extend([
        grpc_server::status(Code::Unavailable, None),
        grpc_server::status(Code::Unavailable, None),
    ]);
    let channel = grpc_server::serve_service(noting.clone()).await;
    let channel = ServiceBuilder::new()
        .layer(RetryLayer::new(Arc::new(policy)))
        .service(channel);
    let mut request = tonic::Request::new(Bytes::from_static(b"hello"));
    if let Some(timeout) = timeout {
        request.set_timeout(timeout);
    }
    let answer: Result<Bytes, Status> = grpc_server::say(channel, request).await;
    assert_eq!(answer.unwrap(), "hello");
    noting.seen
}

#[tokio::test(start_paused = true)]
async fn a_tonic_channel_under_the_layer_sends_one_grpc_timeout_and_the_attempts_before() {
    let seen = say_through_the_layer(THREE.with_deadline(Duration::from_millis(800)), None).await;
    assert_eq!(
        seen.values("grpc-timeout"),
        ["800000u", "700000u", "500000u"]
    );
    assert_eq!(seen.values("grpc-previous-rpc-attempts"), ["-", "1", "2"]);
    assert_eq!(
        seen.values(ATTEMPT),
        ["-", "-", "-"],
        "HTTP's headers are not sent"
    );
    assert_eq!(seen.values(LEFT), ["-", "-", "-"]);

    // tonic's own timeout, nearer than the policy's deadline: the smaller.
    let policy = THREE.with_deadline(Duration::from_secs(10));
    let seen = say_through_the_layer(policy, Some(Duration::from_millis(600))).await;
    assert_eq!(
        seen.values("grpc-timeout"),
        ["600000u", "500000u", "300000u"]
    );

    // Neither: no time.
    let seen = say_through_the_layer(THREE, None).await;
    assert_eq!(seen.values("grpc-timeout"), ["-", "-", "-"]);
    assert_eq!(seen.values("grpc-previous-rpc-attempts"), ["-", "1", "2"]);
}
