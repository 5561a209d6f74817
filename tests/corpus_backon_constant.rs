//! Corpus, continued: ports of `backon` users with `ConstantBuilder`
//! (1s, 3 retries by default: `max = 4, base = "1s", multiplier = 1,
//! jitter = "none"`) and of `tokio-retry2` users, many of them workers and
//! clients with state on `&self`.
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::{retry, Jitter, Policy};

#[path = "corpus/support.rs"]
mod support;
use support::{assert_send, flaky_server, hits, Dep};

trait RetryableRequest: Clone + Send + Sync {
    type Response;
    fn should_retry(&self, error: &ServiceError) -> bool;
}

#[derive(Debug, PartialEq, Eq)]
enum ServiceError {
    Unavailable(u32),
    Invalid,
}

#[derive(Clone)]
struct AppendRecords {
    idempotent: bool,
}

impl RetryableRequest for AppendRecords {
    type Response = u32;
    fn should_retry(&self, error: &ServiceError) -> bool {
        self.idempotent && matches!(error, ServiceError::Unavailable(_))
    }
}

struct BasinClient {
    frontend: Dep,
}

impl BasinClient {
    async fn send(&self, _request: AppendRecords) -> Result<u32, ServiceError> {
        self.frontend.call().map_err(ServiceError::Unavailable)
    }

    // Port of `send_retryable<T: RetryableRequest>` in s2-streamstore's client
    // (backon ConstantBuilder, `.when(|e| service_req.should_retry(e))`; find_string
    // id 6796858550): a classifier that asks the by-value generic argument.
    #[retry(max = 4, base = "1s", multiplier = 1, jitter = "none", on = |e| service_req.should_retry(e))]
    async fn send_retryable<T: RetryableRequest<Response = u32> + Into<AppendRecords>>(
        &self,
        service_req: T,
    ) -> Result<T::Response, ServiceError> {
        self.send(service_req.clone().into()).await
    }
}

#[tokio::test(start_paused = true)]
async fn classifier_asks_the_request() {
    let client = BasinClient {
        frontend: Dep::failing(2),
    };
    let future = client.send_retryable(AppendRecords { idempotent: true });
    assert_send(&future);
    assert_eq!(future.await, Ok(3));
    assert_eq!(client.frontend.calls(), 3);

    let client = BasinClient {
        frontend: Dep::failing(2),
    };
    let once = client
        .send_retryable(AppendRecords { idempotent: false })
        .await;
    assert_eq!(once, Err(ServiceError::Unavailable(1)));
    assert_eq!(client.frontend.calls(), 1);
    assert_ne!(ServiceError::Invalid, ServiceError::Unavailable(0));
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct QueueMessage {
    id: u32,
}

struct Handler {
    downstream: Dep,
}

impl Handler {
    async fn handle(&self, message: &QueueMessage) -> anyhow::Result<u32> {
        self.downstream
            .call()
            .map(|_| message.id)
            .map_err(|n| anyhow::anyhow!("handler failed ({n})"))
    }
}

// Port of the Redis queue consumer in a RedisManager worker (backon ConstantBuilder
// around `handler.handle(&message)` in a spawned loop; find_string id 4677548404).
#[retry(max = 4, base = "1s", multiplier = 1, jitter = "none")]
async fn process(handler: &Handler, message: &QueueMessage) -> anyhow::Result<u32> {
    handler.handle(message).await
}

#[tokio::test(start_paused = true)]
async fn spawned_queue_consumer() {
    let handler = Arc::new(Handler {
        downstream: Dep::failing(2),
    });
    let (tx, mut rx) = tokio::sync::mpsc::channel::<QueueMessage>(4);
    let worker = {
        let handler = Arc::clone(&handler);
        tokio::spawn(async move {
            let mut done = Vec::new();
            while let Some(message) = rx.recv().await {
                match process(&handler, &message).await {
                    Ok(id) => done.push(id),
                    Err(e) => eprintln!("Error occurred while trying process message: {e}"),
                }
            }
            done
        })
    };
    for id in [7, 8] {
        tx.send(QueueMessage { id }).await.unwrap();
    }
    drop(tx);
    assert_eq!(worker.await.unwrap(), [7, 8]);
    // Message 7 took three calls, message 8 one.
    assert_eq!(handler.downstream.calls(), 4);
}

// Port of the playlist scan in a NetEase crawler (backon ConstantBuilder with a zero
// delay around `.form(&params)` inside JoinSet tasks; find_string id 43405511926):
// a by-value `HashMap` the body only borrows.
#[retry(max = 4, base = "1ms", multiplier = 1, jitter = "none")]
async fn playlist_detail(
    client: &reqwest::Client,
    url: &str,
    params: HashMap<&'static str, String>,
) -> Result<bytes::Bytes, reqwest::Error> {
    let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
    client
        .post(format!("{url}/api/v6/playlist/detail?{}", query.join("&")))
        .send()
        .await?
        .error_for_status()?
        .bytes()
        .await
}

#[tokio::test(start_paused = true)]
async fn join_set_of_retried_requests() {
    let (url, served) = flaky_server(2).await;
    let client = reqwest::Client::new();
    let mut join_set = tokio::task::JoinSet::new();
    for id in 1..=3 {
        let client = client.clone();
        let url = url.clone();
        join_set.spawn(async move {
            let mut params = HashMap::new();
            params.insert("id", format!("{id}"));
            playlist_detail(&client, &url, params).await
        });
    }
    let mut ok = 0;
    while let Some(result) = join_set.join_next().await {
        assert_eq!(&result.unwrap().unwrap()[..], b"ok");
        ok += 1;
    }
    assert_eq!((ok, hits(&served)), (3, 5));
}

#[derive(Debug)]
enum SvixError {
    Http { status: u16 },
}

struct SvixApi {
    statuses: std::sync::Mutex<Vec<u16>>,
}

// Port of the message forwarding in a svix bridge (backon ConstantBuilder with jitter,
// `.when(429 or >= 500)`, `.notify` logging; find_string id 33285559719).
#[retry(
    max = 4,
    base = "1s",
    multiplier = 1,
    on = |err| matches!(err, SvixError::Http { status } if *status == 429 || *status >= 500),
    on_retry = |err, _, wait| eprintln!("Retrying svix api error {err:?} after {wait:?}")
)]
async fn create_message(
    svix_api: &SvixApi,
    tenant_id: &str,
    payload: &str,
) -> Result<String, SvixError> {
    let status = svix_api.statuses.lock().unwrap().pop().unwrap_or(200);
    if status >= 400 {
        return Err(SvixError::Http { status });
    }
    Ok(format!("{tenant_id}:{payload}"))
}

#[tokio::test(start_paused = true)]
async fn svix_statuses_classified() {
    let api = SvixApi {
        statuses: std::sync::Mutex::new(vec![503, 429]),
    };
    let future = create_message(&api, "t1", "hello");
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "t1:hello");
    let api = SvixApi {
        statuses: std::sync::Mutex::new(vec![200, 404, 503]),
    };
    assert!(matches!(
        create_message(&api, "t1", "x").await,
        Err(SvixError::Http { status: 404 })
    ));
    assert_eq!(api.statuses.lock().unwrap().len(), 1);
}

#[derive(Debug, PartialEq, Eq)]
enum TxManagerError {
    ChannelClosed,
    Rpc(u32),
}

impl TxManagerError {
    fn is_retryable(&self) -> bool {
        matches!(self, TxManagerError::Rpc(_))
    }
}

impl std::fmt::Display for TxManagerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{self:?}")
    }
}

struct TxManager {
    closed: AtomicBool,
    provider: Dep,
}

impl TxManager {
    // Port of `TxManager::craft_tx` retry in a batcher (backon ConstantBuilder 2s x30,
    // closed flag re-checked on each attempt; find_string id 53149769639).
    #[retry(max = 31, base = "2s", multiplier = 1, jitter = "none", on = TxManagerError::is_retryable)]
    async fn craft(&self, candidate: u64) -> Result<u64, TxManagerError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(TxManagerError::ChannelClosed);
        }
        let n = self.provider.call().map_err(TxManagerError::Rpc)?;
        if n == 3 {
            self.closed.store(true, Ordering::SeqCst);
        }
        Ok(candidate + u64::from(n))
    }
}

#[tokio::test(start_paused = true)]
async fn early_return_stops_the_loop() {
    let manager = TxManager {
        closed: AtomicBool::new(false),
        provider: Dep::failing(2),
    };
    let future = manager.craft(100);
    assert_send(&future);
    assert_eq!(future.await, Ok(103));
    assert_eq!(manager.craft(1).await, Err(TxManagerError::ChannelClosed));
    assert_eq!(manager.provider.calls(), 3);
    assert_eq!(TxManagerError::Rpc(1).to_string(), "Rpc(1)");
}

// Port of `dial_throwaway` in an iroh-based handoff tool (backon ConstantBuilder 2s x30
// with notify, the whole retry under `tokio::time::timeout`; find_string id
// 55956660866): the outer timeout becomes `deadline`.
#[retry(
    max = 31,
    base = "2s",
    multiplier = 1,
    jitter = "none",
    deadline = "15s"
)]
async fn dial_throwaway(endpoint: &Dep, node_id: u64) -> anyhow::Result<String> {
    let n = endpoint
        .call()
        .map_err(|n| anyhow::anyhow!("claim dial {n} to {node_id} failed"))?;
    Ok(format!("connection {n}"))
}

#[tokio::test(start_paused = true)]
async fn deadline_instead_of_an_outer_timeout() {
    let endpoint = Dep::failing(100);
    let future = dial_throwaway(&endpoint, 9);
    assert_send(&future);
    // Attempts at 0, 2, .., 14s: the wait after the eighth would pass 15s.
    assert_eq!(
        future.await.unwrap_err().to_string(),
        "claim dial 8 to 9 failed"
    );
    assert_eq!(endpoint.calls(), 8);
}

#[derive(Debug, PartialEq, Eq)]
enum FetchError {
    Transient,
    Permanent,
}

// Port of the bounded-retry test in an agent runtime (backon ConstantBuilder 1ms x2,
// `.when(Transient)`; find_string id 69052110692).
#[retry(max = 3, base = "1ms", multiplier = 1, jitter = "none", on = |e| *e == FetchError::Transient)]
async fn operation(
    calls: &AtomicU32,
    fail_with: fn(u32) -> Option<FetchError>,
) -> Result<u32, FetchError> {
    let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
    fail_with(n).map_or(Ok(42), Err)
}

#[tokio::test(start_paused = true)]
async fn only_eligible_failures_repeat() {
    let calls = AtomicU32::new(0);
    let future = operation(&calls, |n| (n == 1).then_some(FetchError::Transient));
    assert_send(&future);
    assert_eq!(future.await, Ok(42));
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let calls = AtomicU32::new(0);
    assert_eq!(
        operation(&calls, |_| Some(FetchError::Permanent)).await,
        Err(FetchError::Permanent)
    );
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

struct AdminClient {
    acls: std::sync::Mutex<Vec<&'static str>>,
}

// Port of `test_acls` in an rdkafka-based admin test (backon ConstantBuilder with
// `.context(client)`; find_string id 32502618538): the context becomes `&mut`.
#[retry(max = 4, base = "1s", multiplier = 1, jitter = "none")]
async fn list_acls(
    client: &mut AdminClient,
    expected_len: usize,
) -> Result<Vec<&'static str>, String> {
    let acls = client.acls.get_mut().unwrap();
    if acls.len() == expected_len {
        Ok(acls.clone())
    } else {
        acls.push("User:alice");
        Err("ACLS expected len not matching".to_owned())
    }
}

#[tokio::test(start_paused = true)]
async fn mutable_context_across_attempts() {
    let mut client = AdminClient {
        acls: std::sync::Mutex::new(Vec::new()),
    };
    let future = list_acls(&mut client, 2);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), ["User:alice", "User:alice"]);
}

struct Blockchain {
    node: Dep,
}

struct EthereumData {
    blockchain: Arc<Blockchain>,
}

impl EthereumData {
    // Port of `EthereumData::get_block_at` in an EVM archiver (tokio-retry2
    // ExponentialFactorBackoff, `RetryError::transient`; find_string id 19270088308).
    #[retry(max = 5, base = "500ms", multiplier = 2, jitter = "full")]
    async fn get_block_at(&self, height: u64) -> anyhow::Result<Vec<u8>> {
        let n = self
            .blockchain
            .node
            .call()
            .map_err(|n| anyhow::anyhow!("eth_getBlockByNumber({height}) failed ({n})"))?;
        Ok(format!("block {height} after {n}").into_bytes())
    }
}

#[tokio::test(start_paused = true)]
async fn archiver_block_fetch() {
    let data = EthereumData {
        blockchain: Arc::new(Blockchain {
            node: Dep::failing(3),
        }),
    };
    let future = data.get_block_at(19);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), b"block 19 after 4");
}

// Port of the Azure IoT connector's schema reporting (tokio-retry2 with the const
// `ExponentialFactorBackoff::from_millis(500, 2.0)`; find_string id 40885816933),
// written as a plain fn as a sync caller would.
#[retry(max = 4, base = "1ms", multiplier = 2, jitter = "none")]
fn report_schema(registry: &Dep, schema: &str) -> Result<String, std::io::Error> {
    registry
        .call()
        .map(|n| format!("{schema} v{n}"))
        .map_err(|_| std::io::Error::other("schema registry busy"))
}

#[test]
fn blocking_schema_report() {
    let registry = Dep::failing(2);
    assert_eq!(
        report_schema(&registry, "telemetry").unwrap(),
        "telemetry v3"
    );
    assert_eq!(registry.calls(), 3);
}

// ---------------------------------------------------------------------------
// The same ports through the closure API, as a backon or tokio-retry2 user
// edits them: `op.retry(ConstantBuilder::default()).when(f).await` becomes
// `CONSTANT.on(f).run(op).await`, each with its original error type and no
// `From` impl. Each test runs the attribute's port and the twin against the
// same dependency and compares the calls.
// ---------------------------------------------------------------------------

/// backon's `ConstantBuilder::default()`, as the ports above write it: 1s,
/// 3 retries, no jitter.
const CONSTANT: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_secs(1))
    .with_multiplier(1.0)
    .with_jitter(Jitter::None);

#[tokio::test(start_paused = true)]
async fn twin_classifier_asks_the_request() {
    for idempotent in [true, false] {
        let (by_attribute, by_closure) = (
            BasinClient {
                frontend: Dep::failing(2),
            },
            BasinClient {
                frontend: Dep::failing(2),
            },
        );
        let request = AppendRecords { idempotent };
        let attribute = by_attribute.send_retryable(request.clone()).await;
        let future = CONSTANT
            .on(|e: &ServiceError| request.should_retry(e))
            .run(|| by_closure.send(request.clone()));
        assert_send(&future);
        assert_eq!(future.await, attribute);
        assert_eq!(by_closure.frontend.calls(), by_attribute.frontend.calls());
    }
}

#[tokio::test(start_paused = true)]
async fn twin_queue_consumer() {
    let (by_attribute, by_closure) = (
        Handler {
            downstream: Dep::failing(2),
        },
        Handler {
            downstream: Dep::failing(2),
        },
    );
    let message = QueueMessage { id: 7 };
    let attribute = process(&by_attribute, &message).await.unwrap();
    let future = CONSTANT.retry(|| by_closure.handle(&message));
    assert_send(&future);
    let closure: anyhow::Result<u32> = future.await;
    assert_eq!(closure.unwrap(), attribute);
    assert_eq!(
        by_closure.downstream.calls(),
        by_attribute.downstream.calls()
    );
}

#[tokio::test(start_paused = true)]
async fn twin_playlist_scan_with_reqwest_errors() {
    let client = reqwest::Client::new();
    let params = || HashMap::from([("id", "1".to_owned())]);
    let (url, by_attribute) = flaky_server(2).await;
    let attribute = playlist_detail(&client, &url, params()).await.unwrap();
    let (url, by_closure) = flaky_server(2).await;
    let fast = CONSTANT.with_base(Duration::from_millis(1));
    let params = params();
    // `reqwest::Error` kept: no `From<TimedOut>` is asked for.
    let future = fast.retry(|| async {
        let query: Vec<String> = params.iter().map(|(k, v)| format!("{k}={v}")).collect();
        client
            .post(format!("{url}/api/v6/playlist/detail?{}", query.join("&")))
            .send()
            .await?
            .error_for_status()?
            .bytes()
            .await
    });
    assert_send(&future);
    let closure: Result<bytes::Bytes, reqwest::Error> = future.await;
    assert_eq!(closure.unwrap(), attribute);
    assert_eq!((hits(&by_closure), hits(&by_attribute)), (3, 3));
}

/// `create_message` as the svix bridge writes it with backon, its `.when`
/// and `.notify`: `on` and `on_retry`.
async fn create_message_by_closure(
    svix_api: &SvixApi,
    tenant_id: &str,
    payload: &str,
) -> Result<String, SvixError> {
    CONSTANT
        .with_jitter(Jitter::Full)
        .on(|err: &SvixError| matches!(err, SvixError::Http { status } if *status == 429 || *status >= 500))
        .on_retry(|err, _, wait| eprintln!("Retrying svix api error {err:?} after {wait:?}"))
        .run(|| async {
            let status = svix_api.statuses.lock().unwrap().pop().unwrap_or(200);
            if status >= 400 {
                return Err(SvixError::Http { status });
            }
            Ok(format!("{tenant_id}:{payload}"))
        })
        .await
}

#[tokio::test(start_paused = true)]
async fn twin_svix_statuses_classified() {
    for statuses in [vec![503, 429], vec![200, 404, 503]] {
        let by_attribute = SvixApi {
            statuses: std::sync::Mutex::new(statuses.clone()),
        };
        let by_closure = SvixApi {
            statuses: std::sync::Mutex::new(statuses),
        };
        let attribute = create_message(&by_attribute, "t1", "x").await;
        let future = create_message_by_closure(&by_closure, "t1", "x");
        assert_send(&future);
        assert_eq!(format!("{:?}", future.await), format!("{attribute:?}"));
        assert_eq!(
            by_closure.statuses.lock().unwrap().len(),
            by_attribute.statuses.lock().unwrap().len()
        );
    }
}

impl TxManager {
    /// `craft`'s body, unretried: what the batcher retried with backon.
    async fn craft_once(&self, candidate: u64) -> Result<u64, TxManagerError> {
        if self.closed.load(Ordering::SeqCst) {
            return Err(TxManagerError::ChannelClosed);
        }
        let n = self.provider.call().map_err(TxManagerError::Rpc)?;
        if n == 3 {
            self.closed.store(true, Ordering::SeqCst);
        }
        Ok(candidate + u64::from(n))
    }
}

#[tokio::test(start_paused = true)]
async fn twin_early_return_stops_the_loop() {
    let manager = || TxManager {
        closed: AtomicBool::new(false),
        provider: Dep::failing(2),
    };
    let (by_attribute, by_closure) = (manager(), manager());
    let policy = CONSTANT
        .with_max_attempts(31)
        .with_base(Duration::from_secs(2));
    for candidate in [100, 1] {
        let attribute = by_attribute.craft(candidate).await;
        let future = policy
            .on(TxManagerError::is_retryable)
            .run(|| by_closure.craft_once(candidate));
        assert_send(&future);
        assert_eq!(future.await, attribute);
    }
    assert_eq!(by_closure.provider.calls(), by_attribute.provider.calls());
}

#[tokio::test(start_paused = true)]
async fn twin_deadline_instead_of_an_outer_timeout() {
    let (by_attribute, by_closure) = (Dep::failing(100), Dep::failing(100));
    let attribute = dial_throwaway(&by_attribute, 9).await.unwrap_err();
    let policy = CONSTANT
        .with_max_attempts(31)
        .with_base(Duration::from_secs(2))
        .with_deadline(Duration::from_secs(15));
    let future = policy.retry(|| async {
        let n = by_closure
            .call()
            .map_err(|n| anyhow::anyhow!("claim dial {n} to {} failed", 9))?;
        anyhow::Ok(format!("connection {n}"))
    });
    assert_send(&future);
    assert_eq!(future.await.unwrap_err().to_string(), attribute.to_string());
    assert_eq!((by_closure.calls(), by_attribute.calls()), (8, 8));
}

#[tokio::test(start_paused = true)]
async fn twin_only_eligible_failures_repeat() {
    let cases: [fn(u32) -> Option<FetchError>; 2] = [
        |n| (n == 1).then_some(FetchError::Transient),
        |_| Some(FetchError::Permanent),
    ];
    for fail_with in cases {
        let (by_attribute, by_closure) = (AtomicU32::new(0), AtomicU32::new(0));
        let attribute = operation(&by_attribute, fail_with).await;
        let policy = CONSTANT
            .with_max_attempts(3)
            .with_base(Duration::from_millis(1));
        let future = policy.on(|e| *e == FetchError::Transient).run(|| async {
            let n = by_closure.fetch_add(1, Ordering::SeqCst) + 1;
            fail_with(n).map_or(Ok(42), Err)
        });
        assert_send(&future);
        assert_eq!(future.await, attribute);
        assert_eq!(
            by_closure.load(Ordering::SeqCst),
            by_attribute.load(Ordering::SeqCst)
        );
    }
}

#[tokio::test(start_paused = true)]
async fn twin_mutable_context_across_attempts() {
    let mut by_attribute = AdminClient {
        acls: std::sync::Mutex::new(Vec::new()),
    };
    let attribute = list_acls(&mut by_attribute, 2).await.unwrap();
    // backon's `.context(client)`: the closure holds the `&mut` instead,
    // and each attempt's future is ready when made.
    let mut client = AdminClient {
        acls: std::sync::Mutex::new(Vec::new()),
    };
    let future = CONSTANT.retry(|| {
        let acls = client.acls.get_mut().unwrap();
        let outcome = if acls.len() == 2 {
            Ok(acls.clone())
        } else {
            acls.push("User:alice");
            Err("ACLS expected len not matching".to_owned())
        };
        async move { outcome }
    });
    assert_send(&future);
    let closure: Result<Vec<&'static str>, String> = future.await;
    assert_eq!(closure.unwrap(), attribute);
}

impl EthereumData {
    /// `get_block_at`'s body, unretried: `Retry::spawn(strategy, action)`.
    async fn get_block_once(&self, height: u64) -> anyhow::Result<Vec<u8>> {
        let n = self
            .blockchain
            .node
            .call()
            .map_err(|n| anyhow::anyhow!("eth_getBlockByNumber({height}) failed ({n})"))?;
        Ok(format!("block {height} after {n}").into_bytes())
    }
}

#[tokio::test(start_paused = true)]
async fn twin_archiver_block_fetch() {
    let data = || EthereumData {
        blockchain: Arc::new(Blockchain {
            node: Dep::failing(3),
        }),
    };
    let (by_attribute, by_closure) = (data(), data());
    let attribute = by_attribute.get_block_at(19).await.unwrap();
    // tokio-retry2's `Retry::spawn(strategy, action)`: `POLICY.retry(action)`.
    let strategy = Policy::new()
        .with_max_attempts(5)
        .with_base(Duration::from_millis(500));
    let future = strategy.retry(|| by_closure.get_block_once(19));
    assert_send(&future);
    assert_eq!(future.await.unwrap(), attribute);
    assert_eq!(
        by_closure.blockchain.node.calls(),
        by_attribute.blockchain.node.calls()
    );
}

#[test]
fn twin_blocking_schema_report() {
    let (by_attribute, by_closure) = (Dep::failing(2), Dep::failing(2));
    let attribute = report_schema(&by_attribute, "telemetry").unwrap();
    let closure: Result<String, std::io::Error> = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_millis(1))
        .with_jitter(Jitter::None)
        .retrying()
        .run_blocking(|| {
            by_closure
                .call()
                .map(|n| format!("telemetry v{n}"))
                .map_err(|_| std::io::Error::other("schema registry busy"))
        });
    assert_eq!(closure.unwrap(), attribute);
    assert_eq!((by_closure.calls(), by_attribute.calls()), (3, 3));
}
