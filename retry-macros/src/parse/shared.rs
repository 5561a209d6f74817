//! The keys that name shared state or where things live: `budget`,
//! `breaker`, `policy` (each an expression evaluated at run time), `nested`
//! and `crate`.

use syn::spanned::Spanned;
use syn::{Expr, Lit, Path};

use super::{literal, Config};

/// Whether `value` builds a `ty` (`RetryBudget::new(..)`, `&CircuitBreaker::new()`,
/// `&CircuitBreaker::new().with_name(..)`), borrowed or not: a new one at
/// each call, which the compiler would report as a temporary dropped while
/// borrowed (or suggest borrowing, which leads there).
fn built_here(value: &Expr, ty: &str) -> bool {
    match value {
        Expr::Reference(reference) => built_here(&reference.expr, ty),
        Expr::Paren(inner) => built_here(&inner.expr, ty),
        Expr::Group(inner) => built_here(&inner.expr, ty),
        Expr::MethodCall(call) => built_here(&call.receiver, ty),
        Expr::Call(call) => match &*call.func {
            Expr::Path(path) => {
                let segments = &path.path.segments;
                segments.len() >= 2 && segments[segments.len() - 2].ident == ty
            }
            _ => false,
        },
        Expr::Struct(built) => built
            .path
            .segments
            .last()
            .is_some_and(|last| last.ident == ty),
        _ => false,
    }
}

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
        if built_here(value, "RetryBudget") {
            return Err(syn::Error::new_spanned(
                value,
                "`budget` is shared by every call that names it, and a `RetryBudget` built here \
                 would be a new one at each call: declare it once, \
                 `static API_BUDGET: RetryBudget = RetryBudget::new(100, 0.1);`, and write \
                 `budget = &API_BUDGET`",
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
        if built_here(value, "CircuitBreaker") {
            return Err(syn::Error::new_spanned(
                value,
                "`breaker` is shared by every call that names it, and a `CircuitBreaker` built \
                 here would be a new one at each call, which never sees enough failures to open: \
                 declare it once, `static INVENTORY: CircuitBreaker = CircuitBreaker::new();`, and \
                 write `breaker = &INVENTORY`",
            ));
        }
        self.breaker = Some(value.clone());
        Ok(())
    }

    /// `policy`: an expression of type `&Policy` or `&Policy<TimedOut>`, not a
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
