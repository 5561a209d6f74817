//! `retry_after::parse_at` on any bytes, at clocks from before 1970 to far
//! ahead: never a panic, and the invariants of `tests/fuzz_corpus.rs`.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/fuzz_checks.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| fuzz_checks::retry_after(data));
