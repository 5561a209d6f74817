//! The step after each attempt: the rules judge its outcome, and the loop
//! returns it or goes on to the wait.
//!
//! ```text
//! // Output, for a return type named `Result`:
//! let wait = {
//!     let outcome: <Ret as Outcome>::Split = /* the attempt */;
//!     match outcome {
//!         Ok(ok) => {
//!             let outcome: <Ret as Outcome>::Split = Ok(ok);
//!             match Attempts::step::<Ret, _, _, _>(&mut attempts, &rules, &outcome) {
//!                 Break(()) => return outcome,
//!                 Continue(wait) => wait,
//!             }
//!         }
//!         Err(err) => { /* the same, with `Err(err)` */ }
//!     }
//! };
//! ```
//!
//! An `Ok` and an `Err` are judged apart, each where it is known to be one,
//! so that a success is returned as it came rather than stored and read
//! back (benches/instructions.sh: 7 instructions a successful call). Split
//! by the patterns themselves: through functions of the runtime, even ones
//! always inlined, the outcome goes through memory again. A return type of
//! any other name may be an alias of something that is not a `Result`,
//! which the step reports, once; its outcome is judged as it is.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{Ident, Type};

use super::attempt::Names;
use super::spans::call_keeping_output;
use super::Expansion;

impl Expansion<'_> {
    /// The block that judges the outcome of `attempt` and returns it or
    /// gives the wait, with `gave_up` run before a return; and, with
    /// `breaker`, the statement before the loop that declares where a
    /// retried outcome is kept through the wait.
    pub(super) fn step(
        &self,
        attempt: TokenStream,
        names: &Names,
        gave_up: &TokenStream,
    ) -> (TokenStream, TokenStream) {
        let Expansion {
            config,
            private,
            output,
            ..
        } = self;
        let Names {
            outcome,
            wait,
            last,
            ..
        } = names;
        // `rules::<<Ret as Outcome>::Ok, ..>()` is located at the return
        // type, as every other bound on it is: should it not be a `Result`,
        // that is reported there, once.
        let rules = self.rules();
        // Its arguments, from which the compiler infers the type the call is
        // bound by, are located there too.
        let step_span = self.step_span();
        let at = Span::mixed_site().located_at(step_span);
        let attempts_at = Ident::new("attempts", at);
        let outcome_at = Ident::new("outcome", at);
        // With `breaker`, a retried outcome is kept through the wait, to be
        // returned should the breaker refuse the retry.
        let (keep, continued) = if config.breaker.is_some() {
            (
                quote!(let mut #last: ::core::option::Option<#output> = #private::None;),
                quote!(#private::ControlFlow::Continue(#wait) => {
                    #last = #private::Some(#outcome);
                    #wait
                }),
            )
        } else {
            (
                TokenStream::new(),
                quote!(#private::ControlFlow::Continue(#wait) => #wait,),
            )
        };
        // `step::<Ret, _, _, _>`, `Ret` as the user wrote it: a return type
        // that is not a `Result` is reported there, where it already is.
        let next = call_keeping_output(
            quote!(#private::Attempts::step),
            output,
            quote!(_, _, _),
            quote_spanned!(step_span=> &mut #attempts_at, &#rules, &#outcome_at),
            step_span,
        );
        // Judged by reference and returned from where it stands.
        let judge = quote! {
            match #next {
                #private::ControlFlow::Break(()) => {
                    #gave_up
                    return #outcome;
                }
                #continued
            }
        };
        // Split by its name: see the module's docs.
        let wait_block = if names_result(output) {
            let (ok, err) = (
                Ident::new("ok", Span::mixed_site()),
                Ident::new("err", Span::mixed_site()),
            );
            // Each `outcome` is declared as `<Ret as Outcome>::Split`,
            // which is `Ret` when it is a `Result`. Should it not be one
            // (`type Result<T> = Option<T>`), the projection is an unknown
            // type and its error is the one the step reports, located at
            // the return type, so reported once; the dead branch, which
            // breaks with a value of that unknown type and then calls a
            // method on it, makes the compiler take it as an error type
            // before the value meets it, so that neither the value nor the
            // patterns are reported as a mismatch. No code is generated for
            // it (benches/instructions.sh: the same counts as a plain `let`;
            // a `let` then an assignment costs 6 more with a breaker).
            let split = self.projection("Split");
            let probe = syn::Lifetime::new("'probe", Span::mixed_site());
            let declare = |value: TokenStream| {
                quote! {
                    // The projection, at the user's return type, must not
                    // make it "very complex" where they did not write it.
                    #[allow(clippy::type_complexity)]
                    let #outcome: #split = #probe: {
                        #[allow(unreachable_code)]
                        if false {
                            let #outcome = loop {};
                            break #probe #outcome;
                            let _ = #outcome.is_ok();
                        }
                        #value
                    };
                }
            };
            let attempted = declare(attempt);
            let succeeded = declare(quote!(::core::result::Result::Ok(#ok)));
            let failed = declare(quote!(::core::result::Result::Err(#err)));
            quote! {{
                #attempted
                match #outcome {
                    ::core::result::Result::Ok(#ok) => {
                        #succeeded
                        #judge
                    }
                    ::core::result::Result::Err(#err) => {
                        #failed
                        #judge
                    }
                }
            }}
        } else {
            quote! {{
                let #outcome: #output = #attempt;
                #judge
            }}
        };
        (keep, wait_block)
    }
}

/// Whether the return type is a path whose last segment is `Result`.
fn names_result(output: &Type) -> bool {
    match output {
        Type::Path(path) if path.qself.is_none() => path
            .path
            .segments
            .last()
            .is_some_and(|segment| segment.ident == "Result"),
        Type::Group(group) => names_result(&group.elem),
        Type::Paren(paren) => names_result(&paren.elem),
        _ => false,
    }
}
