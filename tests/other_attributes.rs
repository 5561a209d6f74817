//! `#[retry]` next to the attributes services put on the same functions:
//! `#[async_trait]`, `#[tracing::instrument]`, `#[tokio::test]`, `#[test]`
//! and axum's `#[debug_handler]`, in either order (`#[tokio::main]` is in
//! tests/ui/pass). Each retries the user's body, with the by-value
//! arguments the other attribute moves.

use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use retry_runtime::retry;

#[derive(Debug, PartialEq)]
struct Busy;

/// Fails until the `n`th call.
fn succeed_on(calls: &AtomicU32, n: u32) -> Result<u32, Busy> {
    let call = calls.fetch_add(1, Ordering::Relaxed) + 1;
    if call < n {
        Err(Busy)
    } else {
        Ok(call)
    }
}

#[async_trait]
trait Store {
    async fn get(&self, key: String) -> Result<u32, Busy>;

    /// A default method, retried where it is written.
    #[retry(max = 3, base = "1ms", jitter = "none")]
    async fn get_default(&self, key: String) -> Result<u32, Busy> {
        assert_eq!(key, "k");
        succeed_on(self.calls(), 3)
    }

    fn calls(&self) -> &AtomicU32;
}

struct Remote {
    calls: AtomicU32,
}

#[async_trait]
impl Store for Remote {
    #[retry(max = 3, base = "1ms", jitter = "none")]
    async fn get(&self, key: String) -> Result<u32, Busy> {
        assert_eq!(key, "k");
        succeed_on(&self.calls, 2)
    }

    fn calls(&self) -> &AtomicU32 {
        &self.calls
    }
}

/// By value and `mut` under `#[async_trait]`: moved into its future once,
/// then borrowed, or copied afresh, by each attempt.
struct Sink;

#[async_trait]
trait Outbox {
    async fn send(&self, batch: Vec<u32>, calls: &AtomicU32) -> Result<Vec<u32>, Busy>;
}

#[async_trait]
impl Outbox for Sink {
    #[retry(max = 3, base = "1ms", jitter = "none")]
    async fn send(&self, mut batch: Vec<u32>, calls: &AtomicU32) -> Result<Vec<u32>, Busy> {
        let sent = std::mem::take(&mut batch);
        succeed_on(calls, 2).map(|_| sent)
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_methods_and_default_methods_are_retried() {
    let remote = Remote {
        calls: AtomicU32::new(0),
    };
    assert_eq!(remote.get("k".to_owned()).await, Ok(2));
    remote.calls.store(0, Ordering::Relaxed);
    assert_eq!(remote.get_default("k".to_owned()).await, Ok(3));
    let store: &dyn Store = &remote;
    remote.calls.store(0, Ordering::Relaxed);
    // Boxed futures of `#[async_trait]` are `Send`: spawnable.
    let calls = AtomicU32::new(0);
    assert_eq!(Sink.send(vec![1, 2], &calls).await, Ok(vec![1, 2]));
    assert_eq!(store.get("k".to_owned()).await, Ok(2));
}

#[tracing::instrument(skip(calls))]
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn instrument_above(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[tracing::instrument(skip(calls), err(Debug), ret)]
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn instrument_above_recording(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[retry(max = 3, base = "1ms", jitter = "none")]
#[tracing::instrument(skip(calls), err(Debug))]
async fn instrument_below(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[retry(max = 3, base = "1ms", jitter = "none")]
#[tracing::instrument(skip(calls))]
fn instrument_below_blocking(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[tokio::test(start_paused = true)]
async fn tracing_instrument_works_above_and_below() {
    static CALLS: [AtomicU32; 3] = [AtomicU32::new(0), AtomicU32::new(0), AtomicU32::new(0)];
    // Spawned: each is still `Send` with its by-value argument.
    let above = tokio::spawn(instrument_above("n".to_owned(), &CALLS[0]));
    let recording = tokio::spawn(instrument_above_recording("n".to_owned(), &CALLS[1]));
    let below = tokio::spawn(instrument_below("n".to_owned(), &CALLS[2]));
    assert_eq!(above.await.unwrap(), Ok(3));
    assert_eq!(recording.await.unwrap(), Ok(3));
    assert_eq!(below.await.unwrap(), Ok(3));
    let calls = AtomicU32::new(0);
    assert_eq!(instrument_below_blocking("n".to_owned(), &calls), Ok(3));
}

static TOKIO_TEST_ABOVE: AtomicU32 = AtomicU32::new(0);
static TOKIO_TEST_BELOW: AtomicU32 = AtomicU32::new(0);
static TEST_ABOVE: AtomicU32 = AtomicU32::new(0);
static TEST_BELOW: AtomicU32 = AtomicU32::new(0);

/// The test itself is retried: it fails once, then passes.
#[tokio::test]
#[retry(max = 2, base = "1ms")]
async fn tokio_test_above_retry() -> Result<(), Busy> {
    succeed_on(&TOKIO_TEST_ABOVE, 2).map(drop)
}

#[retry(max = 2, base = "1ms")]
#[tokio::test]
async fn tokio_test_below_retry() -> Result<(), Busy> {
    succeed_on(&TOKIO_TEST_BELOW, 2).map(drop)
}

#[test]
#[retry(max = 2, base = "1ms")]
fn test_above_retry() -> Result<(), Busy> {
    succeed_on(&TEST_ABOVE, 2).map(drop)
}

#[retry(max = 2, base = "1ms")]
#[test]
fn test_below_retry() -> Result<(), Busy> {
    succeed_on(&TEST_BELOW, 2).map(drop)
}

mod debug_handler {
    use std::sync::atomic::{AtomicU32, Ordering};

    use axum::debug_handler;
    use axum::extract::Request;
    use axum::http::StatusCode;
    use axum::routing::get;
    use axum::Router;
    use retry_runtime::retry;

    static ABOVE: AtomicU32 = AtomicU32::new(0);
    static BELOW: AtomicU32 = AtomicU32::new(0);

    fn first_fails(calls: &AtomicU32, request: &Request) -> Result<String, StatusCode> {
        if calls.fetch_add(1, Ordering::Relaxed) == 0 {
            return Err(StatusCode::SERVICE_UNAVAILABLE);
        }
        Ok(request.uri().path().to_owned())
    }

    #[debug_handler]
    #[retry(max = 2, base = "1ms")]
    async fn above(request: Request) -> Result<String, StatusCode> {
        first_fails(&ABOVE, &request)
    }

    #[retry(max = 2, base = "1ms")]
    #[debug_handler]
    async fn below(request: Request) -> Result<String, StatusCode> {
        first_fails(&BELOW, &request)
    }

    #[tokio::test]
    async fn debug_handler_works_above_and_below() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new()
            .route("/above", get(above))
            .route("/below", get(below));
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        for path in ["/above", "/below"] {
            let body = reqwest::get(format!("http://{address}{path}"))
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert_eq!(body, path);
        }
        assert_eq!(ABOVE.load(Ordering::Relaxed), 2);
        assert_eq!(BELOW.load(Ordering::Relaxed), 2);
        server.abort();
    }
}

#[tracing::instrument(skip(calls), err(Debug))]
#[retry(max = 3, base = "1ms", jitter = "none")]
fn instrument_above_blocking_recording(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[tracing::instrument(skip(calls))]
#[retry(max = 3, base = "1ms", jitter = "none")]
fn instrument_above_blocking(name: String, calls: &AtomicU32) -> Result<u32, Busy> {
    assert_eq!(name, "n");
    succeed_on(calls, 3)
}

#[test]
fn tracing_instrument_works_above_a_plain_fn() {
    let calls = AtomicU32::new(0);
    assert_eq!(instrument_above_blocking("n".to_owned(), &calls), Ok(3));
    let calls = AtomicU32::new(0);
    assert_eq!(
        instrument_above_blocking_recording("n".to_owned(), &calls),
        Ok(3)
    );
}

/// Under `#[tracing::instrument]`, a by-value argument that is `Send` but
/// not `Sync` keeps the future `Send`, and a `mut` one is fresh each attempt.
#[tracing::instrument(skip_all)]
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn instrument_above_send(
    counter: std::cell::Cell<u32>,
    mut batch: Vec<u32>,
) -> Result<Vec<u32>, Busy> {
    counter.set(counter.get() + 1);
    let sent = std::mem::take(&mut batch);
    if counter.get() < 2 {
        return Err(Busy);
    }
    Ok(sent)
}

#[tokio::test(start_paused = true)]
async fn tracing_instrument_above_keeps_send_and_fresh_arguments() {
    let outcome = tokio::spawn(instrument_above_send(std::cell::Cell::new(0), vec![1, 2]))
        .await
        .unwrap();
    assert_eq!(outcome, Ok(vec![1, 2]));
}
