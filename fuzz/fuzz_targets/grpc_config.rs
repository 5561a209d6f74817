//! A gRPC service config from any bytes: an error value, or a config that
//! keeps gRFC A6's rules, reads its durations as protobuf's JSON mapping
//! does, and whose policies validate.
#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "../../tests/support/fuzz_checks.rs"]
mod fuzz_checks;

fuzz_target!(|data: &[u8]| fuzz_checks::grpc_config(data));
