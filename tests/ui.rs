//! Compile-time checks of the attribute: every mistake is one error, on the
//! token at fault, saying how to fix it. Regenerate the expected output with
//! `TRYBUILD=overwrite cargo test --test ui` and read the diff.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/fail/*.rs");
    t.pass("tests/ui/pass/*.rs");
}
