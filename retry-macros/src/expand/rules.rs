//! The rules call: each rule named by its key, on the function's return
//! type.
//!
//! ```text
//! // Input:
//! #[retry(on = is_transient, retry_after = |e| e.retry_after())]
//! // Output, after each attempt:
//! {
//!     let rules = __private::rules::<<Ret as Outcome>::Ok, <Ret as Outcome>::Error>();
//!     let rules = RuleSet::on(rules, is_transient);
//!     let rules = RuleSet::retry_after(rules, |e| e.retry_after());
//!     rules
//! }
//! ```
//!
//! The rules are built after each attempt, not once before the loop, so that
//! a rule may capture an argument the attempt borrows uniquely
//! (`on = |e| idempotent && is_transient(e)`): the two borrows never overlap.
//! A rule that names a by-value argument (`on = when`, `when: W`) borrows it,
//! rather than moving it out on the first attempt.

use proc_macro2::{Delimiter, Group, Span, TokenStream};
use quote::quote;
use syn::spanned::Spanned;
use syn::{Expr, Ident};

use super::spans::{call_spanned, output_lints, respan};
use super::Expansion;

impl Expansion<'_> {
    /// `rules::<<Ret as Outcome>::Ok, <Ret as Outcome>::Error>()` with a call for each rule the attribute writes. The
    /// call that names the return type is spanned on it, so that a return
    /// type that is not a `Result` is reported there, once; each rule's call
    /// is spanned on the rule, so that a rule of the wrong type is reported
    /// on it.
    pub(super) fn rules(&self) -> TokenStream {
        let Expansion {
            config,
            private,
            output,
            ..
        } = self;
        let rules = Ident::new("rules", Span::mixed_site());
        // `rules::<<Ret as Outcome>::Ok, <Ret as Outcome>::Error>()`, `Ret`
        // as the user wrote it and the projections located at it: every
        // bound on the return type elsewhere in the expansion is located
        // there too (see `spans::ends`), so that one that is not a `Result`
        // is reported once.
        let (first, last) = super::spans::ends(output);
        let (ok, error) = (self.projection("Ok"), self.projection("Error"));
        let head = respan(quote!(#private::rules::<), first);
        let tail = respan(quote!(>), last);
        let mut args = Group::new(Delimiter::Parenthesis, TokenStream::new());
        args.set_span(last);
        let start = quote!(#head #ok, #error #tail #args);
        let written = [
            ("on", &config.on),
            ("on_ok", &config.on_ok),
            ("retry_after", &config.retry_after),
            ("retry_after_ok", &config.retry_after_ok),
            ("on_retry", &config.on_retry),
            ("on_retry_ok", &config.on_retry_ok),
        ];
        // `RuleSet::on(rules, ..)` rather than `rules.on(..)`: a method
        // call's span starts at its receiver, and the whole call must be on
        // the rule for an error about it to be reported there only.
        let set = written.into_iter().filter_map(|(key, rule)| {
            let rule = rule.as_ref()?;
            let method = Ident::new(key, Span::call_site());
            let value = self.rule_value(rule);
            let call = call_spanned(
                quote!(#private::RuleSet::#method),
                quote!(#rules, #value),
                rule.span(),
            );
            Some(quote!(let #rules = #call;))
        });
        // The copy of the return type in `start` is located at it: see
        // `split_on_output`.
        let quiet = output_lints();
        // The block is located at the return type too, as every argument of
        // the call that takes it.
        let mut block = Group::new(
            Delimiter::Brace,
            quote! {
                #[allow(#quiet)]
                let #rules = #start;
                #(#set)*
                #rules
            },
        );
        // With one rule written, at the rule instead: a rule of the wrong
        // type then fails here on the same token as where it is set, and the
        // compiler reports it once.
        block.set_span(self.step_span());
        quote!(#block)
    }

    /// `<Ret as Outcome>::item`, `Ret` as the user wrote it and the rest
    /// located at its first and last tokens (see `spans::ends`): a return
    /// type that is not a `Result` is reported there, as every other bound
    /// on it is, so once.
    pub(super) fn projection(&self, item: &str) -> TokenStream {
        let Expansion {
            private, output, ..
        } = self;
        let (first, last) = super::spans::ends(output);
        let item = Ident::new(item, last);
        let open = respan(quote!(<), first);
        let rest = respan(quote!(as #private::Outcome>::), last);
        quote!(#open #output #rest #item)
    }

    /// Where the rules and the step that uses them are located: at the rule
    /// when one is written, so that a rule of the wrong type, which fails
    /// where it is set, fails on the same token wherever the rules are used
    /// and the compiler reports it once; otherwise at the return type.
    pub(super) fn step_span(&self) -> Span {
        let config = self.config;
        let written: Vec<&Expr> = [
            &config.on,
            &config.on_ok,
            &config.retry_after,
            &config.retry_after_ok,
            &config.on_retry,
            &config.on_retry_ok,
        ]
        .into_iter()
        .flatten()
        .collect();
        match written.as_slice() {
            [rule] => rule.span(),
            _ => self.output.span(),
        }
    }

    /// For each `move` closure among the rules (and the hooks and
    /// conversions the loop builds again at each attempt) that names a
    /// by-value argument: a check, never run, that the argument is `Copy`,
    /// located at its name in the closure. A closure that moves the argument
    /// out on the first attempt is then one error there, saying to remove
    /// `move`, rather than the borrow checker's "moved in previous iteration
    /// of loop" on the whole attribute; and a `Copy` argument, which `move`
    /// copies, is still accepted.
    pub(super) fn moved_by_rules(&self) -> TokenStream {
        let Expansion {
            config, private, ..
        } = self;
        let arguments: Vec<String> = self
            .arguments
            .by_value
            .iter()
            .map(|ident| ident.to_string())
            .collect();
        let checks = [
            &config.on,
            &config.on_ok,
            &config.retry_after,
            &config.retry_after_ok,
            &config.on_retry,
            &config.on_retry_ok,
            &config.on_give_up,
            &config.circuit_open,
        ]
        .into_iter()
        .flatten()
        .filter_map(|rule| match rule {
            Expr::Closure(closure) if closure.capture.is_some() => {
                crate::check::captured_argument(closure, &arguments)
            }
            _ => None,
        })
        .map(|ident| {
            let read = respan(quote!(||), ident.span());
            call_spanned(
                quote!(#private::moved_by_rule),
                quote!(#read #ident),
                ident.span(),
            )
        })
        .collect::<Vec<_>>();
        if checks.is_empty() {
            return TokenStream::new();
        }
        quote! {
            if false {
                #(#checks;)*
            }
        }
    }

    /// A rule as the expansion passes it: a by-value argument borrowed, so
    /// that every attempt can still use it; anything else as written.
    pub(super) fn rule_value(&self, rule: &Expr) -> TokenStream {
        match rule {
            Expr::Path(path)
                if path.qself.is_none()
                    && self
                        .arguments
                        .by_value
                        .iter()
                        .any(|argument| path.path.is_ident(argument)) =>
            {
                let and = respan(quote!(&), Span::mixed_site().located_at(rule.span()));
                quote!(#and #rule)
            }
            _ => quote!(#rule),
        }
    }
}
