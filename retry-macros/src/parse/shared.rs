//! The keys that name shared state or where things live: `budget`,
//! `breaker`, `policy` (each an expression evaluated at run time), `nested`
//! and `crate`.

use syn::spanned::Spanned;
use syn::{Expr, Lit, Path};

use super::{literal, Config};

/// `nested = "..."`: what an outer function does with a failure an inner
/// retried function already retried.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nested {
    Once,
    Retry,
}

impl Nested {
    /// The name of the runtime's `Nested` variant.
    pub fn variant(self) -> &'static str {
        match self {
            Nested::Once => "Once",
            Nested::Retry => "Retry",
        }
    }
}

impl Config {
    /// `budget`: an expression of type `&'static RetryBudget`, not a literal.
    pub(super) fn set_budget(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`budget` takes a reference to a shared `static RetryBudget`, such as `budget = &API_BUDGET`",
            ));
        }
        self.budget = Some(value.clone());
        Ok(())
    }

    /// `breaker`: an expression of type `&CircuitBreaker`, not a literal.
    pub(super) fn set_breaker(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`breaker` takes a reference to a shared `static CircuitBreaker`, such as `breaker = &INVENTORY`",
            ));
        }
        self.breaker = Some(value.clone());
        Ok(())
    }

    /// `policy`: an expression of type `&Policy` or `&UntimedPolicy`, not a
    /// literal.
    pub(super) fn set_policy(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`policy` takes an expression of type `&Policy` built at run time, such as \
                 `policy = &CONFIG.retry`; for a fixed policy, write its keys here instead",
            ));
        }
        self.policy = Some(value.clone());
        Ok(())
    }

    pub(super) fn set_nested(&mut self, value: &Expr) -> syn::Result<()> {
        self.nested = match literal(value) {
            Some(Lit::Str(s)) if s.value() == "once" => Nested::Once,
            Some(Lit::Str(s)) if s.value() == "retry" => Nested::Retry,
            Some(Lit::Str(s)) => return Err(syn::Error::new(
                s.span(),
                format!(
                    "unknown `nested` value {:?}: write `nested = \"once\"` (the default: a failure that \
                     a retried function called here already retried is not retried again) or \
                     `nested = \"retry\"` (retry it here too)",
                    s.value()
                ),
            )),
            _ => return Err(syn::Error::new_spanned(
                value,
                "`nested` takes a string: `nested = \"once\"` or `nested = \"retry\"`",
            )),
        };
        Ok(())
    }

    pub(super) fn set_crate(&mut self, value: &Expr) -> syn::Result<()> {
        let path = match literal(value) {
            Some(Lit::Str(s)) => s.parse::<Path>().map_err(|_| {
                syn::Error::new(
                    s.span(),
                    format!("`crate` must name a path, such as `crate = \"::retry_runtime\"`; {:?} is not one", s.value()),
                )
            })?,
            _ => return Err(syn::Error::new(
                value.span(),
                "`crate` takes the path of the runtime as a string: `crate = \"::my_retry\"`",
            )),
        };
        self.krate = Some(path);
        Ok(())
    }
}
