//! Nothing but the tests in `tests/`, which run on `wasm32-unknown-unknown`
//! in node (see `Cargo.toml`).
