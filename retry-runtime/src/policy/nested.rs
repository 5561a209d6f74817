//! What an outer retried function does with a failure an inner one already
//! retried: the rule `tests/retry_closest_to_the_failure.rs` and
//! `tests/nesting_judged_by_what_failed.rs` specify.

/// What a retried function does with a failed attempt in which a retried
/// function it called (directly or through ordinary functions) already
/// retried and gave up.
///
/// Retries happen at one layer, the one closest to the failure: a retried
/// function called inside another's attempt retries under its own policy,
/// never past the outer call's deadline. The rule, exactly:
///
/// - An inner call *gives up* when it stops on an error it judged retryable
///   (attempts used up, deadline, budget, a hint longer than `cap`, an open
///   breaker) and its `max` is above 1. A function that never retries
///   (`max = 1`, a breaker-only guard) is no retry layer: its failure marks
///   nothing, though it passes on the mark of a layer below it.
/// - A give-up marks the attempt it ran in. The mark is cleared when that
///   attempt's future returns `Pending` while no retried call it started is
///   still running: the body has moved on to work of its own, so it handled
///   the give-up (a fallback, `unwrap_or_default`, a degraded answer).
/// - When the attempt fails with the mark set, the outer call returns that
///   error at once, for reason [`Stop::Nested`](crate::Stop::Nested) (under
///   `Once`); otherwise the failure is judged by the outer's own rules.
///
/// So `?` on an inner give-up, `try_join_all`, `join_all` then `?`, and a
/// `FuturesUnordered` fan-out of retried calls fail the outer attempt with
/// the mark set, and the batch is not re-sent; three layers of three
/// attempts cost three calls at the bottom, not 27; and a handler that
/// degrades gracefully is still retried when its own call fails after
/// waiting on it.
///
/// What the rule cannot tell apart, and which way it errs:
///
/// - A give-up handled, then a failure with nothing awaited in between that
///   pends (the body fails at once, or only awaits retried calls until it
///   fails): taken for a propagated give-up, and not retried. A plain `fn`
///   never pends, so there a handled give-up followed by a failure is always
///   this shape.
/// - A give-up kept aside and propagated after the body awaited something
///   else (`let r = inner().await; own().await; r?`, or `join!` of a
///   retried call and a plain future, then `?`): taken for handled, and the
///   outer retries it, once per outer attempt.
/// - A retried call dropped before it returns (it lost a `select!`, a
///   `timeout` cut it off) stays counted as running until the attempt ends,
///   so a give-up in that attempt is never taken for handled.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
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
