//! A connection a real server closes before its response (hyper's
//! `IncompleteMessage`) is transient for a request that is safe to repeat,
//! and only for one: the server may have acted on it.

#[path = "support/servers.rs"]
mod servers;

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::routing::any;
use axum::Router;
use retry_runtime::classify::reqwest as transient;
use retry_runtime::retry;

async fn server(drops: u32) -> (servers::Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            any(|State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                "ok"
            }),
        )
        .with_state(Arc::clone(&hits));
    (servers::serve(router, drops).await, hits)
}

#[tokio::test]
async fn a_closed_connection_is_recognised() {
    let (server, _) = server(1).await;
    let error = reqwest::get(server.url("/")).await.unwrap_err();

    assert!(transient::is_connection_closed(&error), "{error:?}");
    assert!(
        !transient::is_transient(&error),
        "not for a request that may have been acted on"
    );
    assert!(transient::is_transient_repeatable(&error));
    let get = http::Method::GET;
    let post = http::Method::POST;
    let none = http::HeaderMap::new();
    let mut keyed = http::HeaderMap::new();
    keyed.insert("idempotency-key", "k".parse().unwrap());
    assert!(transient::is_transient_for(&get, &none, &error));
    assert!(!transient::is_transient_for(&post, &none, &error));
    assert!(transient::is_transient_for(&post, &keyed, &error));
}

#[retry(max = 3, base = "1ms", on = transient::is_transient_repeatable)]
async fn fetch(client: &reqwest::Client, url: &str) -> reqwest::Result<String> {
    client.get(url).send().await?.text().await
}

#[tokio::test]
async fn a_get_is_retried_after_the_connection_closed() {
    let (server, hits) = server(2).await;
    let body = fetch(&reqwest::Client::new(), &server.url("/"))
        .await
        .unwrap();
    assert_eq!(body, "ok");
    assert_eq!(server.dropped.load(Ordering::SeqCst), 2);
    assert_eq!(hits.load(Ordering::SeqCst), 1);
}
