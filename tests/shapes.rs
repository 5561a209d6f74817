//! Every function shape the attribute accepts keeps its signature and
//! behaves as written: methods, generics, lifetimes, `impl Trait`, traits,
//! `?` with `From`, early `return`, and aliases of `Result`.

use std::fmt::Display;
use std::io;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use retry_runtime::retry;
use tokio::time::Instant;

#[derive(Debug, PartialEq)]
enum AppError {
    Busy(u32),
    Parse,
}

impl From<std::num::ParseIntError> for AppError {
    fn from(_: std::num::ParseIntError) -> Self {
        AppError::Parse
    }
}

/// Neither `Clone` nor `Copy`: the body only borrows it.
struct Client {
    calls: AtomicU32,
    failures: u32,
}

impl Client {
    fn new(failures: u32) -> Self {
        Client {
            calls: AtomicU32::new(0),
            failures,
        }
    }

    fn hit(&self) -> Result<u32, AppError> {
        let call = self.calls.fetch_add(1, Ordering::SeqCst) + 1;
        if call <= self.failures {
            Err(AppError::Busy(call))
        } else {
            Ok(call)
        }
    }

    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    #[retry(max = 3, base = "10ms", jitter = "none")]
    async fn by_ref(&self) -> Result<u32, AppError> {
        self.hit()
    }

    #[retry(max = 3, base = "10ms", jitter = "none")]
    async fn by_value(self) -> Result<u32, AppError> {
        self.hit()
    }
}

struct Counter {
    attempts: u32,
    name: String,
}

impl Counter {
    /// Mutates `self` on every attempt; the mutations are kept.
    #[retry(max = 4, base = "10ms", jitter = "none")]
    async fn bump(&mut self) -> Result<u32, AppError> {
        self.attempts += 1;
        if self.attempts < 3 {
            return Err(AppError::Busy(self.attempts));
        }
        Ok(self.attempts)
    }

    /// A borrow of `self` through `&self` is fine.
    #[retry(max = 2)]
    async fn name(&self) -> Result<&str, AppError> {
        Ok(&self.name)
    }
}

#[retry(max = 3, base = "10ms", jitter = "none", on = |e| matches!(e, AppError::Busy(_)))]
async fn generic<'a, T>(client: &Client, label: &'a T) -> Result<String, AppError>
where
    T: Display + Sync + ?Sized,
{
    let call = client.hit()?;
    Ok(format!("{label}#{call}"))
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn borrowed<'a>(client: &Client, words: &'a [String]) -> Result<&'a str, AppError> {
    client.hit()?;
    Ok(&words[0])
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn impl_trait(client: &Client, text: impl AsRef<str>) -> Result<u32, AppError> {
    client.hit()?;
    // `?` converts through `From<ParseIntError>`.
    let n: u32 = text.as_ref().parse()?;
    Ok(n)
}

#[retry(max = 3, base = "10ms", jitter = "none", on = |e: &io::Error| e.kind() == io::ErrorKind::Interrupted)]
async fn aliased(client: &Client) -> io::Result<u32> {
    client
        .hit()
        .map_err(|_| io::Error::from(io::ErrorKind::Interrupted))
}

#[retry(max = 3, base = "10ms", jitter = "none")]
async fn early_return(client: &Client, skip: bool) -> Result<u32, AppError> {
    if skip {
        return Ok(0);
    }
    let call = client.hit()?;
    Ok(call * 10)
}

trait Repository {
    async fn load(&self, id: u32) -> Result<u32, AppError>;
}

impl Repository for Client {
    #[retry(max = 3, base = "10ms", jitter = "none")]
    async fn load(&self, id: u32) -> Result<u32, AppError> {
        Ok(self.hit()? + id)
    }
}

mod visibility {
    use super::{retry, AppError, Client};

    /// Docs and visibility stay as written.
    #[retry(max = 2, base = "10ms")]
    #[inline]
    pub(crate) async fn nested(client: &Client) -> Result<u32, AppError> {
        client.hit()
    }
}

#[tokio::test(start_paused = true)]
async fn methods_taking_self_in_every_form() {
    let client = Client::new(2);
    assert_eq!(client.by_ref().await, Ok(3));
    assert_eq!(client.calls(), 3);

    let start = Instant::now();
    assert_eq!(Client::new(1).by_value().await, Ok(2));
    assert_eq!(start.elapsed(), Duration::from_millis(10));

    let mut counter = Counter {
        attempts: 0,
        name: "c".into(),
    };
    assert_eq!(counter.bump().await, Ok(3));
    assert_eq!(counter.attempts, 3);
    assert_eq!(counter.name().await, Ok("c"));
}

#[tokio::test(start_paused = true)]
async fn generics_lifetimes_and_impl_trait() {
    let client = Client::new(1);
    assert_eq!(generic(&client, "job").await, Ok("job#2".to_owned()));
    let words = vec!["first".to_owned()];
    assert_eq!(borrowed(&Client::new(2), &words).await, Ok("first"));
    assert_eq!(impl_trait(&Client::new(1), "42").await, Ok(42));
    assert_eq!(
        impl_trait(&Client::new(0), String::from("x")).await,
        Err(AppError::Parse)
    );
}

#[tokio::test(start_paused = true)]
async fn question_mark_errors_are_classified_like_any_other() {
    // `on` rejects `Parse`, so the `?` error is returned after one attempt.
    let client = Client::new(0);
    #[retry(max = 3, base = "10ms", on = |e| matches!(e, AppError::Busy(_)))]
    async fn parse(client: &Client, text: &str) -> Result<u32, AppError> {
        client.hit()?;
        Ok(text.parse::<u32>()?)
    }
    assert_eq!(parse(&client, "nope").await, Err(AppError::Parse));
    assert_eq!(client.calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn aliases_early_returns_traits_and_modules() {
    assert_eq!(aliased(&Client::new(2)).await.unwrap(), 3);
    assert_eq!(
        aliased(&Client::new(5)).await.unwrap_err().kind(),
        io::ErrorKind::Interrupted
    );
    let client = Client::new(1);
    assert_eq!(early_return(&client, true).await, Ok(0));
    assert_eq!(client.calls(), 0);
    assert_eq!(early_return(&client, false).await, Ok(20));
    assert_eq!(Client::new(2).load(100).await, Ok(103));
    assert_eq!(visibility::nested(&Client::new(1)).await, Ok(2));
}

#[tokio::test(start_paused = true)]
async fn the_last_error_is_returned_from_every_shape() {
    assert_eq!(Client::new(9).by_ref().await, Err(AppError::Busy(3)));
    assert_eq!(generic(&Client::new(9), "x").await, Err(AppError::Busy(3)));
    assert_eq!(Client::new(9).load(0).await, Err(AppError::Busy(3)));
}

struct Configured {
    policy: retry_runtime::Policy,
    hits: u32,
    name: String,
}

impl Configured {
    /// The policy lives in `self`, and the body mutates `self`.
    #[retry(policy = &self.policy)]
    async fn hit(&mut self) -> Result<u32, std::io::Error> {
        self.hits += 1;
        if self.hits < 2 {
            return Err(std::io::ErrorKind::Interrupted.into());
        }
        Ok(self.hits)
    }

    /// A `&mut` parameter next to `&self`: the returned borrow is of `self`.
    #[retry(max = 2)]
    async fn name_into(&self, buffer: &mut Vec<u8>) -> Result<&str, AppError> {
        buffer.extend_from_slice(self.name.as_bytes());
        Ok(&self.name)
    }
}

/// A `&mut` parameter and a boxed closure whose `&str` is its own. The type
/// is written out, not aliased, because the attribute reads its tokens.
#[allow(clippy::type_complexity)]
#[retry(max = 2)]
async fn matcher(count: &mut u32) -> Result<Box<dyn Fn(&str) -> bool>, AppError> {
    *count += 1;
    Ok(Box::new(|text: &str| text.is_empty()))
}

/// The same with a reference in the closure's return type, and a function
/// pointer: the `&str` after `->` is the closure's own too.
#[allow(clippy::type_complexity)]
#[retry(max = 2)]
async fn trimmer(count: &mut u32) -> Result<Box<dyn Fn(&str) -> &str + Send>, AppError> {
    *count += 1;
    Ok(Box::new(str::trim))
}

#[allow(clippy::type_complexity)]
#[retry(max = 2)]
fn first_of(count: &mut u32) -> Result<fn(&[u8]) -> Option<&u8>, AppError> {
    *count += 1;
    Ok(<[u8]>::first)
}

#[tokio::test(start_paused = true)]
async fn policies_in_self_and_borrows_that_are_not_of_a_mut_argument() {
    let mut configured = Configured {
        policy: retry_runtime::Policy::new().with_base(Duration::from_millis(1)),
        hits: 0,
        name: "n".into(),
    };
    assert_eq!(configured.hit().await.unwrap(), 2);
    let mut buffer = Vec::new();
    assert_eq!(configured.name_into(&mut buffer).await, Ok("n"));
    let mut count = 0;
    assert!(matcher(&mut count).await.unwrap()(""));
    assert_eq!(trimmer(&mut count).await.unwrap()(" a "), "a");
    assert_eq!(first_of(&mut count).unwrap()(&[7]), Some(&7));
}
