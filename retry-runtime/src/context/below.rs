//! What a ready-made classifier found on the answer being judged: the
//! mark of a give-up below (DESIGN §4.17), kept beside the attempt's
//! context on this thread.

use super::THREAD;

/// What a ready-made classifier found on the answer it judged: whether the
/// server below gave up on it and said so (DESIGN §4.17). Set while an
/// answer is judged, and taken by the call that judges it
/// ([`CallState::below`](crate::call_state::CallState::below)),
/// so that a classifier's verdict, a `bool` or a `Classification`, needs no
/// room for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(not(any(feature = "http", feature = "grpc")), allow(dead_code))]
pub(crate) enum Below {
    /// Nothing: the answer is judged by the rules alone.
    Nothing,
    /// An HTTP answer marked `retry-exhausted` or `x-envoy-overloaded`:
    /// taken as an inner call's give-up is, so `nested = "retry"` retries it.
    GaveUp,
    /// A negative gRPC pushback, never retried (gRFC A6).
    #[cfg_attr(
        not(any(feature = "grpc", feature = "tower", feature = "reqwest-middleware")),
        allow(dead_code)
    )]
    Refused,
}

/// A classifier found that the server below gave up on the answer it
/// judges (a refusal outweighs a mark).
#[cfg_attr(not(any(feature = "http", feature = "grpc")), allow(dead_code))]
pub(crate) fn gave_up_below(below: Below) {
    THREAD.with(|thread| thread.below.update(|found| found.max(below)));
}

/// An answer is about to be judged: nothing is known of it yet (a
/// classifier called outside a judgment leaves nothing for the next).
#[inline]
pub(crate) fn judging() {
    THREAD.with(|thread| thread.below.set(Below::Nothing));
}

/// What the classifiers found on the answer just judged; nothing after.
#[inline]
pub(crate) fn take_below() -> Below {
    THREAD.with(|thread| thread.below.replace(Below::Nothing))
}
