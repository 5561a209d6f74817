//! Walking an error's `source()` chain; shared by the classifiers of chains,
//! reqwest and hyper errors.

use std::error::Error;

/// The errors of a chain, the outermost first.
pub fn sources<'a>(
    error: &'a (dyn Error + 'static),
) -> impl Iterator<Item = &'a (dyn Error + 'static)> + 'a {
    core::iter::successors(Some(error), |&error| error.source())
}

/// The first error of type `T` in a chain.
#[must_use]
#[cfg_attr(not(any(feature = "grpc", feature = "reqwest")), allow(dead_code))]
pub fn find<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
    sources(error).find_map(|error| error.downcast_ref::<T>())
}

/// A `dyn Error`, with or without `Send` and `Sync`: what the chain
/// classifiers accept behind any pointer to one (`anyhow::Error`,
/// `eyre::Report`, `Box<dyn Error>`, `Box<dyn Error + Send + Sync>`, tower's
/// `BoxError`, `Arc<dyn Error>`, `&dyn Error`).
pub trait DynError {
    /// The error, as the head of its chain.
    fn as_dyn_error(&self) -> &(dyn Error + 'static);
}

/// Each of the three `dyn Error`s is the head of its own chain.
macro_rules! dyn_errors {
    ($($error:ty),*) => {$(
        impl DynError for $error {
            fn as_dyn_error(&self) -> &(dyn Error + 'static) {
                self
            }
        }
    )*};
}

dyn_errors!(
    dyn Error + 'static,
    dyn Error + Send + 'static,
    dyn Error + Send + Sync + 'static
);
