//! Real HTTP servers on 127.0.0.1 for the integration tests: an axum router,
//! in front of which the first connections can be dropped mid-response.
#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// A server running on the test's runtime.
pub struct Server {
    pub addr: SocketAddr,
    /// Connections dropped mid-response so far.
    pub dropped: Arc<AtomicU32>,
}

impl Server {
    pub fn url(&self, path: &str) -> String {
        format!("http://{}{path}", self.addr)
    }
}

/// Serves `router` on a port of its own. The first `drops` connections read
/// their request, send half a status line and close: to the client, the
/// connection closed before the response (hyper's `IncompleteMessage`).
pub async fn serve(router: Router, drops: u32) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let dropped = Arc::new(AtomicU32::new(0));
    let counter = Arc::clone(&dropped);
    tokio::spawn(async move {
        loop {
            let Ok((mut stream, _)) = listener.accept().await else {
                return;
            };
            if counter.load(Ordering::SeqCst) < drops {
                counter.fetch_add(1, Ordering::SeqCst);
                read_head(&mut stream).await;
                let _ = stream.write_all(b"HTTP/1.1 200 O").await;
                let _ = stream.shutdown().await;
                continue;
            }
            let service = TowerToHyperService::new(router.clone());
            tokio::spawn(async move {
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Server { addr, dropped }
}

/// Reads a request up to the end of its head (and a short body with it).
async fn read_head(stream: &mut tokio::net::TcpStream) {
    let mut seen = Vec::new();
    let mut buffer = [0_u8; 1024];
    while !seen.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(read) => seen.extend_from_slice(&buffer[..read]),
        }
    }
}

/// A server that answers every request with `status`, and the count of the
/// requests it has answered.
pub async fn answering(status: StatusCode) -> (Server, Arc<AtomicU32>) {
    let hits = Arc::new(AtomicU32::new(0));
    let router = Router::new()
        .route(
            "/",
            any(move |State(hits): State<Arc<AtomicU32>>| async move {
                hits.fetch_add(1, Ordering::SeqCst);
                status
            }),
        )
        .with_state(Arc::clone(&hits));
    (serve(router, 0).await, hits)
}
