//! `retry-suite` holds the integration tests (`tests/`) of the workspace. It
//! has no code of its own: the tests use `retry-runtime` exactly as a user's
//! service would. The examples (`examples/`) are the package
//! `retry-examples`.

/// Every Rust block of the README and of each page under `docs/`, compiled
/// and run as a doctest, so that an example there can never stop compiling
/// unnoticed. One item per page, so that a failure names the page.
#[cfg(doctest)]
mod pages {
    #[doc = include_str!("../README.md")]
    pub struct Readme;
    #[doc = include_str!("../docs/keys.md")]
    pub struct Keys;
    #[doc = include_str!("../docs/semantics.md")]
    pub struct Semantics;
    #[doc = include_str!("../docs/nesting.md")]
    pub struct Nesting;
    #[doc = include_str!("../docs/services.md")]
    pub struct Services;
    #[doc = include_str!("../docs/breaker.md")]
    pub struct Breaker;
    #[doc = include_str!("../docs/overload.md")]
    pub struct Overload;
    #[doc = include_str!("../docs/hedging.md")]
    pub struct Hedging;
    #[doc = include_str!("../docs/integrations.md")]
    pub struct Integrations;
    #[doc = include_str!("../docs/runtimes.md")]
    pub struct Runtimes;
    #[doc = include_str!("../docs/observability.md")]
    pub struct Observability;
    #[doc = include_str!("../docs/testing.md")]
    pub struct Testing;
    #[doc = include_str!("../docs/hostile-input.md")]
    pub struct HostileInput;
    #[doc = include_str!("../docs/cost.md")]
    pub struct Cost;
    #[doc = include_str!("../docs/why.md")]
    pub struct Why;
    #[doc = include_str!("../docs/migrating.md")]
    pub struct Migrating;
}
