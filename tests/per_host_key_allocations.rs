//! The tower layer's `per_authority` key of a URI without a port
//! (`https://payments.internal/`, the usual absolute URI), made with the
//! scheme's default port, costs no more allocations per call than the same
//! request written with `:443`. One test in this file, so that no other
//! test moves the thread's count.

use std::sync::Arc;
use std::time::Duration;

use retry_runtime::registry::{Registry, Upstream};
use retry_runtime::tower::RetryLayer;
use retry_runtime::{Jitter, Policy};
use tower::{Service, ServiceBuilder, ServiceExt};

#[path = "support/allocations.rs"]
mod counting_allocator;

use counting_allocator::allocations as allocations_so_far;

#[global_allocator]
static COUNTING: counting_allocator::Counting = counting_allocator::Counting;

static ONE_ATTEMPT: Policy = Policy::new()
    .with_max_attempts(1)
    .with_base(Duration::from_millis(10))
    .with_jitter(Jitter::None);

#[tokio::test(flavor = "current_thread", start_paused = true)]
async fn a_uri_without_a_port_allocates_no_more_than_one_with_it() {
    let upstreams = Arc::new(Registry::new(64, |_: &str| Upstream::new()));
    let mut service = ServiceBuilder::new()
        .layer(RetryLayer::new(&ONE_ATTEMPT).per_authority(Arc::clone(&upstreams)))
        .service(tower::service_fn(|_: http::Request<String>| async {
            Ok::<_, std::io::Error>(http::Response::new(()))
        }));
    service.ready().await.unwrap();
    let mut allocations = |url: &'static str| {
        let request = http::Request::get(url).body(String::new()).unwrap();
        let before = allocations_so_far();
        let call = service.call(request);
        let after_call = allocations_so_far();
        drop(call);
        after_call - before
    };
    // Both spellings name one entry; make it first.
    let _ = allocations("https://payments.internal:443/");
    let _ = allocations("https://payments.internal/");
    let with_port = allocations("https://payments.internal:443/charge");
    let without_port = allocations("https://payments.internal/charge");
    assert_eq!(upstreams.len(), 1);
    assert_eq!(
        without_port, with_port,
        "without a port {without_port} allocations per call, with it {with_port}"
    );
}
