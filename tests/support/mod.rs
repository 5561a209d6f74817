//! A scripted dependency shared by the integration tests.
#![allow(dead_code)]

use std::cell::RefCell;
use std::time::Duration;

use tokio::time::Instant;

/// The error a [`Flaky`] call fails with: which call it was, so a test can
/// tell that the caller got the last error and not an earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failure {
    pub call: u32,
    pub transient: bool,
}

pub fn is_transient(failure: &Failure) -> bool {
    failure.transient
}

/// Fails its first `failures` calls, then succeeds with the call number.
/// Records when each call started, relative to its creation.
pub struct Flaky {
    failures: u32,
    transient: bool,
    started: Instant,
    calls: RefCell<Vec<Duration>>,
}

impl Flaky {
    pub fn failing(failures: u32) -> Self {
        Flaky {
            failures,
            transient: true,
            started: Instant::now(),
            calls: RefCell::new(Vec::new()),
        }
    }

    /// Like `failing`, but every failure is permanent (`transient: false`).
    pub fn permanent(failures: u32) -> Self {
        Flaky {
            transient: false,
            ..Flaky::failing(failures)
        }
    }

    pub fn call(&self) -> Result<u32, Failure> {
        let mut calls = self.calls.borrow_mut();
        calls.push(self.started.elapsed());
        let call = u32::try_from(calls.len()).unwrap();
        if call <= self.failures {
            Err(Failure {
                call,
                transient: self.transient,
            })
        } else {
            Ok(call)
        }
    }

    pub fn calls(&self) -> usize {
        self.calls.borrow().len()
    }

    /// When each call started, in whole milliseconds after creation.
    pub fn starts_ms(&self) -> Vec<u128> {
        self.calls
            .borrow()
            .iter()
            .map(Duration::as_millis)
            .collect()
    }

    /// The waits between consecutive calls.
    pub fn gaps(&self) -> Vec<Duration> {
        self.calls
            .borrow()
            .windows(2)
            .map(|w| w[1] - w[0])
            .collect()
    }
}

impl From<retry_runtime::TimedOut> for Failure {
    /// A cut-off attempt: call 0, transient.
    fn from(_: retry_runtime::TimedOut) -> Self {
        Failure {
            call: 0,
            transient: true,
        }
    }
}
