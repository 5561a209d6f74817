//! tower's `TimeoutLayer` below the retry layer fails with tower's
//! `BoxError`, which the default `HttpClassifier` cannot judge: the error
//! says to give the layer `HttpClassifier::default().boxed_errors()`.
use std::time::Duration;

use retry_runtime::tower::RetryLayer;
use retry_runtime::Policy;
use tower::{ServiceBuilder, ServiceExt};

static POLICY: Policy = Policy::new().with_max_attempts(3);

#[tokio::main]
async fn main() {
    let client = tower::service_fn(|_: http::Request<String>| async {
        Ok::<_, std::io::Error>(http::Response::new(()))
    });
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&POLICY))
        .timeout(Duration::from_secs(2))
        .service(client);
    let _ = service.ready().await;
}
