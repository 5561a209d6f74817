//! A retried `async fn` is `Send` whenever the original is, including with
//! by-value arguments that are `Send` but not `Sync` (DESIGN 4.10): each
//! attempt captures them by unique borrow, and `&mut T: Send` needs only
//! `T: Send`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};

use retry_runtime::retry;
use tokio::sync::mpsc;

#[derive(Debug, PartialEq)]
struct Empty;

/// `mpsc::Receiver` is `Send` but not `Sync`.
#[retry(max = 3, base = "1ms", jitter = "none")]
async fn drain(rx: mpsc::Receiver<u32>, calls: &AtomicU32) -> Result<u32, Empty> {
    calls.fetch_add(1, Ordering::Relaxed);
    if rx.is_closed() {
        return Err(Empty);
    }
    Ok(u32::try_from(rx.len()).unwrap_or(u32::MAX))
}

#[tokio::test(start_paused = true)]
async fn a_moved_receiver_can_be_spawned() {
    let (tx, rx) = mpsc::channel(1);
    drop(tx);
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let outcome = tokio::spawn(drain(rx, &CALLS)).await.unwrap();
    assert_eq!(outcome, Err(Empty));
    assert_eq!(CALLS.load(Ordering::Relaxed), 3);
}

/// `Cell` is `Send` and never `Sync`.
#[retry(max = 2, base = "1ms")]
async fn count<T: Send>(value: T, counter: Cell<u32>) -> Result<u32, Empty> {
    let _ = &value;
    counter.set(counter.get() + 1);
    if counter.get() < 2 {
        return Err(Empty);
    }
    Ok(counter.get())
}

#[tokio::test(start_paused = true)]
async fn a_generic_send_argument_keeps_the_future_send() {
    fn spawnable<F: std::future::Future + Send + 'static>(future: F) -> F {
        future
    }
    let outcome = tokio::spawn(spawnable(count(Cell::new(1_u8), Cell::new(0))))
        .await
        .unwrap();
    assert_eq!(outcome, Ok(2));
}

mod axum_handler {
    use std::sync::atomic::{AtomicU32, Ordering};

    use axum::extract::Request;
    use axum::http::StatusCode;
    use axum::routing::get;
    use axum::Router;
    use retry_runtime::retry;

    static CALLS: AtomicU32 = AtomicU32::new(0);

    /// An axum `Request` is `Send` but not `Sync`: the handler must stay a
    /// `Handler`, whose future must be `Send`.
    #[retry(max = 3, base = "1ms", jitter = "none")]
    async fn handler(request: Request) -> Result<String, StatusCode> {
        if CALLS.fetch_add(1, Ordering::Relaxed) == 0 {
            return Err(StatusCode::SERVICE_UNAVAILABLE);
        }
        Ok(format!("path {}", request.uri().path()))
    }

    #[tokio::test]
    async fn a_handler_taking_a_request_is_served() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let app = Router::new().route("/hello", get(handler));
        let server = tokio::spawn(async move { axum::serve(listener, app).await });
        let body = reqwest::get(format!("http://{address}/hello"))
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        assert_eq!(body, "path /hello");
        assert_eq!(CALLS.load(Ordering::Relaxed), 2);
        server.abort();
    }
}

/// A destructuring pattern: each binding is captured as a plain argument is.
#[retry(max = 2, base = "1ms")]
async fn destructured((counter, step): (Cell<u32>, u32)) -> Result<u32, Empty> {
    counter.set(counter.get() + step);
    if counter.get() < 2 * step {
        return Err(Empty);
    }
    Ok(counter.get())
}

#[tokio::test(start_paused = true)]
async fn destructured_send_arguments_keep_the_future_send() {
    let outcome = tokio::spawn(destructured((Cell::new(0), 3))).await.unwrap();
    assert_eq!(outcome, Ok(6));
}

/// A worker owning a `Cell`: `self` by value is `Send` but not `Sync`.
struct Worker {
    done: Cell<u32>,
}

impl Worker {
    #[retry(max = 2, base = "1ms", jitter = "none")]
    async fn run(self, calls: &'static AtomicU32) -> Result<u32, Empty> {
        if calls.fetch_add(1, Ordering::Relaxed) == 0 {
            return Err(Empty);
        }
        Ok(self.done.get())
    }
}

#[tokio::test(start_paused = true)]
async fn a_method_taking_self_by_value_can_be_spawned() {
    static CALLS: AtomicU32 = AtomicU32::new(0);
    let worker = Worker { done: Cell::new(5) };
    assert_eq!(tokio::spawn(worker.run(&CALLS)).await.unwrap(), Ok(5));
    assert_eq!(CALLS.load(Ordering::Relaxed), 2);
}

/// An error type that is not `Send` (`Rc`): the outcome is dropped before
/// each wait, so the future stays `Send`, with every key that sees the
/// outcome (the rules, the hooks, a time limit, a deadline).
#[retry(
    max = 2,
    base = "1ms",
    timeout = "1s",
    deadline = "10s",
    on = |e: &std::rc::Rc<u32>| **e > 0,
    on_ok = |v: &u32| *v == 0,
    on_retry = |_, _, _| (),
    on_give_up = |_, _| (),
    timed_out = |_| std::rc::Rc::new(0),
)]
async fn rc_error(fail: bool) -> Result<u32, std::rc::Rc<u32>> {
    if fail {
        Err(std::rc::Rc::new(1))
    } else {
        Ok(1)
    }
}

#[tokio::test(start_paused = true)]
async fn an_error_that_is_not_send_keeps_the_future_send() {
    fn spawnable<T: Send>(call: T) -> T {
        call
    }
    let answer = tokio::spawn(async {
        let outcome = spawnable(rc_error(true)).await;
        (
            outcome.is_err(),
            retry_runtime::last_call().map(|last| last.attempts()),
        )
    })
    .await
    .unwrap();
    assert_eq!(answer, (true, Some(2)));
}
