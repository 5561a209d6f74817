//! Corpus: functions ported from public repositories that retried with
//! `backon`, rewritten as the `#[retry]` functions their authors would have
//! written. backon's `ExponentialBuilder::default()` is 1s doubling up to 60s,
//! 3 retries: `max = 4, base = "1s", cap = "60s"` below. Each test runs on a
//! paused clock and counts the calls the dependency saw.
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::{retry, Policy, TimedOut};
use tokio::sync::mpsc;

#[path = "corpus/support.rs"]
mod support;
use support::{assert_send, flaky_server, hits, Dep};

// Port of `fetch` from Xuanwo/backon examples/async.rs (status not 2xx: bail).
#[retry(max = 4, base = "1s", cap = "60s")]
async fn fetch(url: &str) -> anyhow::Result<String> {
    let response = reqwest::get(url).await?;
    if !response.status().is_success() {
        anyhow::bail!("some kind of error: {}", response.status());
    }
    Ok(response.text().await?)
}

#[tokio::test(start_paused = true)]
async fn backon_example_fetch_against_a_real_server() {
    let (url, served) = flaky_server(2).await;
    let future = fetch(&url);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!(hits(&served), 3);

    let (url, served) = flaky_server(100).await;
    assert!(fetch(&url).await.is_err());
    assert_eq!(hits(&served), 4);
}

// Port of `fetch` from Xuanwo/backon examples/blocking.rs (BlockingRetryable: a plain fn).
#[retry(max = 4, base = "1ms", cap = "10ms")]
fn fetch_blocking(dep: &Dep) -> anyhow::Result<String> {
    dep.call().map_err(|n| anyhow::anyhow!("call {n} failed"))?;
    Ok("hello, world!".to_string())
}

#[test]
fn backon_blocking_example_is_a_plain_fn() {
    let dep = Dep::failing(2);
    assert_eq!(fetch_blocking(&dep).unwrap(), "hello, world!");
    assert_eq!(dep.calls(), 3);
    let dep = Dep::failing(9);
    assert_eq!(
        fetch_blocking(&dep).unwrap_err().to_string(),
        "call 4 failed"
    );
    assert_eq!(dep.calls(), 4);
}

// Port of `fetch` from ph4un00b/warp-docker examples/ping_backon.rs (`with_max_times(5)`).
#[retry(max = 6, base = "1s", cap = "60s")]
async fn ping(url: &str) -> anyhow::Result<String> {
    let response = reqwest::get(url).await?;
    if !response.status().is_success() {
        println!("retry: {}", response.status());
        anyhow::bail!("some kind of error");
    }
    Ok(response.text().await?)
}

#[tokio::test(start_paused = true)]
async fn ping_with_five_retries() {
    let (url, served) = flaky_server(5).await;
    let future = ping(&url);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!(hits(&served), 6);
}

// Port of `fetch` from wisarmy/rust-labs retry-backon/examples/retry.rs (reqwest errors only).
#[retry(max = 4, base = "1s", cap = "60s", on = retry_runtime::classify::reqwest::is_transient)]
async fn fetch_text(url: &str) -> Result<String, reqwest::Error> {
    reqwest::get(url).await?.error_for_status()?.text().await
}

#[tokio::test(start_paused = true)]
async fn reqwest_error_as_the_error_type() {
    let (url, served) = flaky_server(1).await;
    let future = fetch_text(&url);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!(hits(&served), 2);
}

/// What `MyResult` is in the bot: a boxed error.
type MyResult<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct ChatId(i64);

#[derive(Debug, PartialEq, Eq)]
struct Message {
    chat: ChatId,
    text: String,
}

struct Bot {
    telegram: Dep,
}

impl Bot {
    async fn send_message(&self, chat_id: ChatId, text: &str) -> MyResult<Message> {
        tokio::task::yield_now().await;
        self.telegram
            .call()
            .map_err(|n| format!("telegram: flood wait (call {n})"))?;
        Ok(Message {
            chat: chat_id,
            text: text.to_owned(),
        })
    }
}

// Port of `send_message` (teloxide bot, backon; find_string id 2744742077: the index gave no repository name).
#[retry(max = 4, base = "1s", cap = "60s")]
async fn send_message(bot: &Bot, chat_id: ChatId, message: &str) -> MyResult<Message> {
    bot.send_message(chat_id, message).await
}

#[tokio::test(start_paused = true)]
async fn bot_message_with_a_boxed_error() {
    let bot = Bot {
        telegram: Dep::failing(2),
    };
    let future = send_message(&bot, ChatId(7), "hi");
    assert_send(&future);
    let sent = future.await.unwrap();
    assert_eq!((sent.chat, sent.text.as_str()), (ChatId(7), "hi"));
    assert_eq!(bot.telegram.calls(), 3);
}

#[derive(Debug, PartialEq, Eq)]
enum LlmError {
    Api(String),
}

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let LlmError::Api(message) = self;
        f.write_str(message)
    }
}

impl std::error::Error for LlmError {}

fn is_retryable(e: &LlmError) -> bool {
    let msg = e.to_string().to_lowercase();
    msg.contains("timeout")
        || msg.contains("connection")
        || msg.contains("overloaded")
        || msg.contains("rate limit")
        || msg.contains("try again")
}

// Port of `with_retry` (an LLM client's retry.rs, backon `.when(is_retryable)`; find_string id 56870078597).
#[retry(max = 4, base = "1s", cap = "60s", on = is_retryable)]
async fn with_retry<F, Fut, T>(f: F) -> Result<T, LlmError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    f().await
}

#[tokio::test(start_paused = true)]
async fn generic_fn_operation_with_a_message_classifier() {
    let calls = Arc::new(AtomicU32::new(0));
    let op = || {
        let calls = Arc::clone(&calls);
        async move {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 {
                Err(LlmError::Api("Overloaded".into()))
            } else {
                Ok(n)
            }
        }
    };
    let future = with_retry(op);
    assert_send(&future);
    assert_eq!(future.await, Ok(3));
    assert_eq!(calls.load(Ordering::SeqCst), 3);

    let calls = AtomicU32::new(0);
    let refused = with_retry(|| async {
        calls.fetch_add(1, Ordering::SeqCst);
        Err::<(), _>(LlmError::Api("invalid api key".into()))
    })
    .await;
    assert_eq!(refused, Err(LlmError::Api("invalid api key".into())));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[derive(Debug, PartialEq, Eq)]
enum EngineError {
    Shutdown,
    Timeout,
    Work(u32),
}

impl From<TimedOut> for EngineError {
    fn from(_: TimedOut) -> Self {
        EngineError::Timeout
    }
}

struct Engine {
    semaphore: Arc<tokio::sync::Semaphore>,
    backend: Dep,
    hangs: Dep,
}

impl Engine {
    // Port of `Engine::run` (a crawler engine: semaphore, `tokio::time::timeout` around
    // backon; find_string id 70906196809): the timeout becomes the per-attempt `timeout`.
    #[retry(max = 4, base = "1s", cap = "60s", timeout = "30s")]
    async fn run(&self) -> Result<u32, EngineError> {
        let _permit = self
            .semaphore
            .acquire()
            .await
            .map_err(|_| EngineError::Shutdown)?;
        if self.hangs.call().is_err() {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        self.backend.call().map_err(EngineError::Work)
    }
}

#[tokio::test(start_paused = true)]
async fn engine_work_unit_cut_off_then_retried() {
    let engine = Engine {
        semaphore: Arc::new(tokio::sync::Semaphore::new(1)),
        backend: Dep::failing(1),
        hangs: Dep::failing(1),
    };
    let future = engine.run();
    assert_send(&future);
    // Attempt 1 hangs and is cut off, attempt 2 fails, attempt 3 succeeds.
    assert_eq!(future.await, Ok(2));
    assert_eq!(engine.backend.calls(), 2);

    engine.semaphore.close();
    assert_eq!(engine.run().await, Err(EngineError::Shutdown));
    assert_eq!(engine.backend.calls(), 2);
}

#[derive(Debug, PartialEq, Eq)]
enum Setback {
    OpenBridge(String),
}

#[derive(Debug)]
struct HoprError(u32);

impl std::fmt::Display for HoprError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "session refused (call {})", self.0)
    }
}

// Port of `open_bridge_session` (a HOPR VPN client, backon `.notify` spawning a
// setback message; find_string id 15021288693): `.notify` becomes `on_retry`.
#[retry(
    max = 4,
    base = "1s",
    cap = "60s",
    on_retry = |err: &HoprError, _attempt, _wait| {
        let tx = results_sender.clone();
        let payload = Setback::OpenBridge(err.to_string());
        tokio::spawn(async move {
            let _ = tx.send(payload).await;
        });
    }
)]
async fn open_bridge_session(
    hopr: &Dep,
    destination: &str,
    results_sender: &mpsc::Sender<Setback>,
) -> Result<String, HoprError> {
    let n = hopr.call().map_err(HoprError)?;
    Ok(format!("session {n} to {destination}"))
}

#[tokio::test(start_paused = true)]
async fn notify_hook_that_spawns_a_message() {
    let (tx, mut rx) = mpsc::channel(8);
    let hopr = Dep::failing(2);
    let future = open_bridge_session(&hopr, "exit-1", &tx);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "session 3 to exit-1");
    assert_eq!(hopr.calls(), 3);
    drop(tx);
    let mut setbacks = Vec::new();
    while let Some(setback) = rx.recv().await {
        setbacks.push(setback);
    }
    assert_eq!(
        setbacks,
        [
            Setback::OpenBridge("session refused (call 1)".into()),
            Setback::OpenBridge("session refused (call 2)".into()),
        ]
    );
}

#[derive(Debug, PartialEq, Eq)]
enum Command {
    SealBlock(Vec<u8>),
}

struct CommandQueue {
    empty_polls: Dep,
}

impl CommandQueue {
    // Port of `expect_seal_block`'s `(|| self.recv()).retry(..)` (a sequencer's test
    // helpers, backon; find_string id 5940963287): the retried `recv` on `&self`.
    #[retry(max = 4, base = "1s", cap = "60s")]
    async fn recv(&self) -> anyhow::Result<Command> {
        self.empty_polls
            .call()
            .map_err(|_| anyhow::anyhow!("no command received"))?;
        Ok(Command::SealBlock(vec![1, 2]))
    }

    async fn expect_seal_block(&self, expected: &[u8]) -> anyhow::Result<()> {
        match self.recv().await? {
            Command::SealBlock(actual) if actual == expected => Ok(()),
            command @ Command::SealBlock(_) => anyhow::bail!("unexpected command: {command:?}"),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn retried_recv_on_a_shared_reference() {
    let queue = CommandQueue {
        empty_polls: Dep::failing(3),
    };
    let future = queue.expect_seal_block(&[1, 2]);
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(queue.empty_polls.calls(), 4);
}

#[derive(Debug)]
enum SqlError {
    PoolTimedOut,
}

impl std::fmt::Display for SqlError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("pool timed out while waiting for an open connection")
    }
}

impl std::error::Error for SqlError {}

struct Pool {
    db: Dep,
}

// Port of the query in Xuanwo/backon examples/sqlx.rs (`fetch_one(&pool)` retried).
#[retry(max = 4, base = "1s", cap = "60s", on = |e| matches!(e, SqlError::PoolTimedOut))]
async fn select_one(pool: &Pool, value: i64) -> Result<(i64,), SqlError> {
    pool.db.call().map_err(|_| SqlError::PoolTimedOut)?;
    Ok((value,))
}

#[tokio::test(start_paused = true)]
async fn sqlx_example_query() {
    let pool = Pool {
        db: Dep::failing(1),
    };
    let future = select_one(&pool, 150);
    assert_send(&future);
    assert_eq!(future.await.unwrap(), (150,));
    assert_eq!(pool.db.calls(), 2);
}

// Port of `check_health` (LiquidBounce launcher's tauri commands, backon `.notify`
// warning; find_string id 27595371078): the retried GET, then the String mapping.
#[retry(
    max = 4,
    base = "1s",
    cap = "60s",
    on_retry = |err: &reqwest::Error, attempt, wait| {
        eprintln!("Failed to check health (attempt {attempt}). Retrying in {wait:?}. Error: {err}");
    }
)]
async fn get_api(client: &reqwest::Client, url: &str) -> Result<reqwest::Response, reqwest::Error> {
    client.get(url).send().await?.error_for_status()
}

async fn check_health(client: &reqwest::Client, url: &str) -> Result<(), String> {
    get_api(client, url)
        .await
        .map_err(|e| format!("unable to connect to {url}: {e}"))?;
    Ok(())
}

#[tokio::test(start_paused = true)]
async fn launcher_health_check() {
    let (url, served) = flaky_server(3).await;
    let client = reqwest::Client::new();
    let future = check_health(&client, &url);
    assert_send(&future);
    future.await.unwrap();
    assert_eq!(hits(&served), 4);

    let (url, served) = flaky_server(4).await;
    let message = check_health(&client, &url).await.unwrap_err();
    assert!(message.starts_with("unable to connect"), "{message}");
    assert_eq!(hits(&served), 4);
}

// ---------------------------------------------------------------------------
// The same ports through the closure API, as a backon user edits them:
// `(|| op()).retry(builder).when(f).notify(g).await` becomes
// `POLICY.on(f).on_retry(g).run(|| op()).await`, each with its original
// error type (`anyhow::Error`, `reqwest::Error`, a `Box<dyn Error>`, the
// crate's own enums), no `From` impl added. Each test runs the attribute's
// port and the twin against the same dependency and compares the calls.
// ---------------------------------------------------------------------------

/// backon's `ExponentialBuilder::default()`, as the attribute ports above
/// write it: 1s doubling up to 60s, 3 retries.
const BACKON: Policy = Policy::new()
    .with_max_attempts(4)
    .with_base(Duration::from_secs(1))
    .with_cap(Duration::from_secs(60));

/// `fetch` as backon's example writes it, unretried.
async fn fetch_once(url: &str) -> anyhow::Result<String> {
    let response = reqwest::get(url).await?;
    if !response.status().is_success() {
        anyhow::bail!("some kind of error: {}", response.status());
    }
    Ok(response.text().await?)
}

#[tokio::test(start_paused = true)]
async fn twin_backon_example_fetch() {
    for failures in [2, 100] {
        let (url, by_attribute) = flaky_server(failures).await;
        let attribute = fetch(&url).await.map_err(|e| e.to_string());
        let (url, by_closure) = flaky_server(failures).await;
        let future = BACKON.retry(|| fetch_once(&url));
        assert_send(&future);
        let closure: anyhow::Result<String> = future.await;
        assert_eq!(closure.map_err(|e| e.to_string()), attribute);
        assert_eq!(hits(&by_closure), hits(&by_attribute));
    }
}

#[test]
fn twin_backon_blocking_example() {
    let fast = BACKON
        .with_base(Duration::from_millis(1))
        .with_cap(Duration::from_millis(10));
    for failures in [2, 9] {
        let (by_attribute, by_closure) = (Dep::failing(failures), Dep::failing(failures));
        let attribute = fetch_blocking(&by_attribute).map_err(|e| e.to_string());
        let closure: anyhow::Result<String> = fast.retrying().run_blocking(|| {
            by_closure
                .call()
                .map_err(|n| anyhow::anyhow!("call {n} failed"))?;
            Ok("hello, world!".to_string())
        });
        assert_eq!(closure.map_err(|e| e.to_string()), attribute);
        assert_eq!(by_closure.calls(), by_attribute.calls());
    }
}

#[tokio::test(start_paused = true)]
async fn twin_ping_with_five_retries() {
    let (url, by_attribute) = flaky_server(5).await;
    assert_eq!(ping(&url).await.unwrap(), "ok");
    let (url, by_closure) = flaky_server(5).await;
    // `with_max_times(5)`.
    let policy = BACKON.with_max_attempts(6);
    let future = policy.retry(|| fetch_once(&url));
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!((hits(&by_closure), hits(&by_attribute)), (6, 6));
}

#[tokio::test(start_paused = true)]
async fn twin_reqwest_error_as_the_error_type() {
    let (url, by_attribute) = flaky_server(1).await;
    assert_eq!(fetch_text(&url).await.unwrap(), "ok");
    let (url, by_closure) = flaky_server(1).await;
    // `reqwest::Error` has no `From<TimedOut>`: none is asked for.
    let future = BACKON
        .on(retry_runtime::classify::reqwest::is_transient)
        .run(|| async { reqwest::get(&url).await?.error_for_status()?.text().await });
    assert_send(&future);
    let text: Result<String, reqwest::Error> = future.await;
    assert_eq!(text.unwrap(), "ok");
    assert_eq!((hits(&by_closure), hits(&by_attribute)), (2, 2));
}

#[tokio::test(start_paused = true)]
async fn twin_bot_message_with_a_boxed_error() {
    let by_attribute = Bot {
        telegram: Dep::failing(2),
    };
    let attribute = send_message(&by_attribute, ChatId(7), "hi").await.unwrap();
    let by_closure = Bot {
        telegram: Dep::failing(2),
    };
    let future = BACKON.retry(|| by_closure.send_message(ChatId(7), "hi"));
    assert_send(&future);
    let closure: MyResult<Message> = future.await;
    assert_eq!(closure.unwrap(), attribute);
    assert_eq!(by_closure.telegram.calls(), by_attribute.telegram.calls());
}

/// `with_retry` as the LLM client writes it with backon:
/// `f.retry(builder).when(is_retryable).await`.
async fn with_retry_by_closure<F, Fut, T>(f: F) -> Result<T, LlmError>
where
    F: Fn() -> Fut,
    Fut: Future<Output = Result<T, LlmError>>,
{
    BACKON.on(is_retryable).run(f).await
}

#[tokio::test(start_paused = true)]
async fn twin_generic_fn_operation_with_a_message_classifier() {
    for message in ["Overloaded", "invalid api key"] {
        let counted = |calls: &AtomicU32| {
            let n = calls.fetch_add(1, Ordering::SeqCst) + 1;
            if n < 3 {
                Err(LlmError::Api(message.into()))
            } else {
                Ok(n)
            }
        };
        let (by_attribute, by_closure) = (AtomicU32::new(0), AtomicU32::new(0));
        let attribute = with_retry(|| async { counted(&by_attribute) }).await;
        let future = with_retry_by_closure(|| async { counted(&by_closure) });
        assert_send(&future);
        assert_eq!(future.await, attribute);
        assert_eq!(
            by_closure.load(Ordering::SeqCst),
            by_attribute.load(Ordering::SeqCst)
        );
    }
}

impl Engine {
    /// `run`'s body, unretried: what the crawler retried with backon inside
    /// `tokio::time::timeout`.
    async fn run_once(&self) -> Result<u32, EngineError> {
        let _permit = self
            .semaphore
            .acquire()
            .await
            .map_err(|_| EngineError::Shutdown)?;
        if self.hangs.call().is_err() {
            tokio::time::sleep(Duration::from_secs(3600)).await;
        }
        self.backend.call().map_err(EngineError::Work)
    }
}

#[tokio::test(start_paused = true)]
async fn twin_engine_work_unit_cut_off_then_retried() {
    let engine = || Engine {
        semaphore: Arc::new(tokio::sync::Semaphore::new(1)),
        backend: Dep::failing(1),
        hangs: Dep::failing(1),
    };
    let (by_attribute, by_closure) = (engine(), engine());
    let attribute = by_attribute.run().await;
    // The timeout makes a `Policy<TimedOut>`: `EngineError` has the `From`.
    let timed = BACKON.with_timeout(Duration::from_secs(30));
    let future = timed.retry(|| by_closure.run_once());
    assert_send(&future);
    assert_eq!((future.await, attribute), (Ok(2), Ok(2)));
    assert_eq!(by_closure.backend.calls(), by_attribute.backend.calls());
    by_closure.semaphore.close();
    assert_eq!(
        timed.retry(|| by_closure.run_once()).await,
        Err(EngineError::Shutdown)
    );
}

/// `open_bridge_session` as the VPN client writes it with backon, its
/// `.notify` spawning the setback message: `on_retry`.
async fn open_bridge_session_by_closure(
    hopr: &Dep,
    destination: &str,
    results_sender: &mpsc::Sender<Setback>,
) -> Result<String, HoprError> {
    BACKON
        .retrying()
        .on_retry(|err: &HoprError, _attempt, _wait| {
            let tx = results_sender.clone();
            let payload = Setback::OpenBridge(err.to_string());
            tokio::spawn(async move {
                let _ = tx.send(payload).await;
            });
        })
        .run(|| async {
            let n = hopr.call().map_err(HoprError)?;
            Ok(format!("session {n} to {destination}"))
        })
        .await
}

#[tokio::test(start_paused = true)]
async fn twin_notify_hook_that_spawns_a_message() {
    let mut seen = Vec::new();
    for closure in [false, true] {
        let (tx, mut rx) = mpsc::channel(8);
        let hopr = Dep::failing(2);
        let session = if closure {
            open_bridge_session_by_closure(&hopr, "exit-1", &tx).await
        } else {
            open_bridge_session(&hopr, "exit-1", &tx).await
        };
        drop(tx);
        let mut setbacks = Vec::new();
        while let Some(setback) = rx.recv().await {
            setbacks.push(setback);
        }
        seen.push((session.unwrap(), hopr.calls(), setbacks));
    }
    assert_eq!(seen[0], seen[1]);
    assert_eq!(seen[1].1, 3);
}

impl CommandQueue {
    /// `recv`, unretried: `(|| self.recv()).retry(..)` in the sequencer.
    async fn recv_once(&self) -> anyhow::Result<Command> {
        self.empty_polls
            .call()
            .map_err(|_| anyhow::anyhow!("no command received"))?;
        Ok(Command::SealBlock(vec![1, 2]))
    }
}

#[tokio::test(start_paused = true)]
async fn twin_retried_recv_on_a_shared_reference() {
    let by_attribute = CommandQueue {
        empty_polls: Dep::failing(3),
    };
    by_attribute.expect_seal_block(&[1, 2]).await.unwrap();
    let by_closure = CommandQueue {
        empty_polls: Dep::failing(3),
    };
    let future = BACKON.retry(|| by_closure.recv_once());
    assert_send(&future);
    assert_eq!(future.await.unwrap(), Command::SealBlock(vec![1, 2]));
    assert_eq!(
        by_closure.empty_polls.calls(),
        by_attribute.empty_polls.calls()
    );
}

#[tokio::test(start_paused = true)]
async fn twin_sqlx_example_query() {
    let by_attribute = Pool {
        db: Dep::failing(1),
    };
    assert_eq!(select_one(&by_attribute, 150).await.unwrap(), (150,));
    let by_closure = Pool {
        db: Dep::failing(1),
    };
    // `sqlx::Error` stand-in, no `From<TimedOut>`.
    let future = BACKON
        .on(|e: &SqlError| matches!(e, SqlError::PoolTimedOut))
        .run(|| async {
            by_closure.db.call().map_err(|_| SqlError::PoolTimedOut)?;
            Ok((150_i64,))
        });
    assert_send(&future);
    assert_eq!(future.await.unwrap(), (150,));
    assert_eq!(by_closure.db.calls(), by_attribute.db.calls());
}

/// `check_health`'s retried GET as the launcher writes it with backon, its
/// `.notify` warning: `on_retry`, with `reqwest::Error` kept.
async fn get_api_by_closure(
    client: &reqwest::Client,
    url: &str,
) -> Result<reqwest::Response, reqwest::Error> {
    BACKON
        .retrying()
        .on_retry(|err: &reqwest::Error, attempt, wait| {
            eprintln!(
                "Failed to check health (attempt {attempt}). Retrying in {wait:?}. Error: {err}"
            );
        })
        .run(|| async { client.get(url).send().await?.error_for_status() })
        .await
}

#[tokio::test(start_paused = true)]
async fn twin_launcher_health_check() {
    let client = reqwest::Client::new();
    for failures in [3, 4] {
        let (url, by_attribute) = flaky_server(failures).await;
        let attribute = get_api(&client, &url).await.map(|r| r.status());
        let (url, by_closure) = flaky_server(failures).await;
        let future = get_api_by_closure(&client, &url);
        assert_send(&future);
        let closure = future.await.map(|r| r.status());
        assert_eq!(closure.is_ok(), attribute.is_ok());
        assert_eq!(hits(&by_closure), hits(&by_attribute));
        assert_eq!(hits(&by_closure), 4);
    }
}
