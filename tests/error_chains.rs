//! Errors that travel as chains (anyhow, eyre, `Box<dyn Error>`, tower's
//! `Box<dyn Error + Send + Sync>`) are judged
//! by the first error of a known type inside them.

use std::error::Error;
use std::fmt;
use std::io::{self, ErrorKind};
use std::time::Duration;

use retry_runtime::classify::chain::{self, Chain};
use retry_runtime::retry;

/// An error of the application's own that wraps another.
#[derive(Debug)]
struct Wrapped(Box<dyn Error + Send + Sync + 'static>);

impl fmt::Display for Wrapped {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("wrapped")
    }
}

impl Error for Wrapped {
    fn source(&self) -> Option<&(dyn Error + 'static)> {
        Some(&*self.0)
    }
}

fn io(kind: ErrorKind) -> io::Error {
    io::Error::from(kind)
}

#[test]
fn anyhow_contexts_are_seen_through() {
    let reset = anyhow::Error::new(io(ErrorKind::ConnectionReset))
        .context("loading")
        .context("request");
    assert!(chain::is_transient(&reset));
    let missing = anyhow::Error::new(io(ErrorKind::NotFound)).context("loading");
    assert!(!chain::is_transient(&missing));
    assert!(!chain::is_transient(&anyhow::anyhow!(
        "no known error inside"
    )));
}

#[test]
fn eyre_reports_are_seen_through() {
    let refused = eyre::Report::new(io(ErrorKind::ConnectionRefused)).wrap_err("connecting");
    assert!(chain::is_transient(&refused));
    let denied = eyre::Report::new(io(ErrorKind::PermissionDenied)).wrap_err("connecting");
    assert!(!chain::is_transient(&denied));
}

#[test]
fn boxed_errors_and_custom_wrappers_are_seen_through() {
    let boxed: Box<dyn Error> = Box::new(Wrapped(Box::new(io(ErrorKind::TimedOut))));
    assert!(chain::is_transient(&boxed));
    let send_sync: Box<dyn Error + Send + Sync> = Box::new(io(ErrorKind::InvalidData));
    assert!(!Chain::new().is_transient(&*send_sync));
}

#[test]
fn grpc_statuses_in_a_chain_bring_their_pushback() {
    let mut busy = tonic::Status::unavailable("busy");
    busy.metadata_mut()
        .insert("grpc-retry-pushback-ms", "250".parse().unwrap());
    let error = anyhow::Error::new(busy).context("calling users");
    assert!(chain::is_transient(&error));
    assert_eq!(chain::retry_after(&error), Some(Duration::from_millis(250)));

    let mut forbidden = tonic::Status::unavailable("busy");
    forbidden
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "-1".parse().unwrap());
    assert!(!chain::is_transient(&anyhow::Error::new(forbidden)));
    assert!(!chain::is_transient(&anyhow::Error::new(
        tonic::Status::internal("bug")
    )));
}

#[test]
fn the_outermost_known_error_decides() {
    // A reset connection that carried a status which alone is permanent.
    let reset = io::Error::new(
        ErrorKind::ConnectionReset,
        tonic::Status::invalid_argument("bad id"),
    );
    assert!(chain::is_transient(&anyhow::Error::new(reset)));
    let denied = io::Error::new(
        ErrorKind::PermissionDenied,
        tonic::Status::unavailable("busy"),
    );
    assert!(!chain::is_transient(&anyhow::Error::new(denied)));
}

#[test]
fn each_classifier_can_be_replaced() {
    fn never(_: &io::Error) -> bool {
        false
    }
    let reset = anyhow::Error::new(io(ErrorKind::ConnectionReset));
    assert!(!Chain::new().io(never).is_transient(reset.as_ref()));
    let denied = anyhow::Error::new(io(ErrorKind::PermissionDenied));
    assert!(Chain::new().io(|_| true).is_transient(denied.as_ref()));
}

#[tokio::test]
async fn hyper_errors_in_a_reqwest_chain_are_found() {
    // A real connection closed before the response.
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await.unwrap();
        let mut buffer = [0_u8; 1024];
        let _ = tokio::io::AsyncReadExt::read(&mut stream, &mut buffer).await;
        drop(stream);
    });
    let error = anyhow::Error::new(reqwest::get(format!("http://{addr}/")).await.unwrap_err())
        .context("fetching");

    assert!(error
        .chain()
        .find_map(|error| error.downcast_ref::<hyper::Error>())
        .is_some_and(hyper::Error::is_incomplete_message));
    assert!(
        !chain::is_transient(&error),
        "the server may have acted on it"
    );
    assert!(chain::is_transient_repeatable(&error));
}

#[retry(max = 3, base = "1ms", on = chain::is_transient)]
async fn flaky(calls: &mut u32) -> anyhow::Result<u32> {
    *calls += 1;
    match *calls {
        1 => Err(anyhow::Error::new(io(ErrorKind::ConnectionReset)).context("first")),
        2 => Err(eyre_like()),
        _ => Ok(*calls),
    }
}

fn eyre_like() -> anyhow::Error {
    anyhow::Error::new(Wrapped(Box::new(tonic::Status::unavailable("restarting"))))
}

#[tokio::test(start_paused = true)]
async fn the_combinator_works_as_on() {
    let mut calls = 0;
    assert_eq!(flaky(&mut calls).await.unwrap(), 3);
}

/// tower's `BoxError`: what a `tower::timeout` or a `Buffer` fails with.
type BoxError = Box<dyn Error + Send + Sync>;

#[retry(max = 3, on = chain::is_transient, retry_after = chain::retry_after)]
async fn through_a_tower_stack(calls: &mut u32) -> Result<u32, BoxError> {
    *calls += 1;
    if *calls < 3 {
        return Err(Box::new(Wrapped(Box::new(io(ErrorKind::TimedOut)))));
    }
    Ok(*calls)
}

/// `Box<dyn Error + Send + Sync>` is taken by the chain classifiers as
/// anyhow, eyre and `Box<dyn Error>` are (issue 20: it was refused).
#[tokio::test(start_paused = true)]
async fn tower_box_errors_are_seen_through() {
    let reset: BoxError = Box::new(io(ErrorKind::ConnectionReset));
    assert!(chain::is_transient(&reset));
    assert!(chain::is_transient_repeatable(&reset));
    assert_eq!(chain::retry_after(&reset), None);
    let missing: BoxError = Box::new(io(ErrorKind::NotFound));
    assert!(!chain::is_transient(&missing));

    let plain: Box<dyn Error> = Box::new(io(ErrorKind::ConnectionReset));
    let sent: Box<dyn Error + Send> = Box::new(io(ErrorKind::ConnectionReset));
    let shared: std::sync::Arc<dyn Error + Send + Sync> =
        std::sync::Arc::new(io(ErrorKind::ConnectionReset));
    assert!(chain::is_transient(&plain) && chain::is_transient(&sent));
    assert!(chain::is_transient(&shared));
    assert!(chain::is_transient(&anyhow::Error::new(io(
        ErrorKind::ConnectionReset
    ))));
    assert!(chain::is_transient(&eyre::Report::new(io(
        ErrorKind::ConnectionReset
    ))));

    let mut calls = 0;
    assert_eq!(through_a_tower_stack(&mut calls).await.unwrap(), 3);
}
