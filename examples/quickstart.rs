//! `cargo run --example quickstart`
//!
//! A real HTTP server on 127.0.0.1 whose endpoints fail in scripted ways, and
//! a real HTTP client (reqwest) calling them through one `#[retry]` function.
//! For each case it prints every attempt, each wait and why the call
//! stopped, then the outcome. It takes about two seconds.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use retry_runtime::{classify::reqwest as transient, current_attempt, retry, Stop, Stopped};
use tokio::time::Instant;

/// How many times each endpoint has been called.
#[derive(Default)]
struct Calls {
    flaky: AtomicU32,
    rate_limited: AtomicU32,
}

/// 503 three times, then 200.
async fn flaky(State(calls): State<Arc<Calls>>) -> impl IntoResponse {
    if calls.flaky.fetch_add(1, Ordering::SeqCst) < 3 {
        (StatusCode::SERVICE_UNAVAILABLE, "overloaded")
    } else {
        (StatusCode::OK, "here you are")
    }
}

/// 400 every time: the request itself is wrong.
async fn bad_request() -> impl IntoResponse {
    (StatusCode::BAD_REQUEST, "missing field `id`")
}

/// 429 with `Retry-After: 1` the first time, then 200.
async fn rate_limited(State(calls): State<Arc<Calls>>) -> axum::response::Response {
    if calls.rate_limited.fetch_add(1, Ordering::SeqCst) == 0 {
        (
            StatusCode::TOO_MANY_REQUESTS,
            [(header::RETRY_AFTER, "1")],
            "slow down",
        )
            .into_response()
    } else {
        (StatusCode::OK, "thanks for waiting").into_response()
    }
}

/// 503 with a `Retry-After` date far beyond any reasonable cap.
async fn maintenance() -> impl IntoResponse {
    (
        StatusCode::SERVICE_UNAVAILABLE,
        [(header::RETRY_AFTER, "Fri, 31 Dec 9999 23:59:59 GMT")],
        "down for maintenance",
    )
}

/// Prints the wait before a retry after a transient response.
fn report_response(response: &reqwest::Response, attempt: u32, wait: Duration) {
    let asked = transient::retry_after(response)
        .map(|hint| format!(" (the server asked for {hint:?})"))
        .unwrap_or_default();
    println!(
        "    attempt {attempt} failed; waiting {}ms{asked}",
        wait.as_millis()
    );
}

/// Prints the wait before a retry after a transient error (a timeout, a
/// refused connection).
fn report_error(error: &reqwest::Error, attempt: u32, wait: Duration) {
    println!(
        "    attempt {attempt} failed: {error}; waiting {}ms",
        wait.as_millis()
    );
}

/// Up to 5 attempts with capped, jittered backoff; transient errors and
/// responses (408, 429, 5xx except 501) are retried; `Retry-After` is
/// honoured unless it asks for more than `cap`; the whole call is bounded by
/// a deadline. (Each attempt is bounded by the client's own timeout:
/// `reqwest::Error` cannot be made from a `TimedOut`, so the `timeout` key
/// does not apply to it.)
#[retry(
    max = 5,
    base = "100ms",
    cap = "5s",
    deadline = "10s",
    on = transient::is_transient,
    on_ok = transient::is_transient_response,
    retry_after_ok = transient::retry_after,
    on_retry = report_error,
    on_retry_ok = report_response,
    on_give_up = report_stop,
)]
async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
    let response = client.get(url).send().await?;
    let attempt = current_attempt().map_or(0, |context| context.attempt());
    println!("    attempt {attempt}: {}", response.status());
    Ok(response)
}

/// Says why a call stopped retrying: called once when it gives up.
fn report_stop(_: &reqwest::Result<reqwest::Response>, stopped: &Stopped) {
    let why = match stopped.reason() {
        Stop::NotRetryable => "the failure is not transient; retrying cannot help",
        Stop::Exhausted => "no attempts left",
        Stop::HintTooLong => "the server asked for a wait longer than `cap`",
        Stop::Deadline => "the next wait would pass the deadline",
        Stop::Budget => "the retry budget is spent",
        other => other.as_str(),
    };
    println!("    stopped: {why} ({stopped})");
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let app = Router::new()
        .route("/flaky", get(flaky))
        .route("/bad-request", get(bad_request))
        .route("/rate-limited", get(rate_limited))
        .route("/maintenance", get(maintenance))
        .with_state(Arc::new(Calls::default()));
    let listener = tokio::net::TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
    let address = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });
    println!("server listening on http://{address}\n");

    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(2))
        .build()?;
    let cases = [
        ("/flaky", "503 three times, then 200"),
        ("/bad-request", "400: the request is wrong"),
        ("/rate-limited", "429 with Retry-After: 1, then 200"),
        (
            "/maintenance",
            "503 with Retry-After: a date in the year 9999",
        ),
    ];
    for (path, what) in cases {
        println!("GET {path}  ({what})");
        let start = Instant::now();
        let outcome = fetch(&client, &format!("http://{address}{path}")).await;
        let elapsed = start.elapsed();
        match outcome {
            Ok(response) => {
                let status = response.status();
                if status.is_client_error() && !transient::is_transient_response(&response) {
                    println!(
                        "    stopped: {status} is not transient; repeating the request cannot help"
                    );
                }
                let body = response.text().await?;
                println!("  => {status} {body:?} after {elapsed:.0?}\n");
            }
            Err(error) => println!("  => error: {error} after {elapsed:.0?}\n"),
        }
    }
    Ok(())
}
