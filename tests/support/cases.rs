//! How many cases a property test runs.

/// `full` cases in an optimised build (`cargo test --release`), a tenth in
/// the debug build CI runs, so CI stays quick and a release run goes deep.
pub const fn cases(full: u32) -> u32 {
    if cfg!(debug_assertions) {
        full / 10
    } else {
        full
    }
}
