//! Corpus: functions ported from public repositories that retried with
//! `again` (`again::retry`, `again::retry_if`, `RetryPolicy::exponential`) or
//! with `reqwest-retry`'s `RetryTransientMiddleware`. reqwest-retry retries
//! connection errors and 408/429/5xx responses, honouring `Retry-After`: that
//! is `on = is_transient, on_ok = is_transient_response, retry_after_ok =
//! retry_after` below, the response itself returned when retries run out.
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::http::StatusCode;
use retry_runtime::classify::reqwest::{is_transient, is_transient_response, retry_after};
use retry_runtime::{retry, Policy};

#[path = "corpus/support.rs"]
mod support;
use support::{assert_send, failing_server, flaky_server, hits, Dep};

// Port of the `again::retry(|| reqwest::get(..))` example in softprops/again README.md
// (again's default policy: 100ms exponential, 5 retries).
#[retry(max = 6, base = "100ms")]
async fn get_api(url: &str) -> Result<reqwest::Response, reqwest::Error> {
    reqwest::get(url).await?.error_for_status()
}

#[tokio::test(start_paused = true)]
async fn again_readme_get() {
    let (url, served) = flaky_server(4).await;
    let future = get_api(&url);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 200);
    assert_eq!(hits(&served), 5);
}

// Port of the `again::retry_if(|| reqwest::get(..), reqwest::Error::is_status)` example
// in softprops/again src/lib.rs: a method path as the classifier.
#[retry(max = 6, base = "100ms", on = reqwest::Error::is_status)]
async fn get_company(url: &str) -> Result<reqwest::Response, reqwest::Error> {
    reqwest::get(url).await?.error_for_status()
}

#[tokio::test(start_paused = true)]
async fn again_retry_if_with_a_method_path() {
    let (url, served) = flaky_server(2).await;
    assert_eq!(get_company(&url).await.unwrap().status(), 200);
    assert_eq!(hits(&served), 3);
}

// Port of the zstd upload check in a paste service's integration test (again::retry_if,
// only a 404 is retried while compression runs; find_string id 24553052248).
#[retry(max = 6, base = "100ms", on = |err: &reqwest::Error| err.status() == Some(reqwest::StatusCode::NOT_FOUND))]
async fn get_uncompressed(
    client: &reqwest::Client,
    key_url: &str,
) -> Result<reqwest::Response, reqwest::Error> {
    client
        .get(key_url)
        .header("accept-encoding", "identity")
        .send()
        .await?
        .error_for_status()
}

#[tokio::test(start_paused = true)]
async fn only_not_found_is_retried() {
    let client = reqwest::Client::new();
    let (url, served) = failing_server(2, StatusCode::NOT_FOUND, None).await;
    let future = get_uncompressed(&client, &url);
    assert_send(&future);
    assert_eq!(future.await.unwrap().text().await.unwrap(), "ok");
    assert_eq!(hits(&served), 3);

    let (url, served) = failing_server(2, StatusCode::FORBIDDEN, None).await;
    let err = get_uncompressed(&client, &url).await.unwrap_err();
    assert_eq!(err.status(), Some(reqwest::StatusCode::FORBIDDEN));
    assert_eq!(hits(&served), 1);
}

#[derive(Debug)]
enum AnkiError {
    Http(reqwest::Error),
    Api(String),
}

fn is_connection_error(e: &AnkiError) -> bool {
    matches!(e, AnkiError::Http(e) if e.is_connect())
}

struct AnkiClient {
    http: reqwest::Client,
    url: String,
    duplicates: Dep,
}

impl AnkiClient {
    async fn send(&self, note: &str) -> Result<(), AnkiError> {
        self.http
            .post(&self.url)
            .body(note.to_owned())
            .send()
            .await
            .map_err(AnkiError::Http)?;
        self.duplicates
            .call()
            .map(|_| ())
            .map_err(|_| AnkiError::Api("cannot create note because it is a duplicate".into()))
    }
}

// Port of the deck install loop in a kanji-to-Anki tool (again::retry_if with
// `is_connection_error`, a duplicate treated as done; find_string id 45572841369).
#[retry(max = 6, base = "100ms", on = is_connection_error)]
async fn add_note(anki_client: &AnkiClient, input: &str) -> Result<(), AnkiError> {
    match anki_client.send(input).await {
        Err(AnkiError::Api(err))
            if err.contains("cannot create note because it is a duplicate") =>
        {
            Ok(())
        }
        other => other,
    }
}

#[tokio::test(start_paused = true)]
async fn connection_errors_retried_duplicates_accepted() {
    // Nothing listens on port 9 of 127.0.0.1 here: every attempt is refused.
    let refused = AnkiClient {
        http: reqwest::Client::new(),
        url: "http://127.0.0.1:9/".into(),
        duplicates: Dep::default(),
    };
    let future = add_note(&refused, "kanji");
    assert_send(&future);
    assert!(matches!(future.await, Err(AnkiError::Http(e)) if e.is_connect()));

    let (url, served) = flaky_server(0).await;
    let anki = AnkiClient {
        http: reqwest::Client::new(),
        url,
        duplicates: Dep::failing(1),
    };
    add_note(&anki, "kanji").await.unwrap();
    assert_eq!((hits(&served), anki.duplicates.calls()), (1, 1));
}

#[derive(Debug, PartialEq, Eq)]
enum ApiError {
    RetryableError(String),
    Conflict,
}

struct Namespaces {
    api: Dep,
}

// Port of `create_namespace` retried in a Kubernetes test harness (again
// RetryPolicy::exponential(1s).with_max_delay(10min).retry_if(RetryableError);
// find_string id 43942874): by-value `Arc` and `String` arguments.
#[retry(max = 10, base = "1s", cap = "10m", on = |e| matches!(e, ApiError::RetryableError(_)))]
async fn create_namespace(
    namespaces_api: Arc<Namespaces>,
    name: String,
) -> Result<String, ApiError> {
    match namespaces_api.api.call() {
        Ok(_) => Ok(name.clone()),
        Err(n) if n < 100 => Err(ApiError::RetryableError(format!(
            "{name} terminating (403)"
        ))),
        Err(_) => Err(ApiError::Conflict),
    }
}

#[tokio::test(start_paused = true)]
async fn by_value_arc_and_string() {
    let api = Arc::new(Namespaces {
        api: Dep::failing(4),
    });
    let future = create_namespace(Arc::clone(&api), "e2e-7".to_owned());
    assert_send(&future);
    assert_eq!(future.await, Ok("e2e-7".to_owned()));
    assert_eq!(api.api.calls(), 5);
}

struct NpmResolver {
    client: reqwest::Client,
    registry: String,
}

impl NpmResolver {
    // Port of `get_package_metadata_from_npm` in a JS package resolver (again
    // RetryPolicy::exponential(..).with_max_retries(..).with_jitter(true), String
    // errors; find_string id 17111475778).
    #[retry(max = 4, base = "100ms", jitter = "full")]
    async fn get_package_metadata_from_npm(&self, package_name: &str) -> Result<String, String> {
        let url = format!("{}/{}", self.registry, package_name);
        let response = self
            .client
            .get(&url)
            .header("accept", "application/vnd.npm.install-v1+json")
            .send()
            .await
            .map_err(|e| e.to_string())?;
        if !response.status().is_success() {
            return Err(format!("{url}: {}", response.status()));
        }
        response.text().await.map_err(|e| e.to_string())
    }
}

#[tokio::test(start_paused = true)]
async fn string_error_method() {
    let (registry, served) = flaky_server(3).await;
    let resolver = NpmResolver {
        client: reqwest::Client::new(),
        registry,
    };
    let future = resolver.get_package_metadata_from_npm("left-pad");
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!(hits(&served), 4);
}

struct Auth {
    http: reqwest::Client,
}

impl Auth {
    // Port of `Auth::make_call` in a wallet's auth service (again exponential(200ms),
    // 3 retries, jitter; find_string id 1220453382): the retried `make_call_int`.
    #[retry(max = 4, base = "200ms")]
    async fn make_call_int(&self, url: &str) -> anyhow::Result<String> {
        let response = self
            .http
            .get(url)
            .send()
            .await
            .map_err(|e| anyhow::anyhow!("ws error: {e:?}"))?
            .error_for_status()?;
        response
            .text()
            .await
            .map_err(|e| anyhow::anyhow!("can't get body: {e:?}"))
    }

    async fn make_call(&self, url: &str) -> anyhow::Result<String> {
        self.make_call_int(url)
            .await
            .map_err(|e| anyhow::anyhow!("Failed after retries: {e:?}"))
    }
}

#[tokio::test(start_paused = true)]
async fn anyhow_method_wrapped_by_its_caller() {
    let (url, served) = flaky_server(9).await;
    let auth = Auth {
        http: reqwest::Client::new(),
    };
    let future = auth.make_call(&url);
    assert_send(&future);
    assert!(future
        .await
        .unwrap_err()
        .to_string()
        .starts_with("Failed after retries"));
    assert_eq!(hits(&served), 4);
}

// Port of `main`'s GET in sourabhnateria/rust REQWEST/req_middleware/src/main.rs
// (RetryTransientMiddleware, 3 retries).
#[retry(max = 4, base = "1s", cap = "30m", on = is_transient, on_ok = is_transient_response, retry_after_ok = retry_after)]
async fn get_post(
    client: &reqwest::Client,
    url: &str,
) -> Result<reqwest::Response, reqwest::Error> {
    client.get(format!("{url}/posts/1")).send().await
}

#[tokio::test(start_paused = true)]
async fn middleware_semantics_transient_responses_retried() {
    let client = reqwest::Client::new();
    let (url, served) = flaky_server(2).await;
    let future = get_post(&client, &url);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 200);
    assert_eq!(hits(&served), 3);

    // Out of retries: the last 503 comes back as the response it was.
    let (url, served) = flaky_server(9).await;
    assert_eq!(get_post(&client, &url).await.unwrap().status(), 503);
    assert_eq!(hits(&served), 4);

    // A 429 with Retry-After: 20 is waited out, then retried.
    let (url, served) = failing_server(1, StatusCode::TOO_MANY_REQUESTS, Some("20")).await;
    let started = tokio::time::Instant::now();
    assert_eq!(get_post(&client, &url).await.unwrap().status(), 200);
    assert!(started.elapsed() >= Duration::from_secs(20));
    assert_eq!(hits(&served), 2);
}

// Port of `run_retries` in jeevan0920/rust-practice request-retry-example/src/main.rs
// (RetryTransientMiddleware, 3 retries, a header on the request).
#[retry(max = 4, base = "1s", cap = "30m", on = is_transient, on_ok = is_transient_response, retry_after_ok = retry_after)]
async fn run_retries(
    client: &reqwest::Client,
    url: &str,
) -> Result<reqwest::Response, reqwest::Error> {
    client.get(url).header("foo", "bar").send().await
}

#[tokio::test(start_paused = true)]
async fn middleware_example_with_a_header() {
    let (url, served) = flaky_server(3).await;
    let client = reqwest::Client::new();
    let future = run_retries(&client, &url);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 200);
    assert_eq!(hits(&served), 4);
}

#[derive(Debug)]
enum ProfanityError {
    MiddlewareReqwestApi(reqwest::Error),
    Client(String),
}

// Port of `check_profanity` in a Rust web-dev book's Q&A service (reqwest-retry, 3
// retries, by-value `content: String` sent as the body; find_string id 10399311155).
#[retry(max = 4, base = "1s", cap = "30m", on = |e| matches!(e, ProfanityError::MiddlewareReqwestApi(e) if is_transient(e)), on_ok = |r: &reqwest::Response| is_transient_response(r))]
async fn post_bad_words(
    client: &reqwest::Client,
    url: &str,
    mut content: String,
) -> Result<reqwest::Response, ProfanityError> {
    content.push('\n');
    client
        .post(format!("{url}/bad_words?censor_character=*"))
        .header("apikey", "test")
        // Moving `content` here is E0382 ("moved in previous iteration of loop"),
        // though §4.13 says it is cloned per attempt: reported, cloned instead.
        .body(content.clone())
        .send()
        .await
        .map_err(ProfanityError::MiddlewareReqwestApi)
}

async fn check_profanity(
    client: &reqwest::Client,
    url: &str,
    content: String,
) -> Result<String, ProfanityError> {
    let res = post_bad_words(client, url, content).await?;
    if res.status().is_client_error() {
        return Err(ProfanityError::Client(res.status().to_string()));
    }
    res.text()
        .await
        .map_err(ProfanityError::MiddlewareReqwestApi)
}

#[tokio::test(start_paused = true)]
async fn by_value_mut_string_cloned_per_attempt() {
    let (url, served) = flaky_server(2).await;
    let client = reqwest::Client::new();
    let future = check_profanity(&client, &url, "some text".to_owned());
    assert_send(&future);
    assert_eq!(future.await.unwrap(), "ok");
    assert_eq!(hits(&served), 3);
    let (url, served) = failing_server(1, StatusCode::UNAUTHORIZED, None).await;
    assert!(matches!(
        check_profanity(&client, &url, String::new()).await,
        Err(ProfanityError::Client(status)) if status.starts_with("401")
    ));
    assert_eq!(hits(&served), 1);
}

struct Wallet {
    client: reqwest::Client,
}

impl Wallet {
    // Port of `Wallet::push_authorization_request` in an OpenID4VC wallet (reqwest-retry,
    // build_with_max_retries(5); find_string id 26115350825).
    #[retry(max = 6, base = "1s", cap = "30m", on = is_transient, on_ok = is_transient_response, retry_after_ok = retry_after)]
    async fn push_authorization_request(
        &self,
        endpoint: &str,
        form: &[(&str, &str)],
    ) -> Result<reqwest::Response, reqwest::Error> {
        let body = form
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("&");
        self.client
            .post(endpoint)
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
    }
}

#[tokio::test(start_paused = true)]
async fn wallet_method_through_five_retries() {
    let (url, served) = flaky_server(5).await;
    let wallet = Wallet {
        client: reqwest::Client::new(),
    };
    let form = [("client_id", "w"), ("scope", "openid")];
    let future = wallet.push_authorization_request(&url, &form);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 200);
    assert_eq!(hits(&served), 6);
}

struct SpaceApi {
    url: String,
    username: String,
    password: String,
}

// Port of the SpaceAPI status update in a hackerspace door bot (reqwest-retry, 5
// retries, PUT with basic auth; the source repository was not recorded).
#[retry(max = 6, base = "1s", cap = "30m", on = is_transient, on_ok = is_transient_response, retry_after_ok = retry_after)]
async fn set_space_status(
    client: &reqwest::Client,
    configuration: &SpaceApi,
    state: bool,
) -> Result<reqwest::Response, reqwest::Error> {
    let status = if state { "open" } else { "closed" };
    client
        .put(format!("{}?status={status}", configuration.url))
        .basic_auth(&configuration.username, Some(&configuration.password))
        .send()
        .await
}

#[tokio::test(start_paused = true)]
async fn put_with_basic_auth() {
    let (url, served) = flaky_server(1).await;
    let configuration = SpaceApi {
        url,
        username: "door".into(),
        password: "secret".into(),
    };
    let client = reqwest::Client::new();
    let future = set_space_status(&client, &configuration, true);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 200);
    assert_eq!(hits(&served), 2);
}

/// What the Datadog client's `RetryableStatus` strategy retries: the
/// configured statuses only.
fn retryable_status(response: &reqwest::Response) -> bool {
    matches!(response.status().as_u16(), 429 | 500 | 502 | 503 | 504)
}

struct DatadogClient {
    client: reqwest::Client,
    max_retries: u32,
    calls: AtomicU32,
}

impl DatadogClient {
    // Port of the Datadog API client's request path (reqwest-retry with a custom
    // `RetryableStrategy` and `config.max_retries`; find_string id 23203978220): the
    // count comes from the client's configuration through `policy`.
    fn policy(&self) -> Policy {
        Policy::new()
            .with_max_attempts(self.max_retries + 1)
            .with_base(Duration::from_millis(10))
    }

    async fn submit_metrics(&self, url: &str) -> Result<reqwest::Response, reqwest::Error> {
        let policy = self.policy();
        self.send(url, &policy).await
    }

    #[retry(policy = policy, on_ok = retryable_status)]
    async fn send(&self, url: &str, policy: &Policy) -> Result<reqwest::Response, reqwest::Error> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.client
            .post(format!("{url}/api/v2/series"))
            .send()
            .await
    }
}

#[tokio::test(start_paused = true)]
async fn retry_count_from_configuration() {
    let (url, served) = flaky_server(9).await;
    let datadog = DatadogClient {
        client: reqwest::Client::new(),
        max_retries: 2,
        calls: AtomicU32::new(0),
    };
    let future = datadog.submit_metrics(&url);
    assert_send(&future);
    assert_eq!(future.await.unwrap().status(), 503);
    assert_eq!(
        (hits(&served), datadog.calls.load(Ordering::SeqCst)),
        (3, 3)
    );
}
