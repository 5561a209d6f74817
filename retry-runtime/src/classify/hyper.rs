//! hyper's errors: what may go away on a repeat. Used by the chain and
//! reqwest classifiers.

use super::source::sources;

/// Whether a hyper error may go away on a repeat of a request that was not
/// processed: a timeout, or a connection that failed before sending.
pub(crate) fn is_transient(error: &::hyper::Error) -> bool {
    error.is_timeout()
        || sources(error)
            .skip(1)
            .find_map(|source| source.downcast_ref::<std::io::Error>())
            .is_some_and(|error| {
                matches!(
                    error.kind(),
                    std::io::ErrorKind::ConnectionRefused | std::io::ErrorKind::TimedOut
                )
            })
}

/// [`is_transient`], and for a repeatable request also a connection
/// closed or reset before the whole response arrived.
pub(crate) fn is_transient_repeatable(error: &::hyper::Error) -> bool {
    is_transient(error)
        || error.is_incomplete_message()
        || error.is_canceled()
        || sources(error)
            .skip(1)
            .find_map(|source| source.downcast_ref::<std::io::Error>())
            .is_some_and(crate::classify::io::is_transient)
}
