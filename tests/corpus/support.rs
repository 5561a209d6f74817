//! Fakes shared by the corpus files: a dependency that fails N times, and a
//! real HTTP server on 127.0.0.1 that answers 503 N times, then 200.
#![allow(dead_code)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::http::header::RETRY_AFTER;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::routing::any;
use axum::Router;

/// Compiles only for a `Send` value: the futures below can be spawned.
pub fn assert_send<T: Send>(_: &T) {}

/// An in-process dependency: the first `failures` calls fail, the rest succeed.
#[derive(Debug, Default)]
pub struct Dep {
    calls: AtomicU32,
    failures: u32,
}

impl Dep {
    pub const fn failing(failures: u32) -> Self {
        Dep {
            calls: AtomicU32::new(0),
            failures,
        }
    }

    /// `Ok(n)` or `Err(n)`, `n` the number of this call (from 1).
    pub fn call(&self) -> Result<u32, u32> {
        let n = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if n <= self.failures {
            Err(n)
        } else {
            Ok(n)
        }
    }

    pub fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }
}

/// A server on 127.0.0.1 (any path, any method): 503 for the first
/// `failures` requests, then 200 with the body `ok`. Returns its base URL and
/// its request counter.
pub async fn flaky_server(failures: u32) -> (String, Arc<AtomicU32>) {
    failing_server(failures, StatusCode::SERVICE_UNAVAILABLE, None).await
}

/// As [`flaky_server`], failing with `status` (and a `Retry-After` header
/// holding `retry_after` seconds, if given).
pub async fn failing_server(
    failures: u32,
    status: StatusCode,
    retry_after: Option<&'static str>,
) -> (String, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&hits);
    let router = Router::new().fallback(any(move || {
        let counted = Arc::clone(&counted);
        async move {
            let n = counted.fetch_add(1, Ordering::SeqCst) + 1;
            let mut headers = HeaderMap::new();
            if n <= failures {
                if let Some(seconds) = retry_after {
                    headers.insert(RETRY_AFTER, HeaderValue::from_static(seconds));
                }
                (status, headers, "busy")
            } else {
                (StatusCode::OK, headers, "ok")
            }
        }
    }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    (format!("http://{addr}"), hits)
}

pub fn hits(counter: &AtomicU32) -> u32 {
    counter.load(Ordering::SeqCst)
}
