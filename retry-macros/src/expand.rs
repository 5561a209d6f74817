//! Writes the retry loop around a checked function.
//!
//! ```text
//! async fn f(args) -> Ret {
//!     let attempts = Attempts::start(const { &Policy::new().with_...() });
//!     let on = classifier::<Ret, _>(on);
//!     loop {
//!         let outcome: Ret = async { /* the original body */ }.await;
//!         let wait = match attempts.next(outcome, &on) {
//!             Break(outcome) => return outcome,
//!             Continue(wait) => wait,
//!         };
//!         sleep(wait).await;
//!     }
//! }
//! ```
//!
//! The body goes into a non-`move` async block, so each attempt borrows the
//! arguments afresh and a body that moves one gets the compiler's own "moved
//! in previous iteration of loop" error at the move. The outcome is consumed
//! by `next` before the wait, so an error that is not `Send` never makes the
//! future `!Send`. Locals use `Span::mixed_site()`, invisible to the body.

use core::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};

use syn::spanned::Spanned;
use syn::{ReturnType, Type};

use crate::attr::Function;
use crate::validate::Config;

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
        unreachable!("validate::function rejects functions without a return type")
    };
    let output: &Type = output;
    let krate = config
        .krate
        .as_ref()
        .map_or_else(|| quote!(::retry_runtime), |path| quote!(#path));
    let private = quote!(#krate::__private);
    let policy = policy(&krate, &config);

    let span = Span::mixed_site();
    let attempts = syn::Ident::new("attempts", span);
    let on = syn::Ident::new("on", span);
    let outcome = syn::Ident::new("outcome", span);
    let wait = syn::Ident::new("wait", span);
    let fake = syn::Ident::new("fake", span);

    let rule = |rule: &Option<syn::Expr>, default: TokenStream| {
        rule.as_ref().map_or(default, |rule| quote!(#rule))
    };
    let on_rule = rule(&config.on, quote!(#private::every_error));
    let on_ok_rule = rule(&config.on_ok, quote!(#private::no_value));
    let retry_after_rule = rule(&config.retry_after, quote!(#private::no_hint));
    let retry_after_ok_rule = rule(&config.retry_after_ok, quote!(#private::no_hint));
    let classifier = quote!(#on_rule, #on_ok_rule, #retry_after_rule, #retry_after_ok_rule);
    let budget = config.budget.as_ref().map_or_else(
        || quote!(#private::None),
        |budget| quote!(#private::Some(#budget)),
    );
    // Spanned on the return type, so a type that is not a `Result` is
    // reported there.
    let classify = respan(
        quote!(#private::classifier::<#output, _, _, _, _>),
        output.span(),
    );
    let mut args = proc_macro2::Group::new(proc_macro2::Delimiter::Parenthesis, classifier);
    args.set_span(output.span());
    let on_init = quote!(#classify #args);

    // The attempt: the original body in a block of its own, spanned on the
    // body so that the compiler's errors about it point there.
    let body = quote_spanned! {body_span=>
        async {
            // Gives the block the function's return type, so `?` and
            // `.into()` in the body infer as they did before.
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
            #(#stmts)*
        }
    };

    // With `timeout`, the attempt is cut off; the conversion of `TimedOut`
    // into the error type is checked on the `timeout` key.
    let attempt = match config.timeout {
        Some((_, span)) => call_spanned(
            quote!(#private::with_timeout),
            quote!(#attempts.attempt_timeout(), #body),
            span,
        ),
        None => body,
    };

    quote! {
        #(#attrs)*
        #vis #sig {
            #(#inner_attrs)*
            let mut #attempts = #private::Attempts::start(#policy, #budget);
            let #on = #on_init;
            loop {
                let #outcome: #output = #attempt.await;
                let #wait = match #on.next(&mut #attempts, #outcome) {
                    #private::ControlFlow::Break(#outcome) => return #outcome,
                    #private::ControlFlow::Continue(#wait) => #wait,
                };
                #private::sleep(#wait).await;
            }
        }
    }
}

fn policy(krate: &TokenStream, config: &Config) -> TokenStream {
    let max = config.max;
    let base = duration(config.base);
    let cap = duration(config.cap);
    let multiplier = config.multiplier;
    let jitter = syn::Ident::new(config.jitter, Span::call_site());
    let deadline = config.deadline.map(|d| {
        let d = duration(d);
        quote!(.with_deadline(#d))
    });
    let timeout = config.timeout.map(|(d, _)| {
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

/// A call of `function` with `args`, the call itself spanned on `span`, so
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
