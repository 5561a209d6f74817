//! `std::io::Error`, by kind.
//!
//! ```
//! use retry_runtime::{classify, retry};
//!
//! # struct Connection;
//! # impl Connection { async fn read_frame(&self) -> std::io::Result<Vec<u8>> { Ok(Vec::new()) } }
//! #[retry(max = 4, on = classify::io::is_transient)]
//! async fn next_frame(connection: &Connection) -> std::io::Result<Vec<u8>> {
//!     connection.read_frame().await
//! }
//! ```

use std::io::{Error, ErrorKind};

/// Whether an I/O error may go away on a repeat: timeouts, interruptions,
/// refused, reset, aborted or broken connections, unreachable hosts and
/// networks, a busy resource, no free local address. Not found, permission
/// denied, invalid input or data and the like are permanent.
///
/// For a bare `ErrorKind`, write `is_transient(&kind.into())`: an
/// `io::Error` made from a kind allocates nothing.
#[must_use]
pub fn is_transient(error: &Error) -> bool {
    matches!(
        error.kind(),
        ErrorKind::TimedOut
            | ErrorKind::Interrupted
            | ErrorKind::WouldBlock
            | ErrorKind::ConnectionRefused
            | ErrorKind::ConnectionReset
            | ErrorKind::ConnectionAborted
            | ErrorKind::NotConnected
            | ErrorKind::BrokenPipe
            | ErrorKind::UnexpectedEof
            | ErrorKind::AddrNotAvailable
            | ErrorKind::HostUnreachable
            | ErrorKind::NetworkUnreachable
            | ErrorKind::NetworkDown
            | ErrorKind::ResourceBusy
    )
}
