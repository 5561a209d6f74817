//! A chain of real services on 127.0.0.1, each retrying three times with
//! retry-runtime, in front of a dependency that always fails:
//!
//! ```text
//! user --HTTP--> gateway --HTTP--> orders --gRPC--> stock --HTTP--> db (503 after 10 ms)
//! ```
//!
//! [`run`] sends the same traffic with or without `tower::ServerLayer` on
//! every tier of ours (gateway, orders, stock), and notes when each request
//! reaches each hop. `cargo run -p retry-clients --example chain` prints
//! the figures; `tests/services_chain.rs` asserts them.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::State;
use axum::http::uri::PathAndQuery;
use axum::http::{Request, Response, StatusCode};
use axum::routing::get;
use axum::Router;
use bytes::{Buf, BufMut, Bytes};
use retry_runtime::reqwest_middleware::RetryMiddleware;
use retry_runtime::tower::{HttpClassifier, NoUpstreams, RetryLayer, RetryService, ServerLayer};
use retry_runtime::{Jitter, Policy};
use tokio::net::TcpListener;
use tokio::time::Instant;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::transport::Channel;
use tonic::Status;
use tower::util::MapRequestLayer;
use tower::Layer;

/// The hops a user's request takes, in order.
pub const HOPS: [&str; 4] = [
    "user -> gateway",
    "gateway -> orders",
    "orders -> stock (gRPC)",
    "stock -> db",
];

/// Every tier's policy, the user's too: three attempts, waits of 5 then
/// 10 ms.
const TIER: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(5))
    .with_jitter(Jitter::None);

/// How long the failing dependency takes to answer 503.
pub const DB_LATENCY: Duration = Duration::from_millis(10);

/// What the user sends, and how the tiers are set up.
#[derive(Clone, Copy, Debug)]
pub struct Traffic {
    /// `ServerLayer` on the gateway, orders and stock.
    pub server_layer: bool,
    /// The user's client's attempts (this library's reqwest middleware).
    pub user_attempts: u32,
    /// The user's deadline (the policy's `deadline`, which the middleware
    /// sends as `x-envoy-expected-rq-timeout-ms`). The user's client cuts
    /// no attempt off: it waits for the answer.
    pub user_deadline: Option<Duration>,
    /// User requests, one after the other.
    pub requests: u32,
}

/// What the traffic came to, per user request.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Figures {
    /// Requests each hop carried ([`HOPS`] order).
    pub sent: [f64; 4],
    /// Of them, those sent after the user's deadline had passed.
    pub after_deadline: [f64; 4],
    /// The time the user waited for the answer, on average.
    pub latency: Duration,
}

/// When requests reached each hop's server.
#[derive(Clone, Default)]
struct Arrivals(Arc<Mutex<[Vec<Instant>; 4]>>);

impl Arrivals {
    fn note(&self, hop: usize) {
        self.0.lock().unwrap()[hop].push(Instant::now());
    }

    /// Notes each request's arrival at `hop`, before anything else in the
    /// server sees it.
    fn layer<B>(&self, hop: usize) -> MapRequestLayer<impl Fn(Request<B>) -> Request<B> + Clone> {
        let arrivals = self.clone();
        MapRequestLayer::new(move |request| {
            arrivals.note(hop);
            request
        })
    }

    fn take(&self) -> [Vec<Instant>; 4] {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

/// Runs `traffic` against a chain of its own, and gives the figures.
pub async fn run(traffic: Traffic) -> Figures {
    let arrivals = Arrivals::default();
    let db = serve_db(&arrivals).await;
    let stock = serve_stock(&arrivals, traffic.server_layer, db).await;
    let orders = serve_http(&arrivals, 1, traffic.server_layer, Tier::Orders(stock)).await;
    let gateway = serve_http(&arrivals, 0, traffic.server_layer, Tier::Gateway(orders)).await;

    let mut user_policy = TIER.with_max_attempts(traffic.user_attempts);
    if let Some(deadline) = traffic.user_deadline {
        user_policy = user_policy.with_deadline(deadline);
    }
    let user = client(user_policy);
    let mut figures = Figures::default();
    let per_request = f64::from(traffic.requests);
    for _ in 0..traffic.requests {
        let started = Instant::now();
        let status = user.get(&gateway).send().await.map(|r| r.status());
        assert_eq!(status.ok(), Some(StatusCode::SERVICE_UNAVAILABLE));
        figures.latency += started.elapsed() / traffic.requests;
        let deadline = traffic.user_deadline.map(|deadline| started + deadline);
        for (hop, times) in arrivals.take().iter().enumerate() {
            let late = times.iter().filter(|at| deadline.is_some_and(|d| **at > d));
            figures.sent[hop] += times.len() as f64 / per_request;
            figures.after_deadline[hop] += late.count() as f64 / per_request;
        }
    }
    figures
}

/// A reqwest client that retries under `policy` (the user's, or a tier's).
fn client(policy: Policy) -> reqwest_middleware::ClientWithMiddleware {
    // No idle connections: a test runs this on a paused clock, which their
    // timers would move.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()
        .unwrap();
    reqwest_middleware::ClientBuilder::new(client)
        .with(RetryMiddleware::new(policy))
        .build()
}

async fn bind() -> (TcpListener, String) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    (listener, url)
}

/// The failing dependency: 503 after [`DB_LATENCY`], every time. Not ours:
/// no layer.
async fn serve_db(arrivals: &Arrivals) -> String {
    let router = Router::new()
        .route(
            "/",
            get(|| async {
                tokio::time::sleep(DB_LATENCY).await;
                StatusCode::SERVICE_UNAVAILABLE
            }),
        )
        .layer(arrivals.layer(3));
    let (listener, url) = bind().await;
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("{url}/")
}

/// The HTTP tiers, with what each calls next.
#[derive(Clone)]
enum Tier {
    Gateway(String),
    Orders(StockClient),
}

/// A tonic channel under the retry layer.
type StockClient = RetryService<Channel, HttpClassifier, NoUpstreams>;

/// The gateway calls orders over HTTP, orders calls stock over gRPC, each
/// retrying three times; a failure below is answered 503. The handlers
/// know nothing of deadlines or marks.
async fn handle(
    State((tier, client)): State<(Tier, reqwest_middleware::ClientWithMiddleware)>,
) -> StatusCode {
    match tier {
        Tier::Gateway(orders) => match client.get(&orders).send().await {
            Ok(response) => response.status(),
            Err(_) => StatusCode::BAD_GATEWAY,
        },
        Tier::Orders(stock) => match check_stock(stock).await {
            Ok(_) => StatusCode::OK,
            Err(_) => StatusCode::SERVICE_UNAVAILABLE,
        },
    }
}

async fn serve_http(arrivals: &Arrivals, hop: usize, server_layer: bool, tier: Tier) -> String {
    let router = Router::new()
        .route("/", get(handle))
        .with_state((tier, client(TIER)));
    let router = if server_layer {
        router.layer(ServerLayer::new())
    } else {
        router
    };
    let router = router.layer(arrivals.layer(hop));
    let (listener, url) = bind().await;
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("{url}/")
}

/// The stock service: one unary method, which calls the db.
#[derive(Clone)]
struct Stock {
    db: String,
    client: reqwest_middleware::ClientWithMiddleware,
}

impl tonic::server::UnaryService<Bytes> for Stock {
    type Response = Bytes;
    type Future = Pin<Box<dyn Future<Output = Result<tonic::Response<Bytes>, Status>> + Send>>;

    fn call(&mut self, _: tonic::Request<Bytes>) -> Self::Future {
        let stock = self.clone();
        Box::pin(async move {
            let response = stock.client.get(&stock.db).send().await;
            match response.map(|response| response.status()) {
                Ok(status) if status.is_success() => Ok(tonic::Response::new(Bytes::new())),
                _ => Err(Status::unavailable("the db failed")),
            }
        })
    }
}

impl tonic::server::NamedService for Stock {
    const NAME: &'static str = "chain.Stock";
}

impl tower::Service<Request<tonic::body::Body>> for Stock {
    type Response = Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: Request<tonic::body::Body>) -> Self::Future {
        let stock = self.clone();
        Box::pin(async move { Ok(tonic::server::Grpc::new(Raw).unary(stock, request).await) })
    }
}

async fn serve_stock(arrivals: &Arrivals, server_layer: bool, db: String) -> StockClient {
    let stock = Stock {
        db,
        client: client(TIER),
    };
    let (listener, url) = bind().await;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let mut builder = tonic::transport::Server::builder().layer(arrivals.layer(2));
    if server_layer {
        let server = builder.layer(ServerLayer::new()).add_service(stock);
        tokio::spawn(server.serve_with_incoming(incoming));
    } else {
        tokio::spawn(builder.add_service(stock).serve_with_incoming(incoming));
    }
    let channel = Channel::from_shared(url).unwrap().connect_lazy();
    RetryLayer::new(&TIER).layer(channel)
}

/// One call of `chain.Stock/Check`, as a generated client makes it.
async fn check_stock(channel: StockClient) -> Result<Bytes, Status> {
    let mut client = tonic::client::Grpc::new(channel);
    client
        .ready()
        .await
        .map_err(|error| Status::unavailable(error.to_string()))?;
    let path = PathAndQuery::from_static("/chain.Stock/Check");
    let request = tonic::Request::new(Bytes::new());
    Ok(client.unary(request, path, Raw).await?.into_inner())
}

/// Messages are their bytes: no protoc needed.
#[derive(Clone, Copy, Debug, Default)]
struct Raw;

impl Codec for Raw {
    type Encode = Bytes;
    type Decode = Bytes;
    type Encoder = Raw;
    type Decoder = Raw;
    fn encoder(&mut self) -> Raw {
        Raw
    }
    fn decoder(&mut self) -> Raw {
        Raw
    }
}

impl Encoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn encode(&mut self, item: Bytes, dst: &mut EncodeBuf<'_>) -> Result<(), Status> {
        dst.put(item);
        Ok(())
    }
}

impl Decoder for Raw {
    type Item = Bytes;
    type Error = Status;
    fn decode(&mut self, src: &mut DecodeBuf<'_>) -> Result<Option<Bytes>, Status> {
        Ok(Some(src.copy_to_bytes(src.remaining())))
    }
}
