//! The ready-made classifiers: `std::io` kinds, HTTP statuses and
//! `Retry-After` headers, reqwest errors and responses.

use std::io;
use std::time::Duration;

use retry_runtime::classify;
use retry_runtime::retry;

#[test]
fn io_kinds() {
    let transient = [
        io::ErrorKind::TimedOut,
        io::ErrorKind::Interrupted,
        io::ErrorKind::ConnectionRefused,
        io::ErrorKind::ConnectionReset,
        io::ErrorKind::ConnectionAborted,
        io::ErrorKind::BrokenPipe,
        io::ErrorKind::HostUnreachable,
    ];
    let permanent = [
        io::ErrorKind::NotFound,
        io::ErrorKind::PermissionDenied,
        io::ErrorKind::InvalidInput,
        io::ErrorKind::InvalidData,
        io::ErrorKind::AlreadyExists,
        io::ErrorKind::Unsupported,
    ];
    for kind in transient {
        assert!(classify::io::is_transient(&kind.into()), "{kind:?}");
    }
    for kind in permanent {
        assert!(!classify::io::is_transient(&kind.into()), "{kind:?}");
    }
}

#[test]
fn http_statuses() {
    for code in [408, 429, 500, 502, 503, 504, 507, 599] {
        assert!(
            classify::http::is_transient_status(http::StatusCode::from_u16(code).unwrap()),
            "{code}"
        );
    }
    for code in [200, 201, 301, 304, 400, 401, 403, 404, 409, 422, 501] {
        assert!(
            !classify::http::is_transient_status(http::StatusCode::from_u16(code).unwrap()),
            "{code}"
        );
    }
}

fn response(status: u16, retry_after: Option<&str>) -> http::Response<String> {
    let mut builder = http::Response::builder().status(status);
    if let Some(value) = retry_after {
        builder = builder.header(http::header::RETRY_AFTER, value);
    }
    builder.body(String::new()).unwrap()
}

#[test]
fn http_retry_after_headers() {
    assert_eq!(
        classify::http::response_retry_after(&response(429, Some("7"))),
        Some(Duration::from_secs(7))
    );
    assert_eq!(
        classify::http::response_retry_after(&response(503, None)),
        None
    );
    assert_eq!(
        classify::http::response_retry_after(&response(503, Some("later"))),
        None
    );
    let past = "Sun, 06 Nov 1994 08:49:37 GMT";
    assert_eq!(
        classify::http::response_retry_after(&response(503, Some(past))),
        Some(Duration::ZERO)
    );
    assert!(classify::http::is_transient_response(&response(503, None)));
    assert!(!classify::http::is_transient_response(&response(404, None)));
}

#[test]
fn reqwest_responses() {
    let unavailable = reqwest::Response::from(response(503, Some("3")));
    assert!(classify::reqwest::is_transient_response(&unavailable));
    assert_eq!(
        classify::reqwest::retry_after(&unavailable),
        Some(Duration::from_secs(3))
    );
    let bad = reqwest::Response::from(response(400, None));
    assert!(!classify::reqwest::is_transient_response(&bad));
    // Status errors made by `error_for_status` are classified by status.
    let error = reqwest::Response::from(response(502, None))
        .error_for_status()
        .unwrap_err();
    assert!(classify::reqwest::is_transient(&error));
    let error = reqwest::Response::from(response(501, None))
        .error_for_status()
        .unwrap_err();
    assert!(!classify::reqwest::is_transient(&error));
}

#[tokio::test]
async fn reqwest_connect_errors_are_transient() {
    // A socket bound but not listening holds its port for the whole test,
    // so no other process can take it, and every connection to it is
    // refused at once.
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.bind("127.0.0.1:0".parse().unwrap()).unwrap();
    let address = socket.local_addr().unwrap();
    let error = reqwest::get(format!("http://{address}/"))
        .await
        .unwrap_err();
    assert!(error.is_connect(), "{error:?}");
    assert!(classify::reqwest::is_transient(&error));
    drop(socket);
}

/// The attribute with the reqwest classifiers, against responses made in
/// process: the 503s are retried, the hint is honoured, and the last 503 is
/// returned as it came when attempts run out.
#[retry(
    max = 3,
    base = "10ms",
    jitter = "none",
    on = classify::reqwest::is_transient,
    on_ok = classify::reqwest::is_transient_response,
    retry_after_ok = classify::reqwest::retry_after,
)]
async fn fetch(statuses: &std::cell::RefCell<Vec<u16>>) -> reqwest::Result<reqwest::Response> {
    let status = statuses.borrow_mut().remove(0);
    Ok(reqwest::Response::from(response(
        status,
        (status == 429).then_some("1"),
    )))
}

#[tokio::test(start_paused = true)]
async fn the_attribute_with_reqwest_classifiers() {
    let start = tokio::time::Instant::now();
    let statuses = std::cell::RefCell::new(vec![429, 503, 200]);
    assert_eq!(fetch(&statuses).await.unwrap().status(), 200);
    // 1s (hint, plus up to 100ms) then 20ms of backoff.
    let elapsed = start.elapsed();
    assert!(
        elapsed >= Duration::from_millis(1020) && elapsed <= Duration::from_millis(1121),
        "{elapsed:?}"
    );

    let statuses = std::cell::RefCell::new(vec![503, 503, 503, 200]);
    assert_eq!(fetch(&statuses).await.unwrap().status(), 503);
    assert_eq!(statuses.borrow().len(), 1, "three attempts made");
}
