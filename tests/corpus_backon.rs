//! Corpus: functions ported from public repositories that retried with
//! `backon`, rewritten as the `#[retry]` functions their authors would have
//! written. backon's `ExponentialBuilder::default()` is 1s doubling up to 60s,
//! 3 retries: `max = 4, base = "1s", cap = "60s"` below. Each test runs on a
//! paused clock and counts the calls the dependency saw.
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use retry_runtime::{retry, TimedOut};
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
