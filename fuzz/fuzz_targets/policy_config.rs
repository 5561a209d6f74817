//! `Policy` from TOML and JSON on any bytes: an error value or a policy
//! that validates, and whose waits never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/fuzz_checks.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| fuzz_checks::policy_config(data));
