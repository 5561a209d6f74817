//! Idempotency keys: one per logical operation, the same on every attempt.
//!
//! A request that changes state (a POST that charges a card) may have been
//! carried out even though its response was lost; retrying it blindly does
//! it twice. The cure is a key the client makes once per operation and sends
//! on every attempt, so that the server recognises a repeat and answers it
//! from what it stored. Making the key inside the retried body is the classic
//! mistake: every attempt then gets a new one. Each retried call carries its
//! own key instead, read with [`current_attempt`](crate::current_attempt):
//!
//! ```
//! use retry_runtime::{current_attempt, retry};
//!
//! #[retry(max = 3)]
//! async fn charge(keys: &mut Vec<String>) -> Result<(), &'static str> {
//!     let key = current_attempt().expect("inside a retried call").idempotency_key();
//!     keys.push(key.to_string()); // send it as the `Idempotency-Key` header
//!     if keys.len() < 3 { Err("response lost") } else { Ok(()) }
//! }
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let mut keys = Vec::new();
//! charge(&mut keys).await.unwrap();
//! assert!(keys.iter().all(|key| *key == keys[0])); // one key for all three attempts
//! let first = keys.pop().unwrap();
//! keys.clear();
//! charge(&mut keys).await.unwrap();
//! assert_ne!(keys[0], first); // a new call, a new key
//! # }
//! ```
//!
//! With reqwest (feature `reqwest`), `WithIdempotencyKey::idempotency_key`
//! sets the header from the call's key (a fresh one outside a retried call,
//! which the `reqwest_middleware` retry then sends
//! unchanged on each of its attempts).

use core::fmt;

/// A random UUID (version 4: 122 random bits), made once per retried call.
///
/// Printed as a UUID, `8-4-4-4-12` lowercase hex digits. Each key is 122 bits
/// drawn from the operating system's cryptographic random source
/// (`getrandom`; on `wasm32-unknown-unknown`, the JS host's
/// `crypto.getRandomValues`), not from the jitter generator: no key can be
/// predicted from others, so two clients never collide and one client
/// cannot guess another's. [`seed_thread_rng`](crate::seed_thread_rng) does
/// not touch them.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct IdempotencyKey([u64; 2]);

impl IdempotencyKey {
    /// The name of the header that carries the key, as Stripe and the IETF
    /// draft spell it: `idempotency-key`.
    pub const HEADER: &'static str = "idempotency-key";

    /// The key of the retried call running (the one
    /// [`current_attempt`](crate::current_attempt) gives), or a new random
    /// one outside any: what `WithIdempotencyKey::idempotency_key` (feature `reqwest`) sends.
    ///
    /// ```
    /// use retry_runtime::{retry, IdempotencyKey};
    ///
    /// #[retry(max = 2)]
    /// async fn charge(keys: &mut Vec<IdempotencyKey>) -> Result<(), &'static str> {
    ///     keys.push(IdempotencyKey::for_this_call());
    ///     if keys.len() < 2 { Err("response lost") } else { Ok(()) }
    /// }
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let mut keys = Vec::new();
    /// charge(&mut keys).await.unwrap();
    /// assert_eq!(keys[0], keys[1]); // the call's key, on both attempts
    /// assert_ne!(IdempotencyKey::for_this_call(), keys[0]); // outside: a new one
    /// # }
    /// ```
    #[must_use]
    pub fn for_this_call() -> Self {
        crate::current_attempt()
            .map_or_else(IdempotencyKey::random, |attempt| attempt.idempotency_key())
    }

    /// The all-zero key, never made by [`IdempotencyKey::random`].
    pub(crate) const NIL: Self = IdempotencyKey([0, 0]);

    /// A new random key, from the operating system's (or the JS host's)
    /// cryptographic random source.
    ///
    /// # Panics
    ///
    /// Never. Should the random source fail (a JS host without the Web
    /// Crypto API, such as node before 19), the key is drawn from a
    /// generator seeded from the standard library's per-process keys, the
    /// clocks and, on a JS host, the engine's `Math.random()` instead: still
    /// unique in practice, no longer unpredictable.
    #[must_use]
    pub fn random() -> Self {
        let mut bytes = [0_u8; 16];
        if getrandom::fill(&mut bytes).is_err() {
            // Two fresh fallback seeds, one per half.
            let high = u128::from(crate::rng::fallback_seed());
            bytes = (high << 64 | u128::from(crate::rng::fallback_seed())).to_le_bytes();
        }
        let bits = u128::from_le_bytes(bytes);
        // Version 4 and the RFC 9562 variant, so that it is a valid UUID.
        let bits = (bits & !(0xf << 76) & !(0b11 << 62)) | (0x4 << 76) | (0b10 << 62);
        #[allow(clippy::cast_possible_truncation)]
        IdempotencyKey([(bits >> 64) as u64, bits as u64])
    }

    /// The key's 128 bits.
    #[must_use]
    #[allow(clippy::cast_lossless)] // `u128::from` is not `const`.
    pub const fn as_u128(self) -> u128 {
        (self.0[0] as u128) << 64 | self.0[1] as u128
    }

    /// The key as a header value.
    #[cfg(feature = "http")]
    #[cfg_attr(docsrs, doc(cfg(feature = "http")))]
    #[must_use]
    pub fn header_value(self) -> ::http::HeaderValue {
        use core::fmt::Write as _;
        // One allocation, of the 36 bytes the key takes.
        let mut text = String::with_capacity(36);
        let _ = write!(text, "{self}");
        // 36 ASCII hex digits and dashes are always a valid header value.
        ::http::HeaderValue::try_from(text).unwrap_or(::http::HeaderValue::from_static(""))
    }
}

impl fmt::Display for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // `8-4-4-4-12` hex digits, written without allocating.
        let [high, low] = self.0;
        write!(
            f,
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            high >> 32,
            (high >> 16) & 0xffff,
            high & 0xffff,
            low >> 48,
            low & 0xffff_ffff_ffff
        )
    }
}

impl fmt::Debug for IdempotencyKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "IdempotencyKey({self})")
    }
}

/// Sets the `Idempotency-Key` header on a request builder.
///
/// Inside a retried call (`#[retry]` or a closure loop) the key is the
/// call's, the same on every attempt; elsewhere it is a new random key, which
/// a retrying middleware then sends unchanged on each of its attempts.
///
/// ```no_run
/// use retry_runtime::idempotency::WithIdempotencyKey;
/// # async fn pay(client: reqwest::Client) -> reqwest::Result<()> {
/// client.post("http://127.0.0.1:8080/charge").idempotency_key().send().await?;
/// # Ok(()) }
/// ```
#[cfg(feature = "reqwest")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest")))]
pub trait WithIdempotencyKey: Sized {
    /// The builder with the header set to the current call's key.
    #[must_use]
    fn idempotency_key(self) -> Self {
        self.with_idempotency_key(IdempotencyKey::for_this_call())
    }

    /// The builder with the header set to `key`.
    #[must_use]
    fn with_idempotency_key(self, key: IdempotencyKey) -> Self;
}

#[cfg(feature = "reqwest")]
impl WithIdempotencyKey for ::reqwest::RequestBuilder {
    fn with_idempotency_key(self, key: IdempotencyKey) -> Self {
        self.header(IdempotencyKey::HEADER, key.header_value())
    }
}

#[cfg(feature = "reqwest-middleware")]
impl WithIdempotencyKey for ::reqwest_middleware::RequestBuilder {
    fn with_idempotency_key(self, key: IdempotencyKey) -> Self {
        self.header(IdempotencyKey::HEADER, key.header_value())
    }
}

/// Whether a request may be repeated: its method is idempotent (GET, HEAD,
/// OPTIONS, TRACE, PUT, DELETE, RFC 9110 section 9.2.2) or it carries an
/// `Idempotency-Key` header.
#[cfg(any(feature = "reqwest", feature = "tower"))]
#[must_use]
pub(crate) fn is_repeatable(method: &::http::Method, headers: &::http::HeaderMap) -> bool {
    method.is_idempotent() || headers.contains_key(IdempotencyKey::HEADER)
}

#[cfg(test)]
mod tests {
    use super::IdempotencyKey;

    #[test]
    fn keys_print_as_version_4_uuids() {
        let key = IdempotencyKey::random().to_string();
        assert_eq!(key.len(), 36);
        let groups: Vec<&str> = key.split('-').collect();
        assert_eq!(
            groups.iter().map(|group| group.len()).collect::<Vec<_>>(),
            [8, 4, 4, 4, 12]
        );
        assert!(groups[2].starts_with('4'));
        assert!(matches!(&groups[3][..1], "8" | "9" | "a" | "b"));
        assert_ne!(IdempotencyKey::random(), IdempotencyKey::random());
    }
}
