//! What an outer retried function does with a failure an inner one already
//! retried: the rule the tests in `tests/retry_closest_to_the_failure.rs`
//! specify.

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
