//! Compile-time checks of the attribute: every mistake is one error, on the
//! token at fault, saying how to fix it. Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test ui` and read the diff.

use std::io::Write;

#[test]
fn ui() {
    let (fail, pass) = (cases("tests/ui/fail"), cases("tests/ui/pass"));
    // Straight to stderr, which the test harness does not capture (it
    // captures `eprintln!`): the build below is silent for minutes.
    let _ = writeln!(
        std::io::stderr(),
        "ui: trybuild compiles {fail} compile-fail and {pass} pass cases and compares each \
         compiler error with its .stderr file; this takes a few minutes"
    );
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}

/// How many cases `dir` holds: its `.rs` files.
fn cases(dir: &str) -> usize {
    std::fs::read_dir(dir).map_or(0, |entries| {
        entries
            .filter_map(Result::ok)
            .filter(|entry| entry.path().extension().is_some_and(|ext| ext == "rs"))
            .count()
    })
}
