//! The attempt expression: one run of the body, cut off by `timeout` (or a
//! `policy` that may carry one), behind the breaker when there is one.
//!
//! ```text
//! // Output, async, with `timeout` and `breaker`:
//! if attempts.acquire() {
//!     let limit = timeout_key::<Ret, _>();     // or timed_out_with::<Ret, _>(|t| ..)
//!     (attempts.scoped(limit.attempt::<Ret, _>(attempts.attempt_timeout(), async { /* body */ }))).await
//! } else {
//!     match last.take() {                      // a refused retry: the last error
//!         Some(outcome) => outcome,
//!         None => circuit_open(),              // or circuit_open_with(circuit_open)
//!     }
//! }
//! ```
//!
//! Each conversion is spanned on the key that asks for it, so that an error
//! type that cannot express a cut-off attempt or a refused call is one error,
//! on that key.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident};

use super::spans::{call_keeping_output, output_lints, respan};
use super::Expansion;
use crate::check::timeout_span;

/// How a cut-off attempt fails.
pub(super) enum Limit {
    /// No time limit.
    None,
    /// `policy = ...` without `timed_out`: the limit the policy's type allows,
    /// in the local `limit`.
    Policy,
    /// `timeout = ...` (or `policy` with `timed_out`): made at `span`, by
    /// `E::from(TimedOut)` or by the key.
    Key { span: Span, timed_out: Option<Expr> },
}

impl Expansion<'_> {
    pub(super) fn limit(&self) -> Limit {
        let config = self.config;
        match (&config.timed_out, &config.policy, timeout_span(config)) {
            (Some(timed_out), _, _) => Limit::Key {
                span: timed_out.span(),
                timed_out: Some(timed_out.clone()),
            },
            (None, Some(_), _) => Limit::Policy,
            (None, None, Some(span)) => Limit::Key {
                span,
                timed_out: None,
            },
            (None, None, None) => Limit::None,
        }
    }

    /// The time limit of `timeout` (or `policy` with `timed_out`), made at
    /// the key, so that an error type that cannot express a cut-off attempt,
    /// or a conversion of the wrong type, is reported there.
    pub(super) fn keyed_limit(&self, span: Span, timed_out: Option<&Expr>) -> TokenStream {
        let Expansion {
            private, output, ..
        } = self;
        match timed_out {
            // The conversion is written inside a closure that captures
            // nothing, which is what a limit holds.
            // Its locals are located at the key, so that a conversion of the
            // wrong type (`|_| 5`, `|_: u32| ..`) is reported on the key, not
            // on the whole attribute.
            Some(timed_out) => {
                let at = Span::mixed_site().located_at(span);
                let cut_off = Ident::new("timed_out", at);
                let error = Ident::new("error", at);
                let convert = quote_spanned! {span=>
                    |#cut_off| {
                        #[allow(clippy::redundant_closure_call, clippy::let_and_return)]
                        let #error = (#timed_out)(#cut_off);
                        #error
                    }
                };
                call_keeping_output(
                    quote!(#private::timed_out_with),
                    output,
                    quote!(_),
                    convert,
                    span,
                )
            }
            // `timeout_key::<Ret, _>()`: `Ret: Outcome` is reported on the
            // copy of `Ret`, which keeps the user's spans (see
            // `call_keeping_output`), where a return type that is not a
            // `Result` already is, and the error type's bound on the `_`,
            // located at the key.
            None => call_keeping_output(
                quote!(#private::timeout_key),
                output,
                quote!(_),
                TokenStream::new(),
                span,
            ),
        }
    }

    /// One attempt: `statements` (the body, in its block) run afresh, its
    /// outcome of the return type.
    pub(super) fn attempt(
        &self,
        (fake_return, statements): (TokenStream, Group),
        body_span: Span,
        names: &Names,
    ) -> TokenStream {
        let Expansion {
            output,
            arguments,
            private,
            ..
        } = self;
        let Names {
            attempts,
            limit,
            outcome,
            last,
            ..
        } = names;
        let fresh = &arguments.fresh;
        let capture = &arguments.capture;
        let limit = match self.limit() {
            Limit::None => None,
            Limit::Policy => Some(quote!(#limit)),
            Limit::Key { span, timed_out } => Some(self.keyed_limit(span, timed_out.as_ref())),
        };
        let run = if self.is_async {
            // The attempt: the original body in a block of its own, spanned
            // on the body so that the compiler's errors about it point there.
            let body = quote_spanned! {body_span=>
                async {
                    #capture
                    #fake_return
                    #statements
                }
            };
            let body = match &limit {
                // `attempt::<Ret, _>`, `Ret` as the user wrote it, and the
                // call located at the return type from its first token to its
                // last: a return type that is not a `Result` is then reported
                // there, where it already is, and not again on the body or on
                // the whole attribute.
                Some(limit) => {
                    let (first, last) = super::spans::ends(output);
                    let mut limit = Group::new(Delimiter::Brace, limit.clone());
                    limit.set_span(first);
                    let head = respan(quote!(.attempt::<), first);
                    let tail = respan(quote!(, _>), last);
                    let mut args = Group::new(
                        Delimiter::Parenthesis,
                        quote!(#attempts.attempt_timeout(), #body),
                    );
                    args.set_span(last);
                    quote!(#limit #head #output #tail #args)
                }
                None => body,
            };
            match limit {
                // Awaited from the return type too: the future is a
                // `Limited`, which needs `Ret: Outcome` as well.
                Some(_) => {
                    let (first, last) = super::spans::ends(output);
                    let mut scoped =
                        Group::new(Delimiter::Parenthesis, quote!(#attempts.scoped(#body)));
                    scoped.set_span(first);
                    let awaited = respan(quote!(.await), last);
                    quote!(#scoped #awaited)
                }
                None => quote!(#attempts.scoped(#body).await),
            }
        } else {
            // A blocking attempt cannot be cut off: one that returns after
            // its limit counts as timed out.
            let body = quote_spanned! {body_span=>
                || -> #output #statements
            };
            match limit {
                // `call_limited::<Ret, _, _>`, `Ret` as the user wrote it:
                // see the async attempt above.
                Some(limit) => {
                    let (first, last) = super::spans::ends(output);
                    let head = respan(quote!(.call_limited::<), first);
                    let tail = respan(quote!(, _, _>), last);
                    let mut args = Group::new(Delimiter::Parenthesis, quote!(#limit, #body));
                    args.set_span(last);
                    quote!(#attempts #head #output #tail #args)
                }
                None => quote!(#attempts.call(#body)),
            }
        };
        let run = quote!({ #fresh #run });
        match &self.config.breaker {
            Some(breaker) => {
                // A retry the breaker refuses returns the caller's own last
                // error, kept through the wait, not the refusal.
                let refused = self.refused(breaker);
                // `circuit_open::<Ret>()` copies the return type to the
                // breaker, where its bound on `Ret` alone is reported: the
                // arm that holds it allows the `output_lints` (see
                // `split_on_output`); it holds none of the user's code. With
                // `circuit_open`, the copy keeps the user's spans instead (see
                // `call_keeping_output`), and the key's value its lints.
                let quiet = match self.config.circuit_open {
                    None => {
                        let quiet = output_lints();
                        quote!(#[allow(#quiet)])
                    }
                    Some(_) => TokenStream::new(),
                };
                quote! {
                    if #attempts.acquire() {
                        #run
                    } else {
                        match #last.take() {
                            #private::Some(#outcome) => #outcome,
                            #quiet
                            #private::None => #refused,
                        }
                    }
                }
            }
            None => run,
        }
    }

    /// The outcome of a call the breaker refused: `E::from(CircuitOpen)`,
    /// checked on the breaker's name, or what `circuit_open` builds, checked
    /// on that key.
    fn refused(&self, breaker: &Expr) -> TokenStream {
        let Expansion {
            private, output, ..
        } = self;
        match &self.config.circuit_open {
            Some(circuit_open) => call_keeping_output(
                quote!(#private::circuit_open_with),
                output,
                quote!(_),
                self.rule_value(circuit_open),
                circuit_open.span(),
            ),
            None => {
                // On the breaker's name rather than its `&`, the first token.
                let span = match breaker {
                    Expr::Reference(reference) => reference.expr.span(),
                    other => other.span(),
                };
                // `circuit_open::<Ret, _>()`: as `timeout_key` (see
                // `keyed_limit`), `Ret: Outcome` on the return type, the
                // error type's bound on the breaker.
                call_keeping_output(
                    quote!(#private::circuit_open),
                    output,
                    quote!(_),
                    TokenStream::new(),
                    span,
                )
            }
        }
    }
}

/// The expansion's own locals, invisible to the body.
pub(super) struct Names {
    pub attempts: Ident,
    pub outcome: Ident,
    pub wait: Ident,
    pub limit: Ident,
    pub policy: Ident,
    /// With `breaker`: the last retried outcome, kept through the wait.
    pub last: Ident,
}

impl Names {
    pub fn new() -> Self {
        let span = Span::mixed_site();
        Names {
            attempts: Ident::new("attempts", span),
            outcome: Ident::new("outcome", span),
            wait: Ident::new("wait", span),
            limit: Ident::new("limit", span),
            policy: Ident::new("policy", span),
            last: Ident::new("last", span),
        }
    }
}
