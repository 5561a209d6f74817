//! The fuzzers' saved corpus, replayed as ordinary tests: every input kept
//! in `fuzz/corpus/<target>/` goes through the same checks as under the
//! fuzzer (`tests/support/fuzz_checks.rs`), so CI checks them without
//! nightly or cargo-fuzz.

#[path = "support/fuzz_checks.rs"]
mod fuzz_checks;

use std::path::Path;

fn replay(target: &str, check: fn(&[u8])) {
    let folder = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/corpus")
        .join(target);
    let mut inputs = 0;
    for entry in std::fs::read_dir(&folder).unwrap_or_else(|e| panic!("{}: {e}", folder.display()))
    {
        let path = entry.unwrap().path();
        let data = std::fs::read(&path).unwrap();
        let outcome = std::panic::catch_unwind(|| check(&data));
        assert!(outcome.is_ok(), "{} fails its checks", path.display());
        inputs += 1;
    }
    // An empty folder would make this test pass without checking anything.
    assert!(inputs >= 10, "{}: only {inputs} inputs", folder.display());
}

#[test]
fn the_retry_after_corpus_holds() {
    replay("retry_after", fuzz_checks::retry_after);
}

#[test]
fn the_duration_corpus_holds() {
    replay("duration", fuzz_checks::duration);
}

#[test]
fn the_policy_config_corpus_holds() {
    replay("policy_config", fuzz_checks::policy_config);
}

#[test]
fn the_grpc_config_corpus_holds() {
    replay("grpc_config", fuzz_checks::grpc_config);
}
