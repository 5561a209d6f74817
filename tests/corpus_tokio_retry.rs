//! Corpus: functions ported from public repositories that retried with
//! `tokio-retry` / `tokio-retry2` (`Retry::spawn(strategy, action)`).
//! `ExponentialBackoff::from_millis(b)` waits b, b^2, ...: `base`, with the
//! `multiplier` that comes closest; `FixedInterval` is `multiplier = 1,
//! jitter = "none"`; `.take(n)` is `max = n + 1`; `.map(jitter)` is the
//! default full jitter.
use std::future::Future;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use retry_runtime::{retry, Policy};
use tokio::sync::mpsc;

#[path = "corpus/support.rs"]
mod support;
use support::{assert_send, flaky_server, hits, Dep};

// Port of `action` from loongs-zhang/rust-study src/bin/37retry.rs (`Result<u64, ()>`, take(3)).
#[retry(max = 4, base = "10ms", multiplier = 10)]
async fn action(dep: &Dep) -> Result<u64, ()> {
    println!("test");
    dep.call().map(u64::from).map_err(|_| ())
}

#[tokio::test(start_paused = true)]
async fn unit_error_type() {
    let dep = Dep::failing(10);
    let future = action(&dep);
    assert_send(&future);
    assert_eq!(future.await, Err(()));
    assert_eq!(dep.calls(), 4);
}

fn notify(err: &io::Error, duration: Duration) {
    println!("Error {err:?} occurred at {duration:?}");
}

// Port of the `spawn_notify` example in naomijub/rust-tokio-retry README.md
// (io::Error, a `notify(&E, Duration)` function; factor 1, max delay 100ms).
#[retry(
    max = 4,
    base = "10ms",
    cap = "100ms",
    multiplier = 1,
    on_retry = |err, _attempt, wait| notify(err, wait)
)]
async fn read_sensor(dep: &Dep) -> Result<u64, io::Error> {
    dep.call()
        .map(u64::from)
        .map_err(|_| io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
}

#[tokio::test(start_paused = true)]
async fn io_error_with_a_notify_function() {
    let dep = Dep::failing(2);
    let future = read_sensor(&dep);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), 3);
    assert_eq!(dep.calls(), 3);
}

#[derive(Debug, Clone, PartialEq, Eq)]
struct Page {
    title: String,
    revision: u32,
}

#[derive(Debug)]
enum WikiError {
    EditConflict,
}

struct Wiki {
    api: Dep,
}

impl Page {
    async fn save(self, wiki: &Wiki, text: &str) -> Result<(Page, String), WikiError> {
        tokio::task::yield_now().await;
        let n = wiki.api.call().map_err(|_| WikiError::EditConflict)?;
        Ok((
            Page {
                revision: self.revision + n,
                ..self
            },
            text.to_owned(),
        ))
    }
}

// Port of the bot-request report in a MediaWiki bot (tokio-retry, `page.clone()` per
// attempt, from_millis(5).map(jitter).take(3); find_string id 45703373433).
#[retry(max = 4, base = "5ms", multiplier = 5)]
async fn save_report(wiki: &Wiki, page: &Page, message: &str) -> Result<Page, WikiError> {
    let page = page.clone();
    let (page, _) = page.save(wiki, &format!("BOT: {message}")).await?;
    Ok(page)
}

#[tokio::test(start_paused = true)]
async fn page_cloned_inside_each_attempt() {
    let wiki = Wiki {
        api: Dep::failing(3),
    };
    let page = Page {
        title: "Bot requests".into(),
        revision: 10,
    };
    let future = save_report(&wiki, &page, "done");
    assert_send(&future);
    assert_eq!(future.await.unwrap().revision, 14);
    assert_eq!(wiki.api.calls(), 4);
    assert!(matches!(
        save_report(
            &Wiki {
                api: Dep::failing(4)
            },
            &page,
            "x"
        )
        .await,
        Err(WikiError::EditConflict)
    ));
}

#[derive(Clone)]
struct User {
    synced: Arc<Dep>,
}

impl User {
    async fn calendar_events(&self) -> anyhow::Result<Vec<u32>> {
        let n = self.synced.call().unwrap_or_else(|n| n);
        Ok((0..n.min(3)).collect())
    }

    async fn convo(&self, room_id: &str) -> anyhow::Result<String> {
        self.synced
            .call()
            .map_err(|_| anyhow::anyhow!("room {room_id} not synced yet"))?;
        Ok(format!("convo {room_id}"))
    }
}

// Port of the sync wait in acterglobal's rsvp smoketest (tokio-retry, FibonacciBackoff
// from 100ms, take(10), `bail!` until the events are there; find_string id 3527623203).
#[retry(max = 11, base = "100ms", multiplier = 1.6)]
async fn wait_for_calendar_events(client: &User, expected: usize) -> anyhow::Result<()> {
    if client.calendar_events().await?.len() != expected {
        anyhow::bail!("not all calendar_events found");
    }
    Ok(())
}

// Port of the convo wait in acterglobal's policy rule server test (tokio-retry,
// FibonacciBackoff, take(10); find_string id 10928965218): a by-value `String` the
// body only borrows.
#[retry(max = 11, base = "100ms", multiplier = 1.6)]
async fn wait_for_convo(client: &User, room_id: String) -> anyhow::Result<String> {
    client.convo(&room_id).await
}

#[tokio::test(start_paused = true)]
async fn polling_until_sync_caught_up() {
    let user = User {
        synced: Arc::new(Dep::default()),
    };
    let future = wait_for_calendar_events(&user, 3);
    assert_send(&future);
    future.await.unwrap();
    // calendar_events saw 1, 2, then 3 events.
    assert_eq!(user.synced.calls(), 3);

    let user = User {
        synced: Arc::new(Dep::failing(4)),
    };
    let future = wait_for_convo(&user, "!room:acter.global".to_owned());
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "convo !room:acter.global");
    assert_eq!(user.synced.calls(), 5);
}

type BoxedError = Box<dyn std::error::Error + Send + Sync>;

// Port of the test server health polling in a skyvault integration test (tokio-retry,
// FixedInterval::from_millis(100).take(50), `Box<dyn Error + Send + Sync>`; find_string
// id 32954062668).
#[retry(max = 51, base = "100ms", multiplier = 1, jitter = "none")]
async fn wait_healthy(url: &str) -> Result<(), BoxedError> {
    let status = reqwest::get(url).await?.status();
    if !status.is_success() {
        return Err(format!("health check: {status}").into());
    }
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn health_polling_with_a_boxed_error() {
    let (url, served) = flaky_server(7).await;
    let future = wait_healthy(&url);
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(hits(&served), 8);
}

#[derive(Debug, PartialEq, Eq)]
enum SolanaError {
    Rpc(u32),
}

type Slot = u64;

#[async_trait]
trait SolanaRpc {
    async fn get_slot(&self) -> Result<Slot, SolanaError>;
    async fn get_blocks(
        &self,
        start_slot: Slot,
        end_slot: Option<Slot>,
    ) -> Result<Vec<Slot>, SolanaError>;
}

struct RpcClient {
    node: Dep,
}

// Port of `impl SolanaRpc for RpcClient` in a Solana indexer (tokio-retry under
// #[async_trait], from_millis(100).max_delay(10s).map(jitter); find_string id 48931021428).
#[async_trait]
impl SolanaRpc for RpcClient {
    #[retry(max = 8, base = "100ms", cap = "10s")]
    async fn get_slot(&self) -> Result<Slot, SolanaError> {
        let n = self.node.call().map_err(SolanaError::Rpc)?;
        Ok(Slot::from(n) + 1000)
    }

    #[retry(max = 8, base = "100ms", cap = "10s")]
    async fn get_blocks(
        &self,
        start_slot: Slot,
        end_slot: Option<Slot>,
    ) -> Result<Vec<Slot>, SolanaError> {
        self.node.call().map_err(SolanaError::Rpc)?;
        Ok((start_slot..end_slot.unwrap_or(start_slot + 3)).collect())
    }
}

#[tokio::test(start_paused = true)]
async fn async_trait_rpc_client() {
    let client = RpcClient {
        node: Dep::failing(2),
    };
    let future = client.get_slot();
    assert_send(&future);
    assert_eq!(future.await, Ok(1003));
    assert_eq!(client.get_blocks(5, None).await, Ok(vec![5, 6, 7]));
    assert_eq!(client.node.calls(), 4);

    let down = RpcClient {
        node: Dep::failing(100),
    };
    assert_eq!(down.get_slot().await, Err(SolanaError::Rpc(8)));
    assert_eq!(down.node.calls(), 8);
}

#[derive(Debug)]
struct InternalError(String);

trait IntErr<T> {
    fn int_err(self) -> Result<T, InternalError>;
}

impl<T, E: std::fmt::Display> IntErr<T> for Result<T, E> {
    fn int_err(self) -> Result<T, InternalError> {
        self.map_err(|e| InternalError(e.to_string()))
    }
}

struct KamuApiServerClient {
    http_client: reqwest::Client,
    server_base_url: String,
}

impl KamuApiServerClient {
    // Port of `KamuApiServerClient::ready` in kamu-cli's e2e client (tokio-retry,
    // FixedInterval::from_millis(250).take(10); find_string id 12015509748).
    #[retry(max = 11, base = "250ms", multiplier = 1, jitter = "none")]
    async fn health(&self) -> Result<reqwest::Response, InternalError> {
        let endpoint = format!("{}/e2e/health", self.server_base_url);
        let response = self.http_client.get(endpoint).send().await.int_err()?;
        response.error_for_status().int_err()
    }

    async fn ready(&self) -> Result<(), InternalError> {
        let response = self.health().await?;
        if response.status() != reqwest::StatusCode::OK {
            return Err(InternalError(format!(
                "Unexpected health response status: {}",
                response.status()
            )));
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn e2e_client_waits_for_ready() {
    let (url, served) = flaky_server(9).await;
    let client = KamuApiServerClient {
        http_client: reqwest::Client::new(),
        server_base_url: url,
    };
    let future = client.ready();
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(hits(&served), 10);

    let (url, served) = flaky_server(11).await;
    let down = KamuApiServerClient {
        http_client: reqwest::Client::new(),
        server_base_url: url,
    };
    let InternalError(message) = down.ready().await.unwrap_err();
    assert!(message.contains("503"), "{message}");
    assert_eq!(hits(&served), 11);
}

#[derive(Debug)]
enum SendError {
    ReqwestClientError(reqwest::Error),
    Unsuccessful(String),
}

fn transient(e: &SendError) -> bool {
    match e {
        SendError::ReqwestClientError(e) => retry_runtime::classify::reqwest::is_transient(e),
        SendError::Unsuccessful(_) => true,
    }
}

// Port of `send` / `join` in a federated-learning participant client (tokio-retry,
// from_millis(10).map(jitter).take(3), reqwest POST; find_string id 21651662913).
#[retry(max = 4, base = "10ms", multiplier = 10, on = transient)]
async fn join(client: &reqwest::Client, url: &str, participant: &str) -> Result<(), SendError> {
    let response = client
        .post(format!("{url}/join"))
        .header("content-type", "application/json")
        .body(format!("{{\"participant\":\"{participant}\"}}"))
        .send()
        .await
        .map_err(SendError::ReqwestClientError)?;
    let status = response.status();
    let body = response
        .text()
        .await
        .map_err(SendError::ReqwestClientError)?;
    if status.is_success() {
        Ok(())
    } else {
        Err(SendError::Unsuccessful(body))
    }
}

#[tokio::test(start_paused = true)]
async fn participant_join_with_an_error_enum() {
    let (url, served) = flaky_server(2).await;
    let client = reqwest::Client::new();
    let future = join(&client, &url, "p1");
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(hits(&served), 3);

    let (url, served) = flaky_server(9).await;
    match join(&client, &url, "p1").await {
        Err(SendError::Unsuccessful(body)) => assert_eq!(body, "busy"),
        other => panic!("{other:?}"),
    }
    assert_eq!(hits(&served), 4);
}

struct SocketProbe {
    listener: Dep,
}

impl SocketProbe {
    // Port of `socket_is_available` in a Unix-socket daemon (tokio-retry, fixed 10ms x3,
    // errors mapped to (); find_string id 1276613493).
    #[retry(max = 4, base = "10ms", multiplier = 1, jitter = "none")]
    async fn connect(&self) -> Result<(), ()> {
        self.listener.call().map(|_| ()).map_err(|_| ())
    }

    async fn socket_is_available(&self) -> bool {
        self.connect().await.is_ok()
    }
}

#[tokio::test(start_paused = true)]
async fn socket_probe_on_self() {
    let probe = SocketProbe {
        listener: Dep::failing(3),
    };
    let future = probe.socket_is_available();
    assert_send(&future);
    assert!(future.await);
    assert_eq!(probe.listener.calls(), 4);
    let probe = SocketProbe {
        listener: Dep::failing(4),
    };
    assert!(!probe.socket_is_available().await);
    assert_eq!(probe.listener.calls(), 4);
}

#[async_trait]
trait Installable: Send + Sync {
    async fn install(&self) -> Result<Vec<String>, String>;
    fn name(&self) -> String;
}

struct Toolchain {
    name: &'static str,
    mirror: Dep,
}

#[async_trait]
impl Installable for Toolchain {
    async fn install(&self) -> Result<Vec<String>, String> {
        self.mirror
            .call()
            .map_err(|n| format!("download {n} failed"))?;
        Ok(vec![format!("export PATH={}", self.name)])
    }

    fn name(&self) -> String {
        self.name.to_owned()
    }
}

// Port of the per-app install tasks in esp-rs/espup's installer (tokio-retry,
// FixedInterval::from_millis(50).take(3) inside tokio::spawn; find_string id 19116185478).
#[retry(max = 4, base = "50ms", multiplier = 1, jitter = "none")]
async fn install_app(app: &dyn Installable) -> Result<Vec<String>, String> {
    let res = app.install().await;
    if res.is_err() {
        eprintln!("Installation for '{}' failed, retrying", app.name());
    }
    res
}

#[tokio::test(start_paused = true)]
async fn installs_spawned_in_parallel() {
    let apps: Vec<Arc<Toolchain>> = vec![
        Arc::new(Toolchain {
            name: "xtensa-gcc",
            mirror: Dep::failing(2),
        }),
        Arc::new(Toolchain {
            name: "riscv-gcc",
            mirror: Dep::failing(9),
        }),
    ];
    let (tx, mut rx) = mpsc::channel(apps.len());
    for app in &apps {
        let tx = tx.clone();
        let app = Arc::clone(app);
        tokio::spawn(async move {
            let res = install_app(app.as_ref()).await;
            tx.send((app.name, res)).await.unwrap();
        });
    }
    drop(tx);
    let mut results = Vec::new();
    while let Some(result) = rx.recv().await {
        results.push(result);
    }
    results.sort();
    assert_eq!(
        results,
        [
            ("riscv-gcc", Err("download 4 failed".to_owned())),
            ("xtensa-gcc", Ok(vec!["export PATH=xtensa-gcc".to_owned()])),
        ]
    );
    assert_eq!((apps[0].mirror.calls(), apps[1].mirror.calls()), (3, 4));
}

// Port of `download_file` in a toolchain installer (tokio-retry with a `mut attempt`
// counter printed on retries; find_string id 68910627093): the counter becomes
// `current_attempt()`.
#[retry(max = 4, base = "1s", cap = "8s", jitter = "none")]
async fn download_file(
    mirror: &Dep,
    url: &str,
    log: &std::sync::Mutex<Vec<String>>,
) -> anyhow::Result<u32> {
    let attempt = retry_runtime::current_attempt().map_or(1, |a| a.attempt());
    if attempt > 1 {
        log.lock().unwrap().push(format!(
            "Retrying download of {url} (attempt {}/3)...",
            attempt - 1
        ));
    }
    mirror
        .call()
        .map_err(|n| anyhow::anyhow!("stream error on call {n}"))
}

#[tokio::test(start_paused = true)]
async fn download_counts_its_own_attempts() {
    let mirror = Dep::failing(2);
    let log = std::sync::Mutex::new(Vec::new());
    let future = download_file(&mirror, "https://x/t.tar.xz", &log);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), 3);
    assert_eq!(
        *log.lock().unwrap(),
        [
            "Retrying download of https://x/t.tar.xz (attempt 1/3)...",
            "Retrying download of https://x/t.tar.xz (attempt 2/3)...",
        ]
    );
}

// Port of `call_with_retry<A: Action>` in a tokio-retry demo crate (FixedInterval 5s,
// take(2), jitter; search result without a repository name): a generic FnMut action
// taken by value and `mut`.
#[retry(max = 3, base = "5s", multiplier = 1)]
async fn call_with_retry<F, Fut, T, E>(mut action: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    action().await
}

#[tokio::test(start_paused = true)]
async fn generic_fnmut_action_kept_across_attempts() {
    let mut counter = 0u32;
    let future = call_with_retry(|| {
        counter += 1;
        let seen = counter;
        async move {
            if seen < 3 {
                Err(seen)
            } else {
                Ok(seen)
            }
        }
    });
    assert_send(&future);
    assert_eq!(future.await, Ok(3));
    assert_eq!(counter, 3);
    let calls = AtomicU32::new(0);
    let failed: Result<(), u32> =
        call_with_retry(|| async { Err(calls.fetch_add(1, Ordering::SeqCst) + 1) }).await;
    assert_eq!(failed, Err(3));
}

// ---------------------------------------------------------------------------
// The same ports through the closure API, as a tokio-retry user edits them:
// `Retry::spawn(strategy, action).await` becomes `POLICY.retry(action).await`
// (`RetryIf::spawn(strategy, action, condition)`: `POLICY.on(condition)
// .run(action)`), each with its original error type and no `From` impl.
// Each test runs the attribute's port and the twin against the same
// dependency and compares the calls.
// ---------------------------------------------------------------------------

/// A tokio-retry strategy as the ports above write it: `from_millis(base)`
/// with the multiplier that comes closest, `.take(retries)`.
const fn strategy(base_ms: u64, multiplier: f64, retries: u32) -> Policy {
    Policy::new()
        .with_max_attempts(retries + 1)
        .with_base(Duration::from_millis(base_ms))
        .with_multiplier(multiplier)
}

#[tokio::test(start_paused = true)]
async fn twin_unit_error_type() {
    let (by_attribute, by_closure) = (Dep::failing(10), Dep::failing(10));
    let attribute = action(&by_attribute).await;
    let policy = strategy(10, 10.0, 3);
    let future = policy.retry(|| async {
        println!("test");
        by_closure.call().map(u64::from).map_err(|_| ())
    });
    assert_send(&future);
    assert_eq!(future.await, attribute);
    assert_eq!((by_closure.calls(), by_attribute.calls()), (4, 4));
}

#[tokio::test(start_paused = true)]
async fn twin_io_error_with_a_notify_function() {
    let (by_attribute, by_closure) = (Dep::failing(2), Dep::failing(2));
    let attribute = read_sensor(&by_attribute).await.unwrap();
    // `Retry::spawn_notify(strategy, action, notify)`: `on_retry`.
    let policy = strategy(10, 1.0, 3).with_cap(Duration::from_millis(100));
    let future = policy
        .retrying()
        .on_retry(|err, _attempt, wait| notify(err, wait))
        .run(|| async {
            by_closure
                .call()
                .map(u64::from)
                .map_err(|_| io::Error::new(io::ErrorKind::ConnectionReset, "reset"))
        });
    assert_send(&future);
    assert_eq!(future.await.unwrap(), attribute);
    assert_eq!(by_closure.calls(), by_attribute.calls());
}

#[tokio::test(start_paused = true)]
async fn twin_page_cloned_inside_each_attempt() {
    let page = Page {
        title: "Bot requests".into(),
        revision: 10,
    };
    for failures in [3, 4] {
        let (by_attribute, by_closure) = (
            Wiki {
                api: Dep::failing(failures),
            },
            Wiki {
                api: Dep::failing(failures),
            },
        );
        let attribute = save_report(&by_attribute, &page, "done").await.ok();
        let policy = strategy(5, 5.0, 3);
        let future = policy.retry(|| async {
            let (page, _) = page.clone().save(&by_closure, "BOT: done").await?;
            Ok::<_, WikiError>(page)
        });
        assert_send(&future);
        assert_eq!(future.await.ok(), attribute);
        assert_eq!(by_closure.api.calls(), by_attribute.api.calls());
    }
}

#[tokio::test(start_paused = true)]
async fn twin_polling_until_sync_caught_up() {
    let user = || User {
        synced: Arc::new(Dep::default()),
    };
    let (by_attribute, by_closure) = (user(), user());
    wait_for_calendar_events(&by_attribute, 3).await.unwrap();
    // FibonacciBackoff from 100ms, take(10).
    let policy = strategy(100, 1.6, 10);
    let future = policy.retry(|| async {
        if by_closure.calendar_events().await?.len() != 3 {
            anyhow::bail!("not all calendar_events found");
        }
        Ok(())
    });
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(by_closure.synced.calls(), by_attribute.synced.calls());
}

#[tokio::test(start_paused = true)]
async fn twin_health_polling_with_a_boxed_error() {
    let (url, by_attribute) = flaky_server(7).await;
    wait_healthy(&url).await.unwrap();
    let (url, by_closure) = flaky_server(7).await;
    let policy = strategy(100, 1.0, 50).with_jitter(retry_runtime::Jitter::None);
    let future = policy.retry(|| async {
        let status = reqwest::get(&url).await?.status();
        if !status.is_success() {
            return Err(format!("health check: {status}").into());
        }
        Ok::<(), BoxedError>(())
    });
    assert_send(&future);
    future.await.unwrap();
    assert_eq!((hits(&by_closure), hits(&by_attribute)), (8, 8));
}

impl RpcClient {
    /// `get_slot`'s body, unretried, as the indexer's trait impl calls it
    /// inside `Retry::spawn`.
    async fn get_slot_once(&self) -> Result<Slot, SolanaError> {
        let n = self.node.call().map_err(SolanaError::Rpc)?;
        Ok(Slot::from(n) + 1000)
    }
}

#[tokio::test(start_paused = true)]
async fn twin_async_trait_rpc_client() {
    for failures in [2, 100] {
        let (by_attribute, by_closure) = (
            RpcClient {
                node: Dep::failing(failures),
            },
            RpcClient {
                node: Dep::failing(failures),
            },
        );
        let attribute = by_attribute.get_slot().await;
        let policy = strategy(100, 2.0, 7).with_cap(Duration::from_secs(10));
        let future = policy.retry(|| by_closure.get_slot_once());
        assert_send(&future);
        assert_eq!(future.await, attribute);
        assert_eq!(by_closure.node.calls(), by_attribute.node.calls());
    }
}

impl KamuApiServerClient {
    /// `health`'s body, unretried: the action of `Retry::spawn`.
    async fn health_once(&self) -> Result<reqwest::Response, InternalError> {
        let endpoint = format!("{}/e2e/health", self.server_base_url);
        let response = self.http_client.get(endpoint).send().await.int_err()?;
        response.error_for_status().int_err()
    }
}

#[tokio::test(start_paused = true)]
async fn twin_e2e_client_waits_for_ready() {
    for failures in [9, 11] {
        let client = |server_base_url| KamuApiServerClient {
            http_client: reqwest::Client::new(),
            server_base_url,
        };
        let (url, by_attribute) = flaky_server(failures).await;
        let attribute = client(url).health().await.map(|r| r.status());
        let (url, by_closure) = flaky_server(failures).await;
        let by_closure_client = client(url);
        let policy = strategy(250, 1.0, 10).with_jitter(retry_runtime::Jitter::None);
        let future = policy.retry(|| by_closure_client.health_once());
        assert_send(&future);
        let closure = future.await.map(|r| r.status());
        assert_eq!(closure.ok(), attribute.ok());
        assert_eq!(hits(&by_closure), hits(&by_attribute));
    }
}

#[tokio::test(start_paused = true)]
async fn twin_participant_join_with_an_error_enum() {
    let client = reqwest::Client::new();
    for failures in [2, 9] {
        let (url, by_attribute) = flaky_server(failures).await;
        let attribute = join(&client, &url, "p1").await;
        let (url, by_closure) = flaky_server(failures).await;
        // `RetryIf::spawn(strategy, action, transient)`.
        let policy = strategy(10, 10.0, 3);
        let future = policy.on(transient).run(|| async {
            let response = client
                .post(format!("{url}/join"))
                .header("content-type", "application/json")
                .body("{\"participant\":\"p1\"}")
                .send()
                .await
                .map_err(SendError::ReqwestClientError)?;
            let status = response.status();
            let body = response
                .text()
                .await
                .map_err(SendError::ReqwestClientError)?;
            if status.is_success() {
                Ok(())
            } else {
                Err(SendError::Unsuccessful(body))
            }
        });
        assert_send(&future);
        assert_eq!(format!("{:?}", future.await), format!("{attribute:?}"));
        assert_eq!(hits(&by_closure), hits(&by_attribute));
    }
}

#[tokio::test(start_paused = true)]
async fn twin_installs_spawned_in_parallel() {
    let app = |failures| {
        Arc::new(Toolchain {
            name: "xtensa-gcc",
            mirror: Dep::failing(failures),
        })
    };
    for failures in [2, 9] {
        let (by_attribute, by_closure) = (app(failures), app(failures));
        let attribute = install_app(by_attribute.as_ref()).await;
        let task = tokio::spawn({
            let app = Arc::clone(&by_closure);
            async move {
                strategy(50, 1.0, 3)
                    .with_jitter(retry_runtime::Jitter::None)
                    .retry(|| async {
                        let res = app.install().await;
                        if res.is_err() {
                            eprintln!("Installation for '{}' failed, retrying", app.name());
                        }
                        res
                    })
                    .await
            }
        });
        assert_eq!(task.await.unwrap(), attribute);
        assert_eq!(by_closure.mirror.calls(), by_attribute.mirror.calls());
    }
}

#[tokio::test(start_paused = true)]
async fn twin_download_counts_its_own_attempts() {
    let (by_attribute, by_closure) = (Dep::failing(2), Dep::failing(2));
    let (attribute_log, closure_log) = (
        std::sync::Mutex::new(Vec::new()),
        std::sync::Mutex::new(Vec::new()),
    );
    let url = "https://x/t.tar.xz";
    let attribute = download_file(&by_attribute, url, &attribute_log)
        .await
        .unwrap();
    let policy = Policy::new()
        .with_max_attempts(4)
        .with_base(Duration::from_secs(1))
        .with_cap(Duration::from_secs(8))
        .with_jitter(retry_runtime::Jitter::None);
    let future = policy.retry(|| async {
        // The closure's attempts run in the same context as a retried
        // function's: `current_attempt()` counts them.
        let attempt = retry_runtime::current_attempt().map_or(1, |a| a.attempt());
        if attempt > 1 {
            closure_log.lock().unwrap().push(format!(
                "Retrying download of {url} (attempt {}/3)...",
                attempt - 1
            ));
        }
        by_closure
            .call()
            .map_err(|n| anyhow::anyhow!("stream error on call {n}"))
    });
    assert_send(&future);
    assert_eq!(future.await.unwrap(), attribute);
    assert_eq!(*closure_log.lock().unwrap(), *attribute_log.lock().unwrap());
}

/// `call_with_retry<A: Action>` as the demo crate writes it with
/// tokio-retry: the generic action handed to the loop as it is.
async fn call_with_retry_by_closure<F, Fut, T, E>(action: F) -> Result<T, E>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    strategy(5000, 1.0, 2).retry(action).await
}

#[tokio::test(start_paused = true)]
async fn twin_generic_fnmut_action_kept_across_attempts() {
    let counting = |counter: &mut u32| {
        *counter += 1;
        let seen = *counter;
        async move {
            if seen < 3 {
                Err(seen)
            } else {
                Ok(seen)
            }
        }
    };
    let (mut by_attribute, mut by_closure) = (0u32, 0u32);
    let attribute = call_with_retry(|| counting(&mut by_attribute)).await;
    let future = call_with_retry_by_closure(|| counting(&mut by_closure));
    assert_send(&future);
    assert_eq!(future.await, attribute);
    assert_eq!((by_closure, by_attribute), (3, 3));
}

#[tokio::test(start_paused = true)]
async fn twin_convo_wait_with_a_by_value_string() {
    let user = || User {
        synced: Arc::new(Dep::failing(4)),
    };
    let (by_attribute, by_closure) = (user(), user());
    let room_id = "!room:acter.global".to_owned();
    let attribute = wait_for_convo(&by_attribute, room_id.clone())
        .await
        .unwrap();
    let policy = strategy(100, 1.6, 10);
    let future = policy.retry(|| by_closure.convo(&room_id));
    assert_send(&future);
    assert_eq!(future.await.unwrap(), attribute);
    assert_eq!(by_closure.synced.calls(), by_attribute.synced.calls());
}

#[tokio::test(start_paused = true)]
async fn twin_socket_probe_on_self() {
    for failures in [3, 4] {
        let (by_attribute, by_closure) = (
            SocketProbe {
                listener: Dep::failing(failures),
            },
            SocketProbe {
                listener: Dep::failing(failures),
            },
        );
        let attribute = by_attribute.socket_is_available().await;
        // Errors mapped to `()`, as the daemon maps them.
        let policy = strategy(10, 1.0, 3).with_jitter(retry_runtime::Jitter::None);
        let future =
            policy.retry(|| async { by_closure.listener.call().map(|_| ()).map_err(|_| ()) });
        assert_send(&future);
        assert_eq!(future.await.is_ok(), attribute);
        assert_eq!(by_closure.listener.calls(), by_attribute.listener.calls());
    }
}
