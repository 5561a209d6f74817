//! `cargo run --example payment`
//!
//! A retried POST that charges a card, against a local payment server that
//! deduplicates by `Idempotency-Key` and loses the response to the first
//! charge (it closes the connection after charging). The client retries the
//! closed connection. With the key, the retry is recognised and the card is
//! charged once; the same program without the key charges it twice.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use axum::extract::{Extension, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use retry_runtime::classify::reqwest as transient;
use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::{current_attempt, retry};
use tokio::sync::oneshot;

/// The payment provider's books.
#[derive(Default)]
struct Ledger {
    charges: AtomicU32,
    /// The answer given to each idempotency key, to give again on a repeat.
    answered: Mutex<HashMap<String, String>>,
}

/// Closes the connection it was handed to, without a response.
#[derive(Clone)]
struct HangUp(Arc<Mutex<Option<oneshot::Sender<()>>>>);

async fn charge(
    State(ledger): State<Arc<Ledger>>,
    Extension(hang_up): Extension<HangUp>,
    headers: HeaderMap,
) -> (StatusCode, String) {
    let key = headers
        .get("idempotency-key")
        .and_then(|key| key.to_str().ok())
        .map(str::to_owned);
    if let Some(answer) = key
        .as_ref()
        .and_then(|key| ledger.answered.lock().unwrap().get(key).cloned())
    {
        println!("    server: key seen before, answering again without charging");
        return (StatusCode::CREATED, answer);
    }
    let number = ledger.charges.fetch_add(1, Ordering::SeqCst) + 1;
    let answer = format!("charge #{number}: 42.00 EUR");
    if let Some(key) = key {
        ledger.answered.lock().unwrap().insert(key, answer.clone());
    }
    println!("    server: {answer}");
    if number == 1 {
        println!("    server: ...and the response is lost (connection closed)");
        if let Some(hang_up) = hang_up.0.lock().unwrap().take() {
            let _ = hang_up.send(());
        }
        std::future::pending::<()>().await;
    }
    (StatusCode::CREATED, answer)
}

/// Serves the ledger on 127.0.0.1, one hyper connection per client
/// connection, each of which the handler can close.
async fn serve(ledger: Arc<Ledger>) -> SocketAddr {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let router = Router::new()
        .route("/charges", post(charge))
        .with_state(ledger);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (hang_up, hung_up) = oneshot::channel();
            let service = router
                .clone()
                .layer(Extension(HangUp(Arc::new(Mutex::new(Some(hang_up))))));
            tokio::spawn(async move {
                let connection = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
                tokio::select! {
                    _ = connection => {}
                    Ok(()) = hung_up => {} // dropping the connection closes it
                }
            });
        }
    });
    address
}

fn report(error: &reqwest::Error, attempt: u32, wait: std::time::Duration) {
    let cause = if transient::is_connection_closed(error) {
        "connection closed before the response"
    } else {
        "error"
    };
    println!("  attempt {attempt}: {cause}; retrying in {wait:.0?}");
}

/// Charges 42 EUR, retrying a lost response. The key, when sent, is the
/// call's: the same on every attempt.
#[retry(
    max = 3,
    base = "50ms",
    on = transient::is_transient_repeatable,
    on_retry = report,
)]
async fn pay(client: &reqwest::Client, url: &str, with_key: bool) -> reqwest::Result<String> {
    let attempt = current_attempt().expect("inside a retried call");
    let request = client.post(url).body("amount=42.00&currency=EUR");
    let request = if with_key {
        println!(
            "  attempt {}: POST with Idempotency-Key: {}",
            attempt.attempt(),
            attempt.idempotency_key()
        );
        request.idempotency_key()
    } else {
        println!("  attempt {}: POST without a key", attempt.attempt());
        request
    };
    request.send().await?.error_for_status()?.text().await
}

async fn run(with_key: bool) -> u32 {
    let ledger = Arc::new(Ledger::default());
    let url = format!("http://{}/charges", serve(Arc::clone(&ledger)).await);
    let client = reqwest::Client::new();
    match pay(&client, &url, with_key).await {
        Ok(answer) => println!("  client got: {answer}"),
        Err(error) => println!("  client gave up: {error}"),
    }
    ledger.charges.load(Ordering::SeqCst)
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    println!("with an idempotency key:");
    let with_key = run(true).await;
    println!("  => the card was charged {with_key} time(s)\n");

    println!("without a key (the same program):");
    let without_key = run(false).await;
    println!("  => the card was charged {without_key} time(s)");

    assert_eq!((with_key, without_key), (1, 2));
}
