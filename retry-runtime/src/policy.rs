//! What a retry loop does between attempts: how many attempts, how long each
//! wait may be, how it is randomized, and when to stop for good.

use core::fmt;
use core::str::FromStr;
use core::time::Duration;

use retry_core::backoff::{self, nanos, uniform};

/// How a wait is drawn from the ceiling for that retry.
///
/// With `ceiling(n) = min(cap, base * multiplier^n)` for the retry numbered
/// `n` (`n = 0` before the first retry):
///
/// | jitter | wait before retry `n` |
/// |---|---|
/// | [`Full`](Jitter::Full) | uniform in `[0, ceiling(n)]` |
/// | [`Equal`](Jitter::Equal) | `ceiling(n)/2` + uniform in `[0, ceiling(n)/2]` |
/// | [`Decorrelated`](Jitter::Decorrelated) | `min(cap, uniform in [base, 3 * previous wait])`, the previous wait starting at `base` |
/// | [`None`](Jitter::None) | `ceiling(n)` |
///
/// Waits are whole nanoseconds and `ceiling(n)/2` is rounded down, so for an
/// odd ceiling an equal-jitter wait lies in `[(ceiling - 1)/2, ceiling - 1]`.
/// No backoff wait is ever longer than `cap`; a server's hint may make a wait
/// up to 1.1 x `cap` (see [`Policy::hinted_wait`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Jitter {
    /// Uniform between zero and the ceiling: the widest spread and, in the
    /// published simulations, the least total work for the server. The default.
    #[default]
    Full,
    /// At least half the ceiling, plus a uniform share of the other half.
    Equal,
    /// Each wait drawn from `[base, 3 * previous]`, capped: it grows with the
    /// waits actually taken rather than with the attempt number.
    Decorrelated,
    /// Exactly the ceiling. Clients that failed together retry together: use
    /// it only where a single client retries alone, or in tests.
    None,
}

impl Jitter {
    /// Every jitter, in the order the documentation lists them.
    pub const ALL: [Jitter; 4] = [
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::None,
    ];

    /// The name the attribute and configuration use: `"full"`, `"equal"`,
    /// `"decorrelated"` or `"none"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::None => "none",
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// What a retried function does with a failed attempt in which a retried
/// function it called (directly or through ordinary functions) already
/// retried and gave up.
///
/// Retries happen at one layer, the one closest to the failure: a retried
/// function called inside another's attempt retries under its own policy,
/// never past the outer call's deadline. If it gives up on an error it
/// judged retryable (attempts used up, deadline, budget, a hint longer than
/// `cap`), retrying the outer attempt would only repeat those retries: by
/// default the outer call returns that error at once, for reason
/// [`Stop::Nested`](crate::Stop::Nested). A failure that no inner layer
/// retried (an inner error its `on` rejects, or the outer body's own) is
/// judged by the outer's own rules. Three layers of three attempts cost three
/// calls at the bottom, not 27.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Nested {
    /// Return the failure at once: the layer below already retried it.
    /// The default.
    #[default]
    Once,
    /// Retry the attempt anyway under this policy, so that the retries of
    /// the layers multiply (three layers of three: 27 calls at the bottom).
    Retry,
}

impl Nested {
    /// The name the attribute and configuration use: `"once"` or `"retry"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Nested::Once => "once",
            Nested::Retry => "retry",
        }
    }
}

/// A jitter name that is not `"full"`, `"equal"`, `"decorrelated"` or `"none"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownJitter(pub String);

impl fmt::Display for UnknownJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown jitter `{}`: expected \"full\", \"equal\", \"decorrelated\" or \"none\"",
            self.0
        )
    }
}

impl std::error::Error for UnknownJitter {}

impl FromStr for Jitter {
    type Err = UnknownJitter;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Jitter::ALL
            .into_iter()
            .find(|jitter| jitter.name() == name)
            .ok_or_else(|| UnknownJitter(name.to_owned()))
    }
}

/// A retry policy: attempts, capped exponential backoff, jitter, deadline,
/// per-attempt timeout.
///
/// Every setter is a `const fn`, so a policy can live in a `const` or a
/// `static`; this is what `#[retry(...)]` builds from its keys.
///
/// ```
/// use std::time::Duration;
/// use retry_runtime::{Jitter, Policy};
///
/// const FETCH: Policy = Policy::new()
///     .with_max_attempts(4)
///     .with_base(Duration::from_millis(200))
///     .with_cap(Duration::from_secs(10))
///     .with_jitter(Jitter::Full);
///
/// // Ceilings of the three retries: 200ms, 400ms, 800ms.
/// assert_eq!(FETCH.ceiling(2), Duration::from_millis(800));
/// assert!(FETCH.validate().is_ok());
/// ```
///
/// # Out-of-range values
///
/// The attribute rejects bad values while compiling and [`Policy::validate`]
/// reports them at run time. A policy that holds one anyway still never
/// panics: `max_attempts` of 0 makes one attempt, a `multiplier` below 1 (or
/// NaN) acts as 1, and a `cap` below `base` makes every wait `cap`. Waits are
/// counted in nanoseconds and saturate at `u64::MAX` of them (about 584 years).
/// Waits of any length are slept in full, past tokio's 30-year limit on one
/// timer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Policy {
    max_attempts: u32,
    base: Duration,
    cap: Duration,
    multiplier: f64,
    jitter: Jitter,
    deadline: Option<Duration>,
    timeout: Option<Duration>,
    nested: Nested,
}

impl Default for Policy {
    fn default() -> Self {
        Self::new()
    }
}

impl Policy {
    /// The defaults of the attribute: 3 attempts, base 100ms, cap 10s,
    /// multiplier 2, full jitter, no deadline, no timeout, and a failure an
    /// inner retried function already gave up on returned at once.
    #[must_use]
    pub const fn new() -> Self {
        Policy {
            max_attempts: 3,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: Jitter::Full,
            deadline: None,
            timeout: None,
            nested: Nested::Once,
        }
    }

    /// Attempts in total, the first call included: 4 is the call and up to
    /// three retries.
    #[must_use]
    pub const fn with_max_attempts(mut self, max_attempts: u32) -> Self {
        self.max_attempts = max_attempts;
        self
    }

    /// The ceiling of the first backoff.
    #[must_use]
    pub const fn with_base(mut self, base: Duration) -> Self {
        self.base = base;
        self
    }

    /// No computed wait exceeds this.
    #[must_use]
    pub const fn with_cap(mut self, cap: Duration) -> Self {
        self.cap = cap;
        self
    }

    /// Growth of the ceiling per retry: `ceiling(n) = min(cap, base * multiplier^n)`.
    #[must_use]
    pub const fn with_multiplier(mut self, multiplier: f64) -> Self {
        self.multiplier = multiplier;
        self
    }

    /// How each wait is randomized.
    #[must_use]
    pub const fn with_jitter(mut self, jitter: Jitter) -> Self {
        self.jitter = jitter;
        self
    }

    /// Total time for the call, from the start of the first attempt. A wait
    /// that would end past it is not started: the last error is returned at
    /// once instead.
    #[must_use]
    pub const fn with_deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }

    /// Removes the deadline.
    #[must_use]
    pub const fn without_deadline(mut self) -> Self {
        self.deadline = None;
        self
    }

    /// Cuts each attempt off after `timeout`; the attempt then fails with
    /// `E::from(TimedOut)`, classified like any other error. With a deadline
    /// too, an attempt is also cut off when the deadline passes.
    #[must_use]
    pub const fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// What to do when called from inside another retried function's
    /// attempt: see [`Nested`].
    #[must_use]
    pub const fn with_nested(mut self, nested: Nested) -> Self {
        self.nested = nested;
        self
    }

    /// Removes the per-attempt timeout.
    #[must_use]
    pub const fn without_timeout(mut self) -> Self {
        self.timeout = None;
        self
    }

    /// Attempts in total, the first included.
    #[must_use]
    pub const fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The ceiling of the first backoff.
    #[must_use]
    pub const fn base(&self) -> Duration {
        self.base
    }

    /// The largest wait.
    #[must_use]
    pub const fn cap(&self) -> Duration {
        self.cap
    }

    /// Growth of the ceiling per retry.
    #[must_use]
    pub const fn multiplier(&self) -> f64 {
        self.multiplier
    }

    /// How each wait is randomized.
    #[must_use]
    pub const fn jitter(&self) -> Jitter {
        self.jitter
    }

    /// The time allowed for the whole call, if any.
    #[must_use]
    pub const fn deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// What to do when nested in another retried function.
    #[must_use]
    pub const fn nested(&self) -> Nested {
        self.nested
    }

    /// The time allowed for each attempt, if any.
    #[must_use]
    pub const fn timeout(&self) -> Option<Duration> {
        self.timeout
    }

    /// This policy, checked to carry no per-attempt timeout, for calls whose
    /// error type cannot express one (a foreign error such as
    /// `reqwest::Error` has no `From<TimedOut>`).
    ///
    /// A timeout read from configuration is never silently dropped: a policy
    /// that carries one is refused here, before any attempt.
    ///
    /// # Errors
    ///
    /// [`PolicyError::TimeoutNotExpressible`] when the policy has a timeout.
    pub const fn untimed(&self) -> Result<UntimedPolicy, PolicyError> {
        match self.timeout {
            Some(timeout) => Err(PolicyError::TimeoutNotExpressible { timeout }),
            None => Ok(UntimedPolicy(*self)),
        }
    }

    /// Checks the rules the attribute enforces while compiling: at least one
    /// attempt, `base > 0`, `cap >= base`, a finite `multiplier >= 1`, and a
    /// deadline above zero.
    ///
    /// # Errors
    ///
    /// The first rule broken, as a [`PolicyError`].
    pub fn validate(&self) -> Result<(), PolicyError> {
        if self.max_attempts == 0 {
            return Err(PolicyError::NoAttempts);
        }
        if self.base.is_zero() {
            return Err(PolicyError::ZeroBase);
        }
        if self.cap < self.base {
            return Err(PolicyError::CapBelowBase {
                base: self.base,
                cap: self.cap,
            });
        }
        if !(self.multiplier.is_finite() && self.multiplier >= 1.0) {
            return Err(PolicyError::Multiplier(self.multiplier));
        }
        if self.deadline.is_some_and(|deadline| deadline.is_zero()) {
            return Err(PolicyError::ZeroDeadline);
        }
        if self.timeout.is_some_and(|timeout| timeout.is_zero()) {
            return Err(PolicyError::ZeroTimeout);
        }
        Ok(())
    }

    /// The ceiling of the wait before retry `n` (`n = 0` before the first
    /// retry): `min(cap, base * multiplier^n)`.
    ///
    /// Exact for every whole multiplier; others go through `f64`, exact to
    /// about one part in 2^52. Any `n` and any multiplier are fine.
    #[must_use]
    pub fn ceiling(&self, n: u32) -> Duration {
        Duration::from_nanos(self.ceiling_nanos(n))
    }

    fn ceiling_nanos(&self, n: u32) -> u64 {
        backoff::ceiling(nanos(self.base), nanos(self.cap), self.multiplier, n)
    }

    /// The longest the waits of one call can add up to: every retry's wait
    /// at the top of its range (for [`Jitter::Decorrelated`], the chain
    /// `min(cap, 3 * previous)`). A bound on the time a call spends waiting,
    /// before any deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::Policy;
    ///
    /// // Ceilings 200, 400, 800, 1600 and 3200 ms.
    /// let policy = Policy::new().with_max_attempts(6).with_base(Duration::from_millis(200));
    /// assert_eq!(policy.worst_case_wait(), Duration::from_millis(6200));
    /// ```
    #[must_use]
    pub fn worst_case_wait(&self) -> Duration {
        Duration::from_nanos(backoff::worst_case_total(
            nanos(self.base),
            nanos(self.cap),
            self.multiplier,
            self.jitter == Jitter::Decorrelated,
            self.max_attempts.saturating_sub(1),
        ))
    }

    /// A wait before retry `n`, drawn with this thread's generator (see
    /// [`seed_thread_rng`](crate::seed_thread_rng)). `previous` is the wait
    /// before the last retry, or `base` before the first; only
    /// [`Jitter::Decorrelated`] uses it.
    #[must_use]
    pub fn wait(&self, n: u32, previous: Duration) -> Duration {
        self.wait_with(n, previous, crate::rng::next_u64())
    }

    /// The wait before retry `n` for a given random `sample`: `0` gives the
    /// shortest wait the jitter allows and `u64::MAX` the longest, with the
    /// values between spread evenly. See [`Jitter`] for the formulas.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::{Jitter, Policy};
    ///
    /// let policy = Policy::new().with_jitter(Jitter::Equal);
    /// let ceiling = policy.ceiling(3); // 800ms
    /// assert_eq!(policy.wait_with(3, policy.base(), 0), ceiling / 2);
    /// assert_eq!(policy.wait_with(3, policy.base(), u64::MAX), ceiling);
    ///
    /// // Halves are whole nanoseconds: an odd ceiling's longest wait is one
    /// // nanosecond short of it.
    /// let odd = policy.with_base(Duration::from_nanos(7)).with_cap(Duration::from_nanos(7));
    /// assert_eq!(odd.wait_with(0, odd.base(), 0), Duration::from_nanos(3));
    /// assert_eq!(odd.wait_with(0, odd.base(), u64::MAX), Duration::from_nanos(6));
    /// ```
    #[must_use]
    pub fn wait_with(&self, n: u32, previous: Duration, sample: u64) -> Duration {
        let nanos = match self.jitter {
            Jitter::None => self.ceiling_nanos(n),
            Jitter::Full => uniform(0, self.ceiling_nanos(n), sample),
            Jitter::Equal => {
                // `half + uniform(0, half)`, as documented: for an odd
                // ceiling the longest wait is `ceiling - 1`.
                let half = self.ceiling_nanos(n) / 2;
                half + uniform(0, half, sample)
            }
            Jitter::Decorrelated => {
                let low = nanos(self.base);
                let high = nanos(previous).saturating_mul(3).max(low);
                uniform(low, high, sample).min(nanos(self.cap))
            }
        };
        Duration::from_nanos(nanos)
    }
}

impl Policy {
    /// The wait when the server asked for `hint` (a `Retry-After`): at least
    /// the hint and at least the backoff `wait`, plus a uniform share of up
    /// to a tenth of the hint drawn from `sample`, so that clients told the
    /// same hint do not come back in the same instant:
    /// `max(hint, wait) + uniform in [0, hint / 10]`.
    ///
    /// `None` when the hint is longer than `cap`: a server asking for more
    /// than the caller tolerates is not waited out. `None` too for a hint
    /// longer than `u64::MAX` nanoseconds (about 584 years, the longest wait),
    /// which could only be waited out in part.
    ///
    /// The wait is therefore at most `cap + cap / 10` (1.1 x `cap`): the
    /// spread is added on top of a hint that may be `cap` itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use retry_runtime::Policy;
    ///
    /// let policy = Policy::new(); // cap 10s
    /// let hint = Duration::from_secs(2);
    /// let backoff = Duration::from_millis(100);
    /// assert_eq!(policy.hinted_wait(backoff, hint, 0), Some(hint));
    /// assert_eq!(policy.hinted_wait(backoff, hint, u64::MAX), Some(Duration::from_millis(2200)));
    /// assert_eq!(policy.hinted_wait(backoff, Duration::from_secs(11), 0), None);
    /// ```
    #[must_use]
    pub fn hinted_wait(&self, wait: Duration, hint: Duration, sample: u64) -> Option<Duration> {
        if hint > self.cap || hint > Duration::from_nanos(u64::MAX) {
            return None;
        }
        let hint = nanos(hint);
        let spread = uniform(0, hint / 10, sample);
        Some(Duration::from_nanos(
            hint.max(nanos(wait)).saturating_add(spread),
        ))
    }
}

/// A rule of [`Policy::validate`] that a policy breaks.
#[derive(Clone, Copy, Debug, PartialEq)]
#[non_exhaustive]
pub enum PolicyError {
    /// `max_attempts` is 0; it counts the first call, so it must be at least 1.
    NoAttempts,
    /// `base` is zero.
    ZeroBase,
    /// `cap` is below `base`.
    CapBelowBase {
        /// The base.
        base: Duration,
        /// The cap, smaller than the base.
        cap: Duration,
    },
    /// The multiplier is below 1, infinite or NaN.
    Multiplier(f64),
    /// The deadline is zero.
    ZeroDeadline,
    /// The per-attempt timeout is zero.
    ZeroTimeout,
    /// The policy carries a per-attempt timeout, but it is run where the
    /// error type cannot express one (it does not implement
    /// `From<TimedOut>`); see [`Policy::untimed`].
    TimeoutNotExpressible {
        /// The timeout the policy carries.
        timeout: Duration,
    },
}

impl fmt::Display for PolicyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::NoAttempts => f.write_str(
                "`max` must be at least 1: it counts every attempt, the first call included",
            ),
            Self::ZeroBase => f.write_str("`base` must be above zero"),
            Self::CapBelowBase { base, cap } => {
                write!(f, "`cap` ({cap:?}) must be at least `base` ({base:?})")
            }
            Self::Multiplier(m) => write!(f, "`multiplier` must be a finite number >= 1, not {m}"),
            Self::ZeroDeadline => f.write_str("`deadline` must be above zero"),
            Self::ZeroTimeout => f.write_str("`timeout` must be above zero"),
            Self::TimeoutNotExpressible { timeout } => write!(
                f,
                "the policy sets a per-attempt `timeout` ({timeout:?}), but it runs where the \
                 error type cannot express a timeout (no `From<TimedOut>`): remove the timeout, \
                 or bound the attempt inside the call (for reqwest, `ClientBuilder::timeout`)"
            ),
        }
    }
}

impl std::error::Error for PolicyError {}

/// A [`Policy`] known to carry no per-attempt timeout, made by
/// [`Policy::untimed`]. It runs calls whose error type cannot express a
/// timeout (no `From<TimedOut>`), such as `reqwest::Error` or `sqlx::Error`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct UntimedPolicy(Policy);

impl UntimedPolicy {
    /// The policy, whose `timeout()` is `None`.
    #[must_use]
    pub const fn policy(&self) -> &Policy {
        &self.0
    }
}
