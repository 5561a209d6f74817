//! The duration grammar on any bytes: never a panic, and a string that
//! parses re-parses to the same duration from its canonical form.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/fuzz_checks.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| fuzz_checks::duration(data));
