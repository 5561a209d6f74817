//! The step after each attempt: the rules judge its outcome, and the loop
//! returns it or goes on to the wait.
//!
//! ```text
//! // Output:
//! let wait = {
//!     let _: PhantomData<<Ret as Outcome>::Ok>;  // a `Ret` that is no `Result`: its error, from here
//!     let outcome: Ret = /* the attempt */;
//!     let rules = /* see `rules` */;
//!     match Attempts::step::<Ret, _, _, _>(&mut attempts, &rules, &outcome) {
//!         Break(()) => return outcome,
//!         Continue(wait) => wait,
//!     }
//! };
//! ```
//!
//! One match, on what the step says: the outcome is never matched as an
//! `Ok` or an `Err` here, so a return type that is not a `Result` (`type
//! Answer = Option<u32>`) has no pattern to mismatch, and its one error is
//! the unmet `Ret: Outcome`, located at the return type by the step and the
//! rules alike. (It matched an `Ok` and an `Err` apart, so that a success
//! was returned as it came rather than read back: 7 instructions a
//! successful call, benches/instructions.sh, which the issue 30 bound of +40
//! over a hand loop allows; the split needed the step twice and a dead
//! branch in each of three declarations.)

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
        // `<Ret as Outcome>::Ok` named first, located at the return type as
        // the rules' projections are: should `Ret` not be a `Result`, its
        // one error is reported from here, before any call of the runtime
        // that bounds `Ret` (a time limit's, a breaker's) is met, and so
        // without a note about that call's bound. No code.
        let ok = self.projection("Ok");
        let quiet = super::spans::output_lints();
        // Judged by reference and returned from where it stands.
        let wait_block = quote! {{
            #[allow(#quiet)]
            let _: ::core::marker::PhantomData<#ok>;
            let #outcome: #output = #attempt;
            let #rules_at = #rules;
            #bind_hook
            match #next {
                #private::ControlFlow::Break(()) => {
                    #call_hook
                    return #outcome;
                }
                #continued
            }
        }};
        (keep, wait_block)
    }
}
