//! Each retried call carries one idempotency key, sent unchanged on every
//! attempt and new for every call, so a server can tell a retry from a new
//! request.

#[path = "support/servers.rs"]
mod servers;

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use axum::Router;
use retry_runtime::idempotency::WithIdempotencyKey;
use retry_runtime::{current_attempt, retry, IdempotencyKey, Policy};

type Keys = Arc<Mutex<Vec<String>>>;

/// Records each request's key; 503 for the first two requests of a key.
async fn charge(State(keys): State<Keys>, headers: HeaderMap) -> StatusCode {
    let key = headers
        .get("idempotency-key")
        .map_or_else(String::new, |key| key.to_str().unwrap().to_owned());
    let mut keys = keys.lock().unwrap();
    keys.push(key.clone());
    if keys.iter().filter(|seen| **seen == key).count() < 3 {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::CREATED
    }
}

#[retry(max = 3, base = "1ms", on_ok = retry_runtime::classify::reqwest::is_transient_response)]
async fn pay(client: &reqwest::Client, url: &str) -> reqwest::Result<reqwest::Response> {
    client.post(url).idempotency_key().send().await
}

#[tokio::test(start_paused = true)]
async fn every_attempt_of_a_call_sends_the_same_key_and_every_call_a_new_one() {
    let keys = Keys::default();
    let router = Router::new()
        .route("/charge", post(charge))
        .with_state(Arc::clone(&keys));
    let server = servers::serve(router, 0).await;
    let client = reqwest::Client::new();

    assert_eq!(
        pay(&client, &server.url("/charge")).await.unwrap().status(),
        201
    );
    assert_eq!(
        pay(&client, &server.url("/charge")).await.unwrap().status(),
        201
    );

    let keys = keys.lock().unwrap().clone();
    assert_eq!(keys.len(), 6);
    assert!(keys[..3].iter().all(|key| *key == keys[0]), "{keys:?}");
    assert!(keys[3..].iter().all(|key| *key == keys[3]), "{keys:?}");
    assert_ne!(keys[0], keys[3]);
    assert_eq!(keys[0].len(), 36);
}

#[tokio::test(start_paused = true)]
async fn the_closure_driver_carries_a_key_per_call() {
    let policy = Policy::new().with_max_attempts(3);
    let mut seen = Vec::new();
    let _: std::io::Result<()> = policy
        .retry(|| {
            seen.push(current_attempt().unwrap().idempotency_key());
            async { Err(std::io::ErrorKind::Interrupted.into()) }
        })
        .await;
    assert_eq!(seen.len(), 3);
    assert!(seen.iter().all(|key| *key == seen[0]));
}

#[retry(max = 2, nested = "retry")]
async fn inner() -> Result<IdempotencyKey, ()> {
    Ok(current_attempt().unwrap().idempotency_key())
}

#[retry(max = 2)]
async fn outer() -> Result<(IdempotencyKey, IdempotencyKey, IdempotencyKey), ()> {
    let before = current_attempt().unwrap().idempotency_key();
    let inner = inner().await?;
    let after = current_attempt().unwrap().idempotency_key();
    Ok((before, inner, after))
}

#[tokio::test]
async fn a_nested_call_has_its_own_key_and_restores_the_outer_one() {
    let (before, inner, after) = outer().await.unwrap();
    assert_ne!(before, inner);
    assert_eq!(before, after);
    assert!(current_attempt().is_none());
}

#[test]
fn outside_a_retried_call_the_helper_makes_a_fresh_key() {
    let client = reqwest::Client::new();
    let request = client
        .post("http://127.0.0.1:1/")
        .idempotency_key()
        .build()
        .unwrap();
    let first = request.headers()["idempotency-key"]
        .to_str()
        .unwrap()
        .to_owned();
    assert_eq!(first.len(), 36);
    assert_ne!(first, IdempotencyKey::for_this_call().to_string());
}

#[retry(max = 2, nested = "retry")]
async fn inner_that_waits() -> Result<(IdempotencyKey, IdempotencyKey), ()> {
    let first = current_attempt().unwrap().idempotency_key();
    tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    let second = current_attempt().unwrap().idempotency_key();
    Ok((first, second))
}

#[retry(max = 3, base = "1ms")]
async fn outer_across_attempts(
    keys: &std::sync::Mutex<Vec<IdempotencyKey>>,
) -> Result<(IdempotencyKey, IdempotencyKey), ()> {
    let mine = current_attempt().unwrap().idempotency_key();
    keys.lock().unwrap().push(mine);
    let attempt = current_attempt().unwrap().attempt();
    // The inner call is polled several times, each time inside this attempt.
    let (first, second) = inner_that_waits().await?;
    assert_eq!(
        first, second,
        "the inner call keeps its key across its polls"
    );
    assert_ne!(first, mine);
    assert_eq!(current_attempt().unwrap().idempotency_key(), mine);
    if attempt < 3 {
        return Err(());
    }
    Ok((mine, first))
}

#[tokio::test(start_paused = true)]
async fn keys_survive_polls_attempts_and_nested_calls_that_wait() {
    let keys = std::sync::Mutex::new(Vec::new());
    let (mine, inner) = outer_across_attempts(&keys).await.unwrap();
    let keys = keys.into_inner().unwrap();
    assert_eq!(keys.len(), 3);
    assert!(keys.iter().all(|key| *key == mine), "{keys:?}");
    assert_ne!(inner, mine);
    assert!(current_attempt().is_none());
}
