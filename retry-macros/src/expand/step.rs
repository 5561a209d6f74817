//! The step after each attempt: the rules judge its outcome, and the loop
//! returns it or goes on to the wait.
//!
//! ```text
//! // Output:
//! let wait = {
//!     let outcome: <Ret as Outcome>::Split = /* the attempt */;
//!     let rules = /* see `rules` */;
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
//! always inlined, the outcome goes through memory again. A return type
//! that is not a `Result` is one error, on it: see `Split` below.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::Ident;

use super::attempt::Names;
use super::spans::call_keeping_output;
use super::Expansion;

impl Expansion<'_> {
    /// The block that judges the outcome of `attempt` and returns it or
    /// gives the wait, with `hook` (the `on_give_up` hook's binding, and
    /// its call before a return); and, with `breaker`, the statement before
    /// the loop that declares where a retried outcome is kept through the
    /// wait.
    pub(super) fn step(
        &self,
        attempt: TokenStream,
        names: &Names,
        (bind_hook, call_hook): (TokenStream, TokenStream),
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
        // The step's arguments, from which the compiler infers the type the
        // call is bound by, are located there too.
        let step_span = self.step_span();
        let at = Span::mixed_site().located_at(step_span);
        let attempts_at = Ident::new("attempts", at);
        let outcome_at = Ident::new("outcome", at);
        let rules_at = Ident::new("rules", at);
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
            quote_spanned!(step_span=> &mut #attempts_at, &#rules_at, &#outcome_at),
            step_span,
        );
        // Judged by reference and returned from where it stands. In each
        // arm of the match below: only the step and the hook's call, so
        // that the rules and the hook the user wrote are built once.
        let judge = quote! {
            match #next {
                #private::ControlFlow::Break(()) => {
                    #call_hook
                    return #outcome;
                }
                #continued
            }
        };
        let (ok, err) = (
            Ident::new("ok", Span::mixed_site()),
            Ident::new("err", Span::mixed_site()),
        );
        // Each `outcome` is declared as `<Ret as Outcome>::Split`, which is
        // `Ret` for a `Result` (the arms return it as `Ret`). Should `Ret`
        // not be one (`type Answer = Option<u32>`), the projection cannot
        // be resolved: its error, located at the return type as the step's
        // is, is the one reported, and the type it stands for is left to
        // inference. The dead branch in each declaration makes that type
        // the compiler's error type before anything meets it: it breaks out
        // of the block with a value of the unknown type, then calls a method
        // on it, which the compiler must resolve the type for, and, unable
        // to, takes as an error it has already reported. Neither the value
        // nor the patterns nor the `return` of it as `Ret` is then reported
        // as a mismatch. No code is generated for the branch
        // (benches/instructions.sh: the same counts as a plain `let`;
        // declaring the outcome first and assigning it after cost 6 more
        // with a breaker).
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
        let wait_block = quote! {{
            #attempted
            let #rules_at = #rules;
            #bind_hook
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
        }};
        (keep, wait_block)
    }
}
