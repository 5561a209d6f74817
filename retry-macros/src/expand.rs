//! Writes the retry loop around a checked function.
//!
//! ```text
//! async fn f(args) -> Ret {
//!     let attempts = Attempts::start(const { &Policy::new().with_...() }, budget, name);
//!     let rules = classifier::<Ret, _, _, _, _, _>(on, on_ok, retry_after, retry_after_ok, on_retry);
//!     loop {
//!         let outcome: Ret = {
//!             let attempt = pin!(async { /* the original body */ });
//!             attempts.scoped(attempt).await
//!         };
//!         let wait = match rules.next(&mut attempts, outcome) {
//!             Break(outcome) => return outcome,
//!             Continue(wait) => wait,
//!         };
//!         sleep(wait).await;
//!     }
//! }
//! ```
//!
//! The body goes into a non-`move` async block (a closure for a plain `fn`),
//! so each attempt borrows the arguments afresh and a body that moves one
//! gets the compiler's own "moved in previous iteration of loop" error at the
//! move. The outcome is consumed by `next` before the wait, so an error that
//! is not `Send` never makes the future `!Send`. Locals use
//! `Span::mixed_site()`, invisible to the body.

use core::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, ReturnType, Type};

use crate::check::timeout_span;
use crate::parse::{Config, Function};

pub fn expand(function: Function, config: Config) -> TokenStream {
    let Function {
        attrs,
        vis,
        sig,
        inner_attrs,
        stmts,
        body_span,
    } = function;
    let stmts = stmts.unwrap_or_default();
    let ReturnType::Type(_, output) = &sig.output else {
        unreachable!("signatures::function rejects functions without a return type")
    };
    let output: &Type = output;
    let is_async = sig.asyncness.is_some();
    let krate = config
        .krate
        .as_ref()
        .map_or_else(|| quote!(::retry_runtime), |path| quote!(#path));
    let private = quote!(#krate::__private);

    let span = Span::mixed_site();
    let attempts = Ident::new("attempts", span);
    let rules = Ident::new("rules", span);
    let outcome = Ident::new("outcome", span);
    let wait = Ident::new("wait", span);
    let attempt = Ident::new("attempt", span);
    let fake = Ident::new("fake", span);

    let policy_copy = Ident::new("policy", span);
    let (copy_policy, policy) = match &config.policy {
        Some(policy) => (
            quote!(let #policy_copy = #private::policy(#policy);),
            quote!(&#policy_copy),
        ),
        None => (TokenStream::new(), policy_const(&krate, &config)),
    };
    let budget = config.budget.as_ref().map_or_else(
        || quote!(#private::None),
        |budget| quote!(#private::budget(#budget)),
    );
    let name = sig.ident.to_string();
    let name = quote!(::core::concat!(::core::module_path!(), "::", #name));
    let start = if is_async {
        quote!(start)
    } else {
        quote!(start_blocking)
    };

    let rule = |rule: &Option<Expr>, default: TokenStream| {
        rule.as_ref().map_or(default, |rule| quote!(#rule))
    };
    let rule_args = [
        rule(&config.on, quote!(#private::every_error)),
        rule(&config.on_ok, quote!(#private::no_value)),
        rule(&config.retry_after, quote!(#private::no_hint)),
        rule(&config.retry_after_ok, quote!(#private::no_hint)),
        rule(&config.on_retry, quote!(#private::no_hook)),
        rule(&config.on_retry_ok, quote!(#private::no_hook)),
    ];
    // Spanned on the return type, so a type that is not a `Result` is
    // reported there.
    let rules_init = call_spanned(
        quote!(#private::classifier::<#output, _, _, _, _, _, _>),
        quote!(#(#rule_args),*),
        output.span(),
    );

    // Gives the block the function's return type, so `?` and `.into()` in
    // the body infer as they did before.
    let fake_return = quote! {
        #[allow(
            unreachable_code,
            clippy::diverging_sub_expression,
            clippy::empty_loop,
            clippy::let_unit_value,
            clippy::unreachable,
            clippy::needless_return
        )]
        if false {
            let #fake: #output = loop {};
            return #fake;
        }
    };

    let run_attempt = if is_async {
        // The attempt: the original body in a block of its own, spanned on
        // the body so that the compiler's errors about it point there.
        // The statements get a block of their own after the fake return, so
        // that items at the top of the body do not follow a statement.
        let body = quote_spanned! {body_span=>
            async {
                #fake_return
                {
                    #(#stmts)*
                }
            }
        };
        // With `timeout` (or a policy that may have one), the attempt is cut
        // off; the conversion of `TimedOut` into the error type is checked on
        // the key that asked for it.
        match timeout_span(&config) {
            Some(span) => {
                let or_timed_out = call_spanned(
                    quote!(#private::or_timed_out),
                    quote!(#attempts.scoped(#attempt).await),
                    span,
                );
                quote! {
                    {
                        let #attempt = #private::limited(#attempts.attempt_timeout(), #body);
                        let #attempt = ::core::pin::pin!(#attempt);
                        #or_timed_out
                    }
                }
            }
            None => quote! {
                {
                    let #attempt = ::core::pin::pin!(#body);
                    #attempts.scoped(#attempt).await
                }
            },
        }
    } else {
        let body = quote_spanned! {body_span=>
            || -> #output {
                #(#stmts)*
            }
        };
        // A blocking attempt cannot be cut off: one that returns after its
        // limit counts as timed out.
        match timeout_span(&config) {
            Some(span) => call_spanned(
                quote!(#private::or_timed_out),
                quote!(#attempts.call_limited(#body)),
                span,
            ),
            None => quote!(#attempts.call(#body)),
        }
    };
    let sleep = if is_async {
        quote!(#private::sleep(#wait).await;)
    } else {
        quote!(#private::sleep_blocking(#wait);)
    };

    let docs = crate::rustdoc::retries(&config, is_async);

    quote! {
        #(#attrs)*
        #(#[doc = #docs])*
        #vis #sig {
            #(#inner_attrs)*
            #copy_policy
            let mut #attempts = #private::Attempts::#start(#policy, #budget, #name);
            let #rules = #rules_init;
            loop {
                let #outcome: #output = #run_attempt;
                let #wait = match #rules.next(&mut #attempts, #outcome) {
                    #private::ControlFlow::Break(#outcome) => return #outcome,
                    #private::ControlFlow::Continue(#wait) => #wait,
                };
                #sleep
            }
        }
    }
}

fn policy_const(krate: &TokenStream, config: &Config) -> TokenStream {
    let max = config.max;
    let base = duration(config.base);
    let cap = duration(config.cap);
    let multiplier = config.multiplier;
    let jitter = Ident::new(config.jitter.variant(), Span::call_site());
    let nested = Ident::new(config.nested.variant(), Span::call_site());
    let deadline = config.deadline.map(|d| {
        let d = duration(d);
        quote!(.with_deadline(#d))
    });
    let timeout = config.timeout.map(|d| {
        let d = duration(d);
        quote!(.with_timeout(#d))
    });
    quote! {
        const {
            &#krate::Policy::new()
                .with_max_attempts(#max)
                .with_base(#base)
                .with_cap(#cap)
                .with_multiplier(#multiplier)
                .with_jitter(#krate::Jitter::#jitter)
                .with_nested(#krate::Nested::#nested)
                #deadline
                #timeout
        }
    }
}

fn duration(d: Duration) -> TokenStream {
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    quote!(::core::time::Duration::new(#secs, #nanos))
}

/// A call of `function` with `args`, the call itself located at `span`, so
/// that the compiler reports an unmet bound of `function` there. The
/// arguments keep their own spans.
fn call_spanned(function: TokenStream, args: TokenStream, span: Span) -> TokenStream {
    let function = respan(function, span);
    let mut args = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, args);
    args.set_span(span);
    quote!(#function #args)
}

/// `tokens` with every span set to `span`, so the compiler reports what goes
/// wrong in them there.
fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let proc_macro2::TokenTree::Group(group) = &token {
                let mut inner =
                    proc_macro2::Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = inner.into();
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}
