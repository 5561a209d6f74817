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
pub fn find<'a, T: Error + 'static>(error: &'a (dyn Error + 'static)) -> Option<&'a T> {
    sources(error).find_map(|error| error.downcast_ref::<T>())
}
