//! `cargo run --release -p retry-benches --example reqwest_retry`
//!
//! The reqwest middleware of retry-runtime side by side with reqwest's own
//! retry (`reqwest::retry`, reqwest 0.13: a policy scoped to a host, a
//! classifier, and a retry budget of 20% extra requests on by default), on
//! the same local servers. Each scenario runs a wave of concurrent calls
//! (`x-call` names each) against a fresh server, once per client, and the
//! server counts what it was sent:
//!
//! - 503 bursts: each call's first two requests get 503 with
//!   `Retry-After: 1`, the third 200;
//! - 429: the same, 429 without `Retry-After`;
//! - connection reset: each call's first request is read and its connection
//!   closed without an answer, the second gets 200 (GET);
//! - POST, response lost: the same for a POST that the server carries out
//!   (a charge) before closing, without an idempotency key, then with one
//!   (the server carries out each key once and answers it again after);
//! - total outage: every request gets 503, no `Retry-After`.
//!
//! Measured: calls that ended in a 2xx, requests the server got per call,
//! call latency (median and slowest, wall clock), retries sent before the
//! time `Retry-After` named, and charges carried out more than once for
//! one call. Every client makes 3 attempts at most (reqwest's default of 2
//! retries); retry-runtime runs `Policy::new()` (100 ms base, full jitter),
//! without a budget (the middleware's default) and with gRPC's throttle
//! `RetryBudget::new(100, 0.1)`; reqwest runs its default budget. reqwest's
//! classifier sees the method and the status or error but no header, so it
//! cannot tell a POST with an idempotency key from one without: it runs
//! twice, retrying idempotent methods only (as its docs' example does), and
//! every method.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::{Policy, RetryBudget};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// What a server does, by scenario.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    RetryAfter,
    TooMany,
    Reset,
    PostLost,
    PostLostKeyed,
    Outage,
}

impl Scenario {
    const ALL: [Scenario; 6] = [
        Scenario::RetryAfter,
        Scenario::TooMany,
        Scenario::Reset,
        Scenario::PostLost,
        Scenario::PostLostKeyed,
        Scenario::Outage,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::RetryAfter => "503 ×2 with `Retry-After: 1`, GET",
            Scenario::TooMany => "429 ×2, GET",
            Scenario::Reset => "connection closed ×1, GET",
            Scenario::PostLost => "POST, no key, response lost ×1",
            Scenario::PostLostKeyed => "POST + `Idempotency-Key`, response lost ×1",
            Scenario::Outage => "total outage (503), GET",
        }
    }

    /// Calls at once.
    fn calls(self) -> usize {
        if self == Scenario::Outage {
            200
        } else {
            50
        }
    }

    fn post(self) -> bool {
        matches!(self, Scenario::PostLost | Scenario::PostLostKeyed)
    }
}

/// What the server saw of one call.
#[derive(Default)]
struct Call {
    requests: u32,
    /// When the server last told it to come back, and after how long.
    told: Option<(Instant, Duration)>,
    /// Retries that came back before that.
    early: u32,
    /// Charges carried out (a POST's effect).
    charged: u32,
}

#[derive(Default)]
struct Seen {
    calls: Mutex<HashMap<String, Call>>,
    /// Charges carried out, by idempotency key.
    keys: Mutex<HashMap<String, u32>>,
}

/// What the server answers a request: a status and its `Retry-After`, or
/// nothing (the connection is closed).
fn decide(scenario: Scenario, seen: &Seen, call: &str, key: Option<&str>) -> Option<(u16, u32)> {
    let now = Instant::now();
    let mut calls = seen.calls.lock().unwrap();
    let state = calls.entry(call.to_owned()).or_default();
    state.requests += 1;
    if let Some((at, wait)) = state.told.take() {
        if now.duration_since(at) < wait {
            state.early += 1;
        }
    }
    let n = state.requests;
    let answer = match scenario {
        Scenario::RetryAfter if n <= 2 => Some((503, 1)),
        Scenario::TooMany if n <= 2 => Some((429, 0)),
        Scenario::Outage => Some((503, 0)),
        Scenario::Reset if n == 1 => None,
        Scenario::PostLost | Scenario::PostLostKeyed => {
            let first_for_key = match key {
                Some(key) => {
                    let mut keys = seen.keys.lock().unwrap();
                    let charges = keys.entry(key.to_owned()).or_default();
                    *charges += 1;
                    *charges == 1
                }
                None => true,
            };
            if first_for_key {
                state.charged += 1;
            }
            // The charge is made; the first request's answer is lost.
            (n > 1).then_some((200, 0))
        }
        _ => Some((200, 0)),
    };
    if let Some((_, hint)) = answer.filter(|&(_, hint)| hint > 0) {
        state.told = Some((now, Duration::from_secs(u64::from(hint))));
    }
    answer
}

/// A plain HTTP/1.1 server: each request's head and body are read, then
/// answered (keeping the connection) or the connection is closed.
async fn serve(scenario: Scenario) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let shared = Arc::clone(&seen);
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(connection(socket, scenario, Arc::clone(&shared)));
        }
    });
    (url, seen)
}

async fn connection(mut socket: TcpStream, scenario: Scenario, seen: Arc<Seen>) {
    let mut buffer = Vec::new();
    loop {
        let Some(head_end) = read_until_head(&mut socket, &mut buffer).await else {
            return;
        };
        let head = String::from_utf8_lossy(&buffer[..head_end]).to_ascii_lowercase();
        let header = |name: &str| {
            head.lines()
                .find_map(|line| line.strip_prefix(name)?.strip_prefix(':'))
                .map(|value| value.trim().to_owned())
        };
        let length: usize = header("content-length").map_or(0, |n| n.parse().unwrap_or(0));
        while buffer.len() < head_end + length {
            let mut chunk = [0; 4096];
            match socket.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(read) => buffer.extend_from_slice(&chunk[..read]),
            }
        }
        buffer.drain(..head_end + length);
        let call = header("x-call").unwrap_or_default();
        let key = header("idempotency-key");
        let Some((status, hint)) = decide(scenario, &seen, &call, key.as_deref()) else {
            return;
        };
        let retry_after = if hint > 0 {
            format!("retry-after: {hint}\r\n")
        } else {
            String::new()
        };
        let response = format!("HTTP/1.1 {status} X\r\n{retry_after}content-length: 0\r\n\r\n");
        if socket.write_all(response.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Reads until `buffer` holds a whole head; the offset of its end.
async fn read_until_head(socket: &mut TcpStream, buffer: &mut Vec<u8>) -> Option<usize> {
    loop {
        if let Some(at) = buffer.windows(4).position(|window| window == b"\r\n\r\n") {
            return Some(at + 4);
        }
        let mut chunk = [0; 4096];
        match socket.read(&mut chunk).await {
            Ok(0) | Err(_) => return None,
            Ok(read) => buffer.extend_from_slice(&chunk[..read]),
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Contender {
    Ours,
    OursBudgeted,
    ReqwestIdempotent,
    ReqwestEvery,
}

impl Contender {
    fn name(self) -> &'static str {
        match self {
            Contender::Ours => "retry-runtime middleware",
            Contender::OursBudgeted => "retry-runtime middleware, `RetryBudget::new(100, 0.1)`",
            Contender::ReqwestIdempotent => "`reqwest::retry`, idempotent methods",
            Contender::ReqwestEvery => "`reqwest::retry`, every method",
        }
    }
}

/// One client, sending one request of the scenario's per call.
enum Client {
    Ours(reqwest_middleware::ClientWithMiddleware),
    Reqwest(reqwest::Client),
}

fn client(contender: Contender) -> Client {
    let retryable = |status: Option<http::StatusCode>, error: bool| {
        error || status.is_some_and(|status| matches!(status.as_u16(), 429 | 502 | 503 | 504))
    };
    match contender {
        Contender::Ours | Contender::OursBudgeted => {
            let mut middleware = RetryMiddleware::new(Policy::new());
            if let Contender::OursBudgeted = contender {
                middleware = middleware.with_budget(Arc::new(RetryBudget::new(100, 0.1)));
            }
            Client::Ours(
                reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
                    .with(middleware)
                    .build(),
            )
        }
        Contender::ReqwestIdempotent => {
            let policy = reqwest::retry::for_host("127.0.0.1").classify_fn(move |attempt| {
                let idempotent = matches!(
                    attempt.method().as_str(),
                    "GET" | "HEAD" | "OPTIONS" | "TRACE" | "PUT" | "DELETE"
                );
                if idempotent && retryable(attempt.status(), attempt.error().is_some()) {
                    attempt.retryable()
                } else {
                    attempt.success()
                }
            });
            Client::Reqwest(reqwest::Client::builder().retry(policy).build().unwrap())
        }
        Contender::ReqwestEvery => {
            let policy = reqwest::retry::for_host("127.0.0.1").classify_fn(move |attempt| {
                if retryable(attempt.status(), attempt.error().is_some()) {
                    attempt.retryable()
                } else {
                    attempt.success()
                }
            });
            Client::Reqwest(reqwest::Client::builder().retry(policy).build().unwrap())
        }
    }
}

impl Client {
    /// Sends call `call` of `scenario`: whether it ended in a 2xx.
    async fn send(&self, scenario: Scenario, url: &str, call: usize) -> bool {
        let key = format!("key-{call}");
        match self {
            Client::Ours(client) => {
                let mut request = if scenario.post() {
                    client.post(url).body("charge")
                } else {
                    client.get(url)
                };
                request = request.header("x-call", call.to_string());
                if scenario == Scenario::PostLostKeyed {
                    request = request.idempotency_key();
                }
                let response = request.send().await;
                response.is_ok_and(|response| response.status().is_success())
            }
            Client::Reqwest(client) => {
                let mut request = if scenario.post() {
                    client.post(url).body("charge")
                } else {
                    client.get(url)
                };
                request = request.header("x-call", call.to_string());
                if scenario == Scenario::PostLostKeyed {
                    request = request.header("idempotency-key", key);
                }
                let response = request.send().await;
                response.is_ok_and(|response| response.status().is_success())
            }
        }
    }
}

struct Row {
    ok: usize,
    calls: usize,
    requests: u32,
    retries: u32,
    early: u32,
    hinted: bool,
    doubled: usize,
    median: Duration,
    slowest: Duration,
}

async fn run(scenario: Scenario, contender: Contender) -> Row {
    let (url, seen) = serve(scenario).await;
    let client = Arc::new(client(contender));
    let ok = Arc::new(AtomicUsize::new(0));
    let mut calls = Vec::new();
    for call in 0..scenario.calls() {
        let (client, ok, url) = (Arc::clone(&client), Arc::clone(&ok), url.clone());
        calls.push(tokio::spawn(async move {
            let started = Instant::now();
            if client.send(scenario, &url, call).await {
                ok.fetch_add(1, Ordering::SeqCst);
            }
            started.elapsed()
        }));
    }
    let mut latencies = Vec::new();
    for call in calls {
        latencies.push(call.await.unwrap());
    }
    latencies.sort();
    let seen = seen.calls.lock().unwrap();
    let requests = seen.values().map(|call| call.requests).sum::<u32>();
    Row {
        ok: ok.load(Ordering::SeqCst),
        calls: scenario.calls(),
        requests,
        retries: requests - seen.len() as u32,
        early: seen.values().map(|call| call.early).sum(),
        hinted: scenario == Scenario::RetryAfter,
        doubled: seen.values().filter(|call| call.charged > 1).count(),
        median: latencies[latencies.len() / 2],
        slowest: latencies[latencies.len() - 1],
    }
}

#[tokio::main]
async fn main() {
    println!("| scenario | client | calls ok | requests per call | median | slowest | retries before `Retry-After` | charged twice |");
    println!("|---|---|---|---|---|---|---|---|");
    for scenario in Scenario::ALL {
        for contender in [
            Contender::Ours,
            Contender::OursBudgeted,
            Contender::ReqwestIdempotent,
            Contender::ReqwestEvery,
        ] {
            let row = run(scenario, contender).await;
            let early = if row.hinted {
                format!("{} of {}", row.early, row.retries)
            } else {
                "n/a".to_owned()
            };
            let doubled = if scenario.post() {
                format!("{} of {}", row.doubled, row.calls)
            } else {
                "n/a".to_owned()
            };
            println!(
                "| {} | {} | {} of {} | {:.2} | {:.0?} | {:.0?} | {} | {} |",
                scenario.name(),
                contender.name(),
                row.ok,
                row.calls,
                f64::from(row.requests) / row.calls as f64,
                row.median,
                row.slowest,
                early,
                doubled,
            );
        }
    }
}
