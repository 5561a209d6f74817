//! A tonic server on 127.0.0.1 for the gRPC tests: `test.Echo`, written
//! by hand over tonic's generic server pieces and a codec of raw bytes, so
//! no protoc is needed.
#![allow(dead_code)]

use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Buf, BufMut, Bytes};
use retry_runtime::classify::grpc;
use tonic::codec::{Codec, DecodeBuf, Decoder, EncodeBuf, Encoder};
use tonic::server::{NamedService, UnaryService};
use tonic::transport::Channel;
use tonic::{Code, Status};

/// Messages are their bytes.
#[derive(Clone, Copy, Debug, Default)]
pub struct Raw;

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

/// `test.Echo`: answers each call with the next scripted status, or echoes
/// the request once the script is done.
#[derive(Clone, Default)]
pub struct Echo {
    pub script: Arc<Mutex<VecDeque<Status>>>,
    pub calls: Arc<AtomicU32>,
}

impl NamedService for Echo {
    const NAME: &'static str = "test.Echo";
}

impl UnaryService<Bytes> for Echo {
    type Response = Bytes;
    type Future = std::future::Ready<Result<tonic::Response<Bytes>, Status>>;
    fn call(&mut self, request: tonic::Request<Bytes>) -> Self::Future {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let next = self.script.lock().unwrap().pop_front();
        std::future::ready(match next {
            Some(status) => Err(status),
            None => Ok(tonic::Response::new(request.into_inner())),
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

pub fn status(code: Code, pushback: Option<&'static str>) -> Status {
    let mut status = Status::new(code, "scripted");
    if let Some(pushback) = pushback {
        status
            .metadata_mut()
            .insert(grpc::PUSHBACK, pushback.parse().unwrap());
    }
    status
}

/// Serves `test.Echo` on 127.0.0.1 and connects a channel to it.
pub async fn serve(script: impl IntoIterator<Item = Status>) -> (Channel, Arc<AtomicU32>) {
    let echo = Echo::default();
    echo.script.lock().unwrap().extend(script);
    let calls = Arc::clone(&echo.calls);
    (serve_service(echo).await, calls)
}

/// Serves `service` on 127.0.0.1 and connects a channel to it.
pub async fn serve_service<S>(service: S) -> Channel
where
    S: tower::Service<
            http::Request<tonic::body::Body>,
            Response = http::Response<tonic::body::Body>,
            Error = Infallible,
        > + NamedService
        + Clone
        + Send
        + Sync
        + 'static,
    S::Future: Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(
        tonic::transport::Server::builder()
            .add_service(service)
            .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener)),
    );
    Channel::from_shared(format!("http://{addr}"))
        .unwrap()
        .connect()
        .await
        .unwrap()
}

/// One unary call of `test.Echo/Say` through `channel`, as a generated
/// client makes it.
pub async fn say<T>(channel: T, request: tonic::Request<Bytes>) -> Result<Bytes, Status>
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
    Ok(client.unary(request, path, Raw).await?.into_inner())
}
