//! `cargo run -p retry-clients --example tonic_client`
//!
//! `RetryLayer` around a tonic `Channel`, in front of a real tonic server on
//! 127.0.0.1. `test.Echo/Say` echoes its message, after failing as told:
//! UNAVAILABLE with a pushback of 300 ms (gRFC A6's
//! `grpc-retry-pushback-ms`), or INTERNAL, which is not retried. The service
//! is written by hand over tonic's generic server with a codec of raw bytes,
//! so no `.proto` file or protoc is needed; a generated client takes the
//! retried channel the same way (`EchoClient::new(channel)`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes};
use retry_runtime::classify::grpc;
use retry_runtime::tower::RetryLayer;
use retry_runtime::Policy;
use tokio::time::Instant;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{NamedService, UnaryService};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// Up to 4 attempts; UNAVAILABLE is retried (the default codes).
static POLICY: Policy = Policy::new()
    .with_max_attempts(4)
    .with_deadline(Duration::from_secs(10));

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let echo = Echo::default();
    let channel = serve(echo.clone()).await?;
    let channel = tower::ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY).named("echo"))
        .service(channel);

    let cases = [
        (
            "UNAVAILABLE with a pushback of 300 ms, UNAVAILABLE, then OK",
            vec![unavailable(Some("300")), unavailable(None)],
        ),
        (
            "INTERNAL: not retried",
            vec![Status::new(Code::Internal, "broken")],
        ),
    ];
    for (what, script) in cases {
        println!("Say \"hello\"  ({what})");
        echo.script.lock().unwrap().extend(script);
        let start = Instant::now();
        match say(channel.clone(), b"hello").await {
            Ok(reply) => println!("  => OK {reply:?} after {:.0?}\n", start.elapsed()),
            Err(status) => println!(
                "  => {:?} {:?} after {:.0?}\n",
                status.code(),
                status.message(),
                start.elapsed()
            ),
        }
        echo.script.lock().unwrap().clear();
    }
    Ok(())
}

fn unavailable(pushback_ms: Option<&'static str>) -> Status {
    let mut status = Status::unavailable("overloaded");
    if let Some(pushback) = pushback_ms {
        let value = pushback.parse().expect("a valid header value");
        status.metadata_mut().insert(grpc::PUSHBACK, value);
    }
    status
}

/// One unary call of `test.Echo/Say`, as a generated client makes it.
async fn say<T>(channel: T, message: &'static [u8]) -> Result<Bytes, Status>
where
    T: tonic::client::GrpcService<tonic::body::Body>,
    T::Error: Into<tonic::codegen::StdError>,
    T::ResponseBody: tonic::codegen::Body<Data = Bytes> + Send + 'static,
    <T::ResponseBody as tonic::codegen::Body>::Error: Into<tonic::codegen::StdError> + Send,
{
    let mut client = tonic::client::Grpc::new(channel);
    client
        .ready()
        .await
        .map_err(|error| Status::unavailable(error.into().to_string()))?;
    let path = http::uri::PathAndQuery::from_static("/test.Echo/Say");
    let request = tonic::Request::new(Bytes::from_static(message));
    Ok(client.unary(request, path, Raw).await?.into_inner())
}

/// Serves `echo` on 127.0.0.1 and connects a channel to it.
async fn serve(echo: Echo) -> Result<Channel, Box<dyn std::error::Error>> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let address = listener.local_addr()?;
    let incoming = tonic::transport::server::TcpIncoming::from(listener);
    let server = tonic::transport::Server::builder().add_service(echo);
    tokio::spawn(server.serve_with_incoming(incoming));
    println!("server listening on http://{address}\n");
    Ok(Channel::from_shared(format!("http://{address}"))?
        .connect()
        .await?)
}

/// `test.Echo`: fails with the next scripted status, or echoes the message
/// once the script is done.
#[derive(Clone, Default)]
struct Echo {
    script: Arc<Mutex<VecDeque<Status>>>,
}

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

impl UnaryService<Bytes> for Echo {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;
    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        let next = self.script.lock().unwrap().pop_front();
        std::future::ready(match next {
            Some(status) => {
                println!("    server: Say -> {:?}", status.code());
                Err(status)
            }
            None => {
                println!("    server: Say -> OK");
                Ok(tonic::Response::new(request.into_inner()))
            }
        })
    }
}

impl tower::Service<http::Request<tonic::body::Body>> for Echo {
    type Response = http::Response<tonic::body::Body>;
    type Error = Infallible;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Infallible>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, request: http::Request<tonic::body::Body>) -> Self::Future {
        let echo = self.clone();
        Box::pin(async move { Ok(tonic::server::Grpc::new(Raw).unary(echo, request).await) })
    }
}

/// A codec whose messages are their bytes.
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
