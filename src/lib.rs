//! `retry-suite` holds the integration tests (`tests/`) and examples
//! (`examples/`) of the workspace. It has no code of its own: the tests and
//! examples use `retry-runtime` exactly as a user's service would.
