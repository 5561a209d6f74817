//! `cargo run --example quickstart`
//!
//! A flaky in-process dependency called through `#[retry]` functions. Each
//! case prints every attempt, the wait before it, and the outcome.

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Mutex;

use retry_runtime::retry;
use tokio::time::Instant;

/// What a real API client would return.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ApiError {
    /// 503: the server is overloaded; a later attempt may succeed.
    Unavailable,
    /// 400: the request itself is wrong; repeating it cannot help.
    BadRequest,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApiError::Unavailable => f.write_str("503 Service Unavailable"),
            ApiError::BadRequest => f.write_str("400 Bad Request"),
        }
    }
}

/// Only failures that can succeed on a repeat are retried.
fn is_transient(error: &ApiError) -> bool {
    matches!(error, ApiError::Unavailable)
}

/// A dependency that fails its first `failures` calls with `error`, and
/// prints each call with the time since the previous one.
struct Dependency {
    failures: u32,
    error: ApiError,
    calls: AtomicU32,
    last_call: Mutex<Option<Instant>>,
}

impl Dependency {
    fn new(failures: u32, error: ApiError) -> Self {
        Dependency {
            failures,
            error,
            calls: AtomicU32::new(0),
            last_call: Mutex::new(None),
        }
    }

    async fn get_user(&self, id: u64) -> Result<String, ApiError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        let now = Instant::now();
        let waited = self
            .last_call
            .lock()
            .unwrap()
            .replace(now)
            .map(|before| now - before);
        let result = if call <= self.failures {
            Err(self.error)
        } else {
            Ok(format!("user {id}"))
        };
        let waited = waited.map_or_else(
            || "first call".to_owned(),
            |w| format!("after waiting {w:>7.1?}"),
        );
        match &result {
            Ok(user) => println!("  attempt {call} ({waited}): ok, {user}"),
            Err(error) => println!("  attempt {call} ({waited}): {error}"),
        }
        result
    }
}

/// Up to 4 attempts; full jitter between 0 and 100ms, 200ms, 400ms.
#[retry(max = 4, base = "100ms", cap = "2s", on = is_transient)]
async fn fetch_user(api: &Dependency, id: u64) -> Result<String, ApiError> {
    api.get_user(id).await
}

/// The same call with a deadline: no wait is started that would end past it.
#[retry(max = 10, base = "100ms", jitter = "none", deadline = "500ms", on = is_transient)]
async fn fetch_user_within(api: &Dependency, id: u64) -> Result<String, ApiError> {
    api.get_user(id).await
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let cases = [
        (
            "503 twice, then 200: retried until it succeeds",
            Dependency::new(2, ApiError::Unavailable),
            false,
        ),
        (
            "400: not transient, returned at once",
            Dependency::new(10, ApiError::BadRequest),
            false,
        ),
        (
            "503 every time: 4 attempts, then the last error",
            Dependency::new(10, ApiError::Unavailable),
            false,
        ),
        (
            "503 every time, deadline 500ms: stops before a wait would pass it",
            Dependency::new(10, ApiError::Unavailable),
            true,
        ),
    ];
    for (title, api, with_deadline) in cases {
        println!("{title}");
        let start = Instant::now();
        let outcome = if with_deadline {
            fetch_user_within(&api, 7).await
        } else {
            fetch_user(&api, 7).await
        };
        let elapsed = start.elapsed();
        match outcome {
            Ok(user) => println!("  => Ok({user:?}) in {elapsed:.1?}\n"),
            Err(error) => println!("  => Err({error}) in {elapsed:.1?}\n"),
        }
    }
}
