//! hyper's errors, and those of its HTTP/2 transport (h2): what may go away
//! on a repeat, and what the server never processed. Used by the chain,
//! reqwest and HTTP classifiers.

use std::error::Error;

use super::source::{find, sources};
use crate::Classification;

/// Whether a hyper error may go away on a repeat of a request that was not
/// processed: a timeout, or a connection that failed before sending.
pub(crate) fn is_transient(error: &::hyper::Error) -> bool {
    error.is_timeout()
        || find::<std::io::Error>(error).is_some_and(|error| {
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
        || find::<std::io::Error>(error).is_some_and(crate::classify::io::is_transient)
}

/// Whether a request that failed with `error` was never processed by the
/// server, so that sending it again is safe whatever its method:
/// [`Classification::Unsent`] when its connection was refused (nothing was
/// sent), [`Classification::Unprocessed`] when the server reset its HTTP/2
/// stream with `REFUSED_STREAM`, or a graceful `GOAWAY` (`NO_ERROR`) ended
/// it, which h2 reports only for streams above the `GOAWAY`'s last stream
/// id (RFC 9113 sections 6.8 and 8.7). A `GOAWAY` with an error code is not
/// taken: h2 reports it on the streams below the last id too.
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
pub(crate) fn unprocessed(error: &(dyn Error + 'static)) -> Option<Classification> {
    sources(error).find_map(|error| {
        if let Some(error) = error.downcast_ref::<h2::Error>() {
            let refused = error.is_reset() && error.reason() == Some(h2::Reason::REFUSED_STREAM);
            let going_away = error.is_go_away() && error.reason() == Some(h2::Reason::NO_ERROR);
            return (error.is_remote() && (refused || going_away))
                .then_some(Classification::Unprocessed);
        }
        let error = error.downcast_ref::<std::io::Error>()?;
        (error.kind() == std::io::ErrorKind::ConnectionRefused).then_some(Classification::Unsent)
    })
}
