//! The server's side of retry at one layer across services (DESIGN §4.17):
//! each request runs as an attempt with the deadline its caller sent, and
//! a failure an inner call gave up on is answered "do not retry".

use core::future::poll_fn;
use core::pin::Pin;
use core::task::{Context, Poll};

use ::tower::{Layer, Service};
use http::{HeaderValue, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};

use super::ResponseFuture;
use crate::classify::grpc::PUSHBACK;
use crate::classify::http::{is_grpc, EXHAUSTED};
use crate::clock::{Clock, Deadline};
use crate::context::{Scope, Scoped};
use crate::Stop;

/// A [`Layer`](https://docs.rs/tower/0.5/tower/trait.Layer.html) for an
/// axum, hyper or tonic server (any service of `http::Request`s) that runs
/// each request as an attempt, so that retries happen at one layer across
/// services as they do within one process (DESIGN §4.17):
///
/// - The request's deadline is the time its caller has left
///   (`grpc-timeout`, `x-envoy-expected-rq-timeout-ms`, the nearer),
///   counted from its arrival at the layer. A header that is repeated,
///   empty, malformed, negative, zero or out of range is ignored.
/// - A request whose deadline has passed by the time its handler would
///   start, after any queue below the layer (a concurrency limit), is
///   answered at once without running the handler: HTTP 504, gRPC
///   `DEADLINE_EXCEEDED`. Its caller has left.
/// - The handler runs in the attempt's context: every retried call it makes
///   (the attribute, the closure API, the layers) is bounded by the
///   deadline, and [`current_attempt`](crate::current_attempt) shows it.
///   Work it spawns onto other tasks, and a streaming response's body, is
///   not part of the attempt.
/// - When the handler fails (HTTP 5xx, gRPC non-OK) after a retried call
///   it made gave up on an error it judged retryable, the answer tells the
///   caller not to retry: `retry-exhausted: <reason>` (HTTP, the inner stop
///   reason), `grpc-retry-pushback-ms: -1` (gRPC, in the Trailers-Only
///   headers or the trailers). The ready-made classifiers read it as a
///   give-up from the layer below (reason `nested`). A give-up the handler
///   handled (a fallback) and a failure of its own are told apart as
///   [`Nested`](crate::Nested) tells them, erring toward marking.
///
/// The layer is always ready: it waits for the service below inside each
/// request's future, so that time spent in a queue below counts against the
/// request's deadline. The service below is cloned for each request.
///
/// ```
/// use std::time::Duration;
/// use http::{Request, Response, StatusCode};
/// use retry_runtime::tower::{ServerBody, ServerLayer, ServerService};
/// use tower::{ServiceBuilder, ServiceExt};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let handler = tower::service_fn(|_: Request<()>| async {
///     // The caller's deadline bounds the retried calls made here.
///     let left = retry_runtime::current_attempt().and_then(|attempt| attempt.time_left());
///     assert_eq!(left, Some(Duration::from_millis(250)));
///     Ok::<_, std::io::Error>(Response::new(String::from("ok")))
/// });
/// let server: ServerService<_> = ServiceBuilder::new()
///     .layer(ServerLayer::new())
///     .concurrency_limit(64) // a queue below the layer
///     .service(handler);
/// let request = Request::get("/").header("x-envoy-expected-rq-timeout-ms", "250").body(()).unwrap();
/// let response: Response<ServerBody<String>> = server.oneshot(request).await.unwrap();
/// assert_eq!(response.status(), StatusCode::OK);
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ServerLayer {
    _private: (),
}

impl ServerLayer {
    /// The layer.
    #[must_use]
    pub const fn new() -> Self {
        ServerLayer { _private: () }
    }
}

impl<S> Layer<S> for ServerLayer {
    type Service = ServerService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        ServerService { inner }
    }
}

/// The service a [`ServerLayer`] makes.
#[derive(Clone, Debug)]
pub struct ServerService<S> {
    inner: S,
}

impl<S, B, ResB> Service<Request<B>> for ServerService<S>
where
    S: Service<Request<B>, Response = Response<ResB>> + Clone + Send + 'static,
    S::Future: Send,
    S::Error: Send + 'static,
    B: Send + 'static,
    ResB: Send + 'static,
{
    type Response = Response<ServerBody<ResB>>;
    type Error = S::Error;
    type Future = ResponseFuture<Response<ServerBody<ResB>>, S::Error>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        // The service below is waited for in the request's future, after
        // its arrival: see `call`.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<B>) -> Self::Future {
        let clock = Clock::Async;
        let deadline = crate::propagate::time_left(request.headers())
            .and_then(|left| clock.now().checked_add(left));
        let grpc = is_grpc(request.headers());
        // This layer never polls its own `inner` ready: a clone is as good.
        let mut service = self.inner.clone();
        Box::pin(async move {
            poll_fn(|cx| service.poll_ready(cx)).await?;
            if deadline.is_some_and(|deadline| clock.now() > deadline) {
                return Ok(expired(grpc));
            }
            let mut scope = Scope::first(1, Deadline::new(deadline), clock);
            // No span: a request a server runs is no retried call's attempt.
            let span = crate::observe::AttemptSpan::none();
            let response = Scoped::new(&mut scope, (), service.call(request), span).await;
            // Read in the poll the handler returned in: the inner call that
            // gave up is the last to have ended on this thread.
            let reason = crate::last_call()
                .map(|last| last.reason())
                .filter(|reason| reason.gave_up_retrying());
            scope.finished();
            let gave_up = scope.inner_gave_up.then(|| reason.unwrap_or(Stop::Nested));
            Ok(answer(response?, grpc, gave_up))
        })
    }
}

/// The answer to a request whose deadline passed before its handler
/// started: HTTP 504, or a Trailers-Only gRPC `DEADLINE_EXCEEDED`.
fn expired<B>(grpc: bool) -> Response<ServerBody<B>> {
    let mut response = Response::new(ServerBody {
        inner: None,
        mark: false,
    });
    if grpc {
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert("grpc-status", HeaderValue::from(4));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static("deadline%20passed%20before%20the%20handler%20started"),
        );
    } else {
        *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    }
    response
}

/// The handler's response, marked "do not retry" when it is a failure and
/// an inner call `gave_up` for that reason.
fn answer<B>(
    mut response: Response<B>,
    grpc: bool,
    gave_up: Option<Stop>,
) -> Response<ServerBody<B>> {
    let failed = response.status().is_server_error();
    let headers = response.headers_mut();
    // A gRPC status that comes in the trailers is marked there.
    let mark = gave_up.is_some() && grpc && !headers.contains_key("grpc-status");
    match gave_up {
        Some(reason) if !grpc && failed => {
            headers.insert(EXHAUSTED, HeaderValue::from_static(reason.as_str()));
        }
        // A Trailers-Only status (`mark_grpc` leaves headers without one).
        Some(_) if grpc => mark_grpc(headers),
        _ => {}
    }
    response.map(|body| ServerBody {
        inner: Some(body),
        mark,
    })
}

/// A gRPC status other than OK in `headers` (Trailers-Only, or trailers) is
/// told not to retry (gRFC A6).
fn mark_grpc(headers: &mut http::HeaderMap) {
    if headers
        .get("grpc-status")
        .is_some_and(|status| status != "0")
    {
        headers.insert(PUSHBACK, HeaderValue::from_static("-1"));
    }
}

pin_project_lite::pin_project! {
    /// The body of a [`ServerLayer`]'s response: the handler's, with the
    /// trailers of a gRPC failure marked when an inner call gave up on it,
    /// or none for a request answered without running its handler.
    #[derive(Debug)]
    pub struct ServerBody<B> {
        #[pin]
        inner: Option<B>,
        mark: bool,
    }
}

impl<B> ServerBody<B> {
    /// The handler's body; `None` for a request answered without running
    /// its handler.
    pub fn into_inner(self) -> Option<B> {
        self.inner
    }
}

impl<B: Body> Body for ServerBody<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = self.project();
        let Some(inner) = this.inner.as_pin_mut() else {
            return Poll::Ready(None);
        };
        let mut frame = core::task::ready!(inner.poll_frame(cx));
        if *this.mark {
            if let Some(trailers) = frame
                .as_mut()
                .and_then(|frame| frame.as_mut().ok())
                .and_then(Frame::trailers_mut)
            {
                mark_grpc(trailers);
            }
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.as_ref().is_none_or(B::is_end_stream)
    }

    fn size_hint(&self) -> SizeHint {
        self.inner
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), B::size_hint)
    }
}
