//! A hedged call (`hedge = ...`): the attempts run side by side and share
//! the arguments; the call itself is written by `crate::hedge`.

use proc_macro2::{Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Expr, Ident};

use super::attempt::Limit;
use super::spans::split_on_output;
use super::Expansion;

impl Expansion<'_> {
    pub(super) fn hedged(&self, hedge: crate::parse::Hedge, attempt: TokenStream) -> TokenStream {
        let Expansion {
            config,
            private,
            output,
            ..
        } = self;
        let span = Span::mixed_site();
        let limit = Ident::new("limit", span);
        let policy_copy = Ident::new("policy", span);
        let (policy, max) = match &config.policy {
            Some(_) => (quote!(&#policy_copy), None),
            None => (self.policy_const(), Some(config.max)),
        };
        // As the loop's: `E::from(TimedOut)`, or what `timed_out` builds,
        // checked on that key; with `policy`, what the policy's type allows.
        let limit = match self.limit() {
            Limit::None => quote!(#private::hedge::Unbounded),
            Limit::Policy => quote!(#limit),
            Limit::Key { span, timed_out } => self.keyed_limit(span, timed_out.as_ref()),
        };
        // The path that names the return type is bound first (see
        // `split_on_output`). The budget and the breaker are then bound to
        // locals before the call, as the loop binds them: a temporary they
        // borrow (`&CONST`, a `const` breaker copied at each use) is the
        // compiler's error here too, rather than a breaker or budget of the
        // call's own that nothing else shares.
        let (bind_breaker, breaker) = match (&config.breaker, &config.circuit_open) {
            (Some(breaker), Some(circuit_open)) => split_on_output(
                quote!(#private::hedge::breaker_with::<#output>),
                quote!(#breaker, #circuit_open),
                circuit_open.span(),
                "breaker_with",
            ),
            (Some(breaker), None) => {
                let span = match breaker {
                    Expr::Reference(reference) => reference.expr.span(),
                    other => other.span(),
                };
                split_on_output(
                    quote!(#private::hedge::breaker::<#output>),
                    quote!(#breaker),
                    span,
                    "breaker",
                )
            }
            (None, _) => (TokenStream::new(), quote!(#private::None)),
        };
        let mut bind = bind_breaker;
        let budget = match &config.budget {
            Some(budget) => {
                let shared = Ident::new("shared_budget", span);
                bind.extend(quote!(let #shared = #private::budget(#budget);));
                quote!(#shared)
            }
            None => quote!(#private::None),
        };
        let breaker = match &config.breaker {
            Some(_) => {
                let shared = Ident::new("shared_breaker", span);
                bind.extend(quote!(let #shared = #breaker;));
                quote!(#shared)
            }
            None => breaker,
        };
        let name = &self.name;
        let call = crate::hedge::expand(crate::hedge::Parts {
            hedge,
            private,
            policy,
            max,
            budget,
            breaker,
            limit,
            name: quote!(::core::concat!(::core::module_path!(), "::", #name)),
            rules: self.rules(),
            at: self.step_span(),
            attempt,
            key: config.keys.get("hedge").map_or(span, Ident::span),
        });
        quote!(#bind #call)
    }
}
