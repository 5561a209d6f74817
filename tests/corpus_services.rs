//! Corpus: handlers, clients and workers written as services write them: an
//! axum handler retried where it stands, a spawned worker with `&mut self`,
//! a client struct that owns its breaker, a gRPC client with a foreign error
//! type, a fallback that handles an inner give-up with `unwrap_or_default`,
//! and one breaker named on two layers. Plus two more ports.
use std::io;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use retry_runtime::{retry, CircuitBreaker, CircuitOpen, CircuitState, Policy, TimedOut};
use tonic::{Code, Status};

#[path = "corpus/support.rs"]
mod support;
use support::{assert_send, Dep};

#[derive(Debug)]
enum AppError {
    Db(u32),
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let AppError::Db(n) = self;
        (
            StatusCode::SERVICE_UNAVAILABLE,
            format!("db failed {n} times"),
        )
            .into_response()
    }
}

#[derive(Clone)]
struct AppState {
    db: Arc<Dep>,
}

/// The handler itself is retried: extractor patterns by value, `State` and `Path`.
#[retry(max = 3, base = "10ms")]
async fn get_item(State(state): State<AppState>, Path(id): Path<u32>) -> Result<String, AppError> {
    let n = state.db.call().map_err(AppError::Db)?;
    Ok(format!("item {id} (query {n})"))
}

#[tokio::test(start_paused = true)]
async fn axum_handler_retried_in_place() {
    let db = Arc::new(Dep::failing(2));
    let router = Router::new()
        .route("/items/{id}", get(get_item))
        .with_state(AppState {
            db: Arc::clone(&db),
        });
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });

    let body = reqwest::get(format!("http://{addr}/items/5"))
        .await
        .unwrap();
    assert_eq!(body.text().await.unwrap(), "item 5 (query 3)");
    assert_eq!(db.calls(), 3);

    let future = get_item(
        State(AppState {
            db: Arc::new(Dep::failing(9)),
        }),
        Path(1),
    );
    assert_send(&future);
    assert!(matches!(future.await, Err(AppError::Db(3))));
}

/// A batching writer owned by a spawned task.
struct Flusher {
    pending: Vec<u32>,
    sink: Dep,
    written: Vec<u32>,
}

impl Flusher {
    #[retry(max = 4, base = "100ms", on = |e: &io::Error| e.kind() == io::ErrorKind::WouldBlock)]
    async fn flush(&mut self) -> io::Result<usize> {
        self.sink
            .call()
            .map_err(|_| io::Error::from(io::ErrorKind::WouldBlock))?;
        let n = self.pending.len();
        self.written.append(&mut self.pending);
        Ok(n)
    }
}

#[tokio::test(start_paused = true)]
async fn spawned_worker_with_mut_self() {
    let (tx, mut rx) = tokio::sync::mpsc::channel::<u32>(8);
    let worker = tokio::spawn(async move {
        let mut flusher = Flusher {
            pending: Vec::new(),
            sink: Dep::failing(2),
            written: Vec::new(),
        };
        while let Some(item) = rx.recv().await {
            flusher.pending.push(item);
            if flusher.pending.len() == 2 {
                flusher.flush().await.unwrap();
            }
        }
        (flusher.written, flusher.sink.calls())
    });
    for item in 1..=4 {
        tx.send(item).await.unwrap();
    }
    drop(tx);
    assert_eq!(worker.await.unwrap(), (vec![1, 2, 3, 4], 4));
}

#[derive(Debug, PartialEq, Eq)]
enum ClientError {
    Backend(u32),
    Open,
}

impl From<CircuitOpen> for ClientError {
    fn from(_: CircuitOpen) -> Self {
        ClientError::Open
    }
}

struct UserClient {
    breaker: CircuitBreaker,
    backend: Dep,
}

impl UserClient {
    #[retry(max = 3, base = "10ms", breaker = &self.breaker)]
    async fn get_user(&self, id: u32) -> Result<String, ClientError> {
        let n = self.backend.call().map_err(ClientError::Backend)?;
        Ok(format!("user {id} ({n})"))
    }
}

#[tokio::test(start_paused = true)]
async fn client_struct_owns_its_breaker() {
    let client = UserClient {
        breaker: CircuitBreaker::new()
            .with_consecutive_failures(3)
            .with_open_for(Duration::from_secs(5))
            .with_close_after(1)
            .with_name("users"),
        backend: Dep::failing(3),
    };
    let future = client.get_user(1);
    assert_send(&future);
    // Three failures: the call's own error comes back, and the circuit opens.
    assert_eq!(future.await, Err(ClientError::Backend(3)));
    assert_eq!(client.breaker.state(), CircuitState::Open);
    // Refused without a call.
    assert_eq!(client.get_user(1).await, Err(ClientError::Open));
    assert_eq!(client.backend.calls(), 3);
    // Later the dependency is back: the probe goes through and closes it.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(client.get_user(2).await, Ok("user 2 (4)".to_owned()));
    assert_eq!(client.breaker.state(), CircuitState::Closed);
}

struct GreeterClient {
    breaker: CircuitBreaker,
    server: Dep,
    hang_first: Dep,
}

impl GreeterClient {
    /// A gRPC client: `tonic::Status` cannot implement `From<TimedOut>` or
    /// `From<CircuitOpen>` here, so the keys say how those fail.
    #[retry(
        max = 3,
        base = "10ms",
        timeout = "1s",
        breaker = &self.breaker,
        on = |s: &Status| matches!(s.code(), Code::Unavailable | Code::DeadlineExceeded),
        timed_out = |_: TimedOut| Status::deadline_exceeded("attempt timed out"),
        circuit_open = |_: CircuitOpen| Status::unavailable("circuit open")
    )]
    async fn say_hello(&self, name: &str) -> Result<String, Status> {
        if self.hang_first.call().is_err() {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        self.server
            .call()
            .map_err(|n| Status::unavailable(format!("overloaded ({n})")))?;
        Ok(format!("Hello {name}!"))
    }
}

#[tokio::test(start_paused = true)]
async fn grpc_client_with_a_foreign_error_type() {
    let client = GreeterClient {
        breaker: CircuitBreaker::new().with_consecutive_failures(3),
        server: Dep::failing(1),
        hang_first: Dep::failing(1),
    };
    let future = client.say_hello("corpus");
    assert_send(&future);
    // Attempt 1 is cut off, attempt 2 is refused by the server, attempt 3 answers.
    assert_eq!(future.await.unwrap(), "Hello corpus!");
    assert_eq!(client.server.calls(), 2);

    let down = GreeterClient {
        breaker: CircuitBreaker::new().with_consecutive_failures(3),
        server: Dep::failing(100),
        hang_first: Dep::default(),
    };
    assert_eq!(
        down.say_hello("a").await.unwrap_err().code(),
        Code::Unavailable
    );
    let refused = down.say_hello("b").await.unwrap_err();
    assert_eq!(
        (refused.code(), refused.message()),
        (Code::Unavailable, "circuit open")
    );
    assert_eq!(down.server.calls(), 3);
}

impl GreeterClient {
    /// `say_hello`'s body, unretried: what a tonic client retries.
    async fn say_hello_once(&self, name: &str) -> Result<String, Status> {
        if self.hang_first.call().is_err() {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        self.server
            .call()
            .map_err(|n| Status::unavailable(format!("overloaded ({n})")))?;
        Ok(format!("Hello {name}!"))
    }

    /// The closure API's twin of `say_hello`, `tonic::Status` kept: the
    /// timeout makes a `Policy<TimedOut>`, so `timed_out` says how a cut-off
    /// attempt fails, and `breaker_with` how a refused call does.
    async fn say_hello_by_closure(&self, name: &str) -> Result<String, Status> {
        Policy::new()
            .with_max_attempts(3)
            .with_base(Duration::from_millis(10))
            .with_timeout(Duration::from_secs(1))
            .timed_out(|_| Status::deadline_exceeded("attempt timed out"))
            .on(|s: &Status| matches!(s.code(), Code::Unavailable | Code::DeadlineExceeded))
            .breaker_with(&self.breaker, |_| Status::unavailable("circuit open"))
            .run(|| self.say_hello_once(name))
            .await
    }
}

#[tokio::test(start_paused = true)]
async fn twin_grpc_client_with_a_foreign_error_type() {
    let client = |failures, hang| GreeterClient {
        breaker: CircuitBreaker::new().with_consecutive_failures(3),
        server: Dep::failing(failures),
        hang_first: Dep::failing(hang),
    };
    let (by_attribute, by_closure) = (client(1, 1), client(1, 1));
    let attribute = by_attribute.say_hello("corpus").await;
    let future = by_closure.say_hello_by_closure("corpus");
    assert_send(&future);
    assert_eq!(future.await.unwrap(), attribute.unwrap());
    assert_eq!(
        (by_closure.server.calls(), by_attribute.server.calls()),
        (2, 2)
    );

    let (by_attribute, by_closure) = (client(100, 0), client(100, 0));
    for name in ["a", "b"] {
        let attribute = by_attribute.say_hello(name).await.unwrap_err();
        let closure = by_closure.say_hello_by_closure(name).await.unwrap_err();
        assert_eq!(
            (closure.code(), closure.message()),
            (attribute.code(), attribute.message())
        );
    }
    assert_eq!(
        (by_closure.server.calls(), by_attribute.server.calls()),
        (3, 3)
    );
}

#[derive(Debug, PartialEq, Eq)]
struct Unavailable(u32);

#[retry(max = 2, base = "1ms")]
async fn recommendations(service: &Dep) -> Result<Vec<u32>, Unavailable> {
    service.call().map(|n| vec![n]).map_err(Unavailable)
}

async fn query(db: &Dep) -> Result<u32, Unavailable> {
    tokio::task::yield_now().await;
    db.call().map_err(Unavailable)
}

/// The page degrades to no recommendations, but fails on its own database.
#[retry(max = 3, base = "1ms")]
async fn home_page(recs: &Dep, db: &Dep) -> Result<(Vec<u32>, u32), Unavailable> {
    let shown = recommendations(recs).await.unwrap_or_default();
    let user = query(db).await?;
    Ok((shown, user))
}

/// The same page failing a synchronous check right after the fallback:
/// nothing pends in between, so (docs/nesting.md, first row of the table)
/// the handled give-up is taken for a propagated one and not retried.
#[retry(max = 3, base = "1ms")]
async fn home_page_sync_check(recs: &Dep, cache: &Dep) -> Result<(Vec<u32>, u32), Unavailable> {
    let shown = recommendations(recs).await.unwrap_or_default();
    let user = cache.call().map_err(Unavailable)?;
    Ok((shown, user))
}

/// The same inner give-up, propagated: not retried again at this layer.
#[retry(max = 3, base = "1ms")]
async fn strict_page(recs: &Dep, db: &Dep) -> Result<(Vec<u32>, u32), Unavailable> {
    let shown = recommendations(recs).await?;
    let user = db.call().map_err(Unavailable)?;
    Ok((shown, user))
}

#[tokio::test(start_paused = true)]
async fn fallback_with_unwrap_or_default() {
    let (recs, db) = (Dep::failing(100), Dep::failing(1));
    let future = home_page(&recs, &db);
    assert_send(&future);
    assert_eq!(future.await, Ok((vec![], 2)));
    // Two outer attempts, each with two inner calls; the handled give-up did
    // not stop the outer retry of the page's own failure.
    assert_eq!((recs.calls(), db.calls()), (4, 2));

    let (recs, cache) = (Dep::failing(100), Dep::failing(1));
    assert_eq!(
        home_page_sync_check(&recs, &cache).await,
        Err(Unavailable(1))
    );
    assert_eq!((recs.calls(), cache.calls()), (2, 1));

    let (recs, db) = (Dep::failing(100), Dep::default());
    assert_eq!(strict_page(&recs, &db).await, Err(Unavailable(2)));
    assert_eq!((recs.calls(), db.calls()), (2, 0));
}

#[derive(Debug, PartialEq, Eq)]
enum PayError {
    Declined(u32),
    Open,
}

impl From<CircuitOpen> for PayError {
    fn from(_: CircuitOpen) -> Self {
        PayError::Open
    }
}

static PAYMENTS: CircuitBreaker = CircuitBreaker::new()
    .with_consecutive_failures(2)
    .with_open_for(Duration::from_secs(5))
    .with_close_after(1)
    .with_name("payments");

#[retry(max = 2, base = "1ms", breaker = &PAYMENTS)]
async fn charge_card(gateway: &Dep) -> Result<u32, PayError> {
    gateway.call().map_err(PayError::Declined)
}

#[retry(max = 2, base = "1ms", breaker = &PAYMENTS)]
async fn checkout(gateway: &Dep) -> Result<u32, PayError> {
    charge_card(gateway).await
}

#[tokio::test(start_paused = true)]
async fn one_breaker_named_on_two_layers() {
    let gateway = Dep::failing(1);
    let future = checkout(&gateway);
    assert_send(&future);
    assert_eq!(future.await, Ok(2));
    assert_eq!(PAYMENTS.state(), CircuitState::Closed);

    // An outage opens it; once the gateway is back, one call closes it again.
    // Each checkout is one outcome for the breaker (the inner call runs under
    // the outer attempt's permit, docs/breaker.md): two failed checkouts open it.
    let gateway = Dep::failing(4);
    assert_eq!(checkout(&gateway).await, Err(PayError::Declined(2)));
    assert_eq!(checkout(&gateway).await, Err(PayError::Declined(4)));
    assert_eq!(PAYMENTS.state(), CircuitState::Open);
    assert_eq!(checkout(&gateway).await, Err(PayError::Open));
    assert_eq!(gateway.calls(), 4);
    tokio::time::sleep(Duration::from_secs(60)).await;
    let gateway = Dep::default();
    assert_eq!(checkout(&gateway).await, Ok(1));
    assert_eq!(PAYMENTS.state(), CircuitState::Closed);
}

// Port of the client bring-up in aranya-project's test harness (backon ExponentialBuilder
// around `Client::builder()...connect()`, then `.context("unable to init client")`;
// find_string id 36275623038).
#[retry(max = 4, base = "1s", cap = "60s")]
async fn connect_client(daemon: &Dep, uds_path: &std::path::Path) -> anyhow::Result<String> {
    let n = daemon
        .call()
        .map_err(|_| anyhow::anyhow!("daemon socket {} not ready", uds_path.display()))?;
    Ok(format!("client {n}"))
}

async fn init_device(daemon: &Dep) -> anyhow::Result<String> {
    use anyhow::Context as _;
    connect_client(daemon, std::path::Path::new("/tmp/uds.sock"))
        .await
        .context("unable to init client")
}

#[tokio::test(start_paused = true)]
async fn harness_waits_for_the_daemon() {
    let daemon = Dep::failing(2);
    let future = init_device(&daemon);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "client 3");
    let daemon = Dep::failing(9);
    let err = init_device(&daemon).await.unwrap_err();
    assert_eq!(err.to_string(), "unable to init client");
    assert_eq!(daemon.calls(), 4);
}

struct Subscriber {
    store: Dep,
}

impl Subscriber {
    // Port of `SubscribeBuilder::read` retried in evento's subscription loop (backon
    // ExponentialBuilder with `.sleep(tokio::time::sleep)` and an error `.notify`, inside
    // a spawned interval loop; find_string id 13308412787).
    #[retry(max = 4, base = "1s", cap = "60s", on_retry = |err: &String, _, wait| eprintln!("read '{err}' sleeping='{wait:?}'"))]
    async fn read(&self, executor: &str) -> Result<Vec<String>, String> {
        let n = self
            .store
            .call()
            .map_err(|n| format!("{executor}: read {n} failed"))?;
        Ok(vec![format!("event {n}")])
    }
}

#[tokio::test(start_paused = true)]
async fn spawned_interval_loop_reads_with_retries() {
    let subscriber = Arc::new(Subscriber {
        store: Dep::failing(2),
    });
    let task = {
        let subscriber = Arc::clone(&subscriber);
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(Duration::from_millis(300));
            let mut seen = Vec::new();
            for _ in 0..2 {
                interval.tick().await;
                let Ok(data) = subscriber.read("pg").await else {
                    continue;
                };
                seen.extend(data);
            }
            seen
        })
    };
    assert_eq!(task.await.unwrap(), ["event 3", "event 4"]);
}
