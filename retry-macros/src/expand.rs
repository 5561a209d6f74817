//! Writes the retry loop around a checked function.
//!
//! ```text
//! async fn f(x: X, mut batch: B, r: &R) -> Ret {
//!     let mut x = x;                        // by value: rebound to be borrowed uniquely
//!     let attempts = Attempts::start(const { &Policy::new().with_...() }, budget, name);
//!     let rules = classifier::<Ret, _, _, _, _, _>(on, on_ok, retry_after, retry_after_ok, on_retry);
//!     loop {
//!         let outcome: Ret = {
//!             let mut batch = fresh(&batch);    // `mut`: each attempt from the caller's value
//!             let attempt = pin!(async { let _ = &mut x; let _ = &mut batch; /* the original body */ });
//!             attempts.scoped(attempt).await
//!         };
//!         let wait = match attempts.next(&rules, outcome) {
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
//! move. The `let _ = &mut x;` makes the attempt capture each by-value
//! argument by unique borrow: `&mut X: Send` needs only `X: Send`, where the
//! shared borrow the body may need would make the future `Send` only for
//! `X: Sync` (an `mpsc::Receiver`, an axum `Request`). The outcome is
//! consumed by `next` before the wait, so an error that is not `Send` never
//! makes the future `!Send`; with `breaker`, `next_keeping` hands a retried
//! outcome back and the loop keeps it through the wait, to return it should
//! the breaker refuse the retry (there the error must be `Send`). Locals use `Span::mixed_site()`, invisible to
//! the body; the braces around the body are the expansion's, so a one-line
//! body is no `unused_braces` of the user's.
//!
//! Under `#[async_trait]` and `#[tracing::instrument]` (when they run first),
//! the loop goes inside the `async move` block they made, once the arguments
//! are moved into it; see `signatures::Shape`.

use core::time::Duration;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned, ToTokens};
use syn::spanned::Spanned;
use syn::{Expr, FnArg, Ident, Pat, Signature, Stmt, Type};

use crate::check::timeout_span;
use crate::parse::{Config, Function};
use crate::signatures::{replace_at, Shape};

pub fn expand(function: Function, config: Config, shape: Shape) -> TokenStream {
    let Some(output) = shape.output(&function).cloned() else {
        unreachable!("signatures::function rejects functions without a return type")
    };
    let docs = if function
        .attrs
        .iter()
        .any(|attr| attr.path().is_ident("doc"))
    {
        crate::rustdoc::retries(
            &config,
            function.sig.asyncness.is_some() || matches!(shape, Shape::AsyncTrait(_)),
        )
    } else {
        // Without docs of the user's, the section would hide a missing one
        // from `missing_docs`.
        Vec::new()
    };
    let Function {
        attrs,
        vis,
        mut sig,
        inner_attrs,
        body,
        body_span,
    } = function;
    let body = body.unwrap_or_default();
    let krate = config
        .krate
        .as_ref()
        .map_or_else(|| quote!(::retry_runtime), |path| quote!(#path));
    let private = quote!(#krate::__private);
    let expansion = Expansion {
        config: &config,
        private: &private,
        krate: &krate,
        output: &output,
        name: sig.ident.to_string(),
    };
    let statements = match shape {
        Shape::Plain => {
            let is_async = sig.asyncness.is_some();
            // Hedged attempts share the arguments by `&`: none is rebound.
            let arguments = if config.hedge.is_some() {
                Arguments::default()
            } else {
                arguments(&mut sig, &private, is_async)
            };
            expansion.run(&arguments, is_async, body, body_span)
        }
        Shape::AsyncTrait(parts) => {
            let parts = *parts;
            let (moves, arguments) = async_trait_moves(parts.moves, &sig, &private);
            let guard = parts.guard;
            let pin = parts.pin;
            let block_span = parts.block.brace_token.span.join();
            let stmts = parts.block.stmts;
            let run = expansion.run(&arguments, true, quote!(#(#stmts)*), block_span);
            quote! {
                #pin(async move {
                    #(#guard)*
                    #(#moves)*
                    #run
                })
            }
        }
        Shape::Instrumented { body, path, block } => {
            // The arguments are moved into tracing's `async move` block (or
            // `move` closure) once; the loop inside it borrows them.
            let is_async = sig.asyncness.is_some();
            let arguments = if config.hedge.is_some() {
                Arguments::default()
            } else {
                arguments(&mut sig, &private, is_async)
            };
            let run = expansion.run(&arguments, is_async, block.stream(), block.span());
            let mut replaced = Group::new(Delimiter::Brace, run);
            replaced.set_span(block.span());
            replace_at(body, &path, TokenTree::Group(replaced))
        }
    };
    quote! {
        #(#attrs)*
        #(#[doc = #docs])*
        #vis #sig {
            #(#inner_attrs)*
            #statements
        }
    }
}

/// What the loop does with the function's arguments.
#[derive(Default)]
struct Arguments {
    /// Before the loop: by-value arguments rebound `mut`, so that the
    /// attempt can capture them by unique borrow.
    rebind: TokenStream,
    /// At the start of each attempt: a fresh copy of each `mut` argument.
    fresh: TokenStream,
    /// Inside each async attempt: a unique borrow of each by-value argument,
    /// so the attempt's future captures `&mut T` (`Send` when `T: Send`)
    /// rather than `&T` (`Send` only when `T: Sync`).
    capture: TokenStream,
}

impl Arguments {
    fn by_value(&mut self, ident: &Ident, is_async: bool) {
        if is_async {
            self.rebind.extend(quote! {
                #[allow(unused_mut, clippy::redundant_locals)]
                let mut #ident = #ident;
            });
            self.unique(ident);
        }
    }

    fn unique(&mut self, ident: &Ident) {
        self.capture.extend(quote!(let _ = &mut #ident;));
    }

    fn fresh(&mut self, ident: &Ident, copy: TokenStream, is_async: bool) {
        self.fresh.extend(quote! {
            #[allow(unused_mut)]
            let mut #ident = #copy;
        });
        if is_async {
            self.unique(ident);
        }
    }
}

/// Each attempt starts from the arguments as the caller passed them: a
/// `mut` argument is copied for each attempt (its `mut` moves from the
/// signature to the copy); the others are borrowed.
fn arguments(sig: &mut Signature, private: &TokenStream, is_async: bool) -> Arguments {
    let mut arguments = Arguments::default();
    for input in &mut sig.inputs {
        let typed = match input {
            FnArg::Typed(typed) => typed,
            // `self` by value cannot be rebound: it is made `mut` in the
            // signature instead (invisible to callers), so that the attempt
            // can borrow it uniquely.
            FnArg::Receiver(receiver) if receiver.reference.is_none() && is_async => {
                receiver.mutability.get_or_insert_with(Default::default);
                let token = receiver.self_token;
                arguments.capture.extend(quote!(let _ = &mut #token;));
                continue;
            }
            FnArg::Receiver(_) => continue,
        };
        let Pat::Ident(pat) = &mut *typed.pat else {
            // A destructuring pattern (`Json(body): Json<Input>`): each
            // binding by value, whatever its type.
            for (ident, mutable) in bindings(&mut typed.pat) {
                if mutable {
                    let copy = call_spanned(
                        quote!(#private::fresh),
                        quote_spanned!(ident.span()=> &#ident),
                        ident.span(),
                    );
                    arguments.fresh(&ident, copy, is_async);
                } else {
                    arguments.by_value(&ident, is_async);
                }
            }
            continue;
        };
        if pat.by_ref.is_some() || pat.subpat.is_some() {
            continue;
        }
        let ident = pat.ident.clone();
        let mutable = pat.mutability.take().is_some();
        match (&*typed.ty, mutable) {
            (Type::Reference(_), false) => {}
            (Type::Reference(reference), true) => {
                let copy = if reference.mutability.is_some() {
                    quote!(&mut *#ident)
                } else {
                    quote!(#ident)
                };
                arguments.fresh(&ident, copy, false);
            }
            (_, false) => arguments.by_value(&ident, is_async),
            (_, true) => {
                let copy = call_spanned(
                    quote!(#private::fresh),
                    quote_spanned!(ident.span()=> &#ident),
                    ident.span(),
                );
                arguments.fresh(&ident, copy, is_async);
            }
        }
    }
    arguments
}

/// The by-value bindings of a destructuring pattern, with whether each was
/// `mut` (its `mut` taken off: the copy each attempt gets carries it).
/// Bindings by `ref`, and those under `&` or `|`, are left alone.
fn bindings(pat: &mut Pat) -> Vec<(Ident, bool)> {
    let mut found = Vec::new();
    let mut visit = |pat: &mut Pat| found.extend(bindings(pat));
    match pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.subpat.is_none() => {
            let mutable = ident.mutability.take().is_some();
            return vec![(ident.ident.clone(), mutable)];
        }
        Pat::Tuple(tuple) => tuple.elems.iter_mut().for_each(&mut visit),
        Pat::TupleStruct(tuple) => tuple.elems.iter_mut().for_each(&mut visit),
        Pat::Struct(fields) => fields
            .fields
            .iter_mut()
            .for_each(|field| visit(&mut field.pat)),
        Pat::Paren(inner) => visit(&mut inner.pat),
        Pat::Type(inner) => visit(&mut inner.pat),
        Pat::Slice(slice) => slice.elems.iter_mut().for_each(&mut visit),
        _ => {}
    }
    found
}

/// `#[async_trait]`'s `let x = x;` moves, with `mut` arguments copied for
/// each attempt and the others captured by unique borrow, as in
/// [`arguments`].
fn async_trait_moves(
    moves: Vec<Stmt>,
    sig: &Signature,
    private: &TokenStream,
) -> (Vec<TokenStream>, Arguments) {
    let mut arguments = Arguments::default();
    let receiver_by_value = sig
        .inputs
        .iter()
        .any(|input| matches!(input, FnArg::Receiver(receiver) if receiver.reference.is_none()));
    let moves = moves
        .into_iter()
        .map(|stmt| {
            let Stmt::Local(local) = &stmt else {
                return stmt.into_token_stream();
            };
            let Pat::Ident(pat) = &local.pat else {
                return stmt.into_token_stream();
            };
            let ident = pat.ident.clone();
            if ident == "__self" && !receiver_by_value {
                return stmt.into_token_stream();
            }
            let init = local.init.as_ref().map(|init| &init.expr);
            if pat.mutability.is_some() {
                let copy = call_spanned(
                    quote!(#private::fresh),
                    quote_spanned!(ident.span()=> &#ident),
                    ident.span(),
                );
                arguments.fresh(&ident, copy, true);
                quote!(let #ident = #init;)
            } else {
                arguments.unique(&ident);
                quote! {
                    #[allow(unused_mut)]
                    let mut #ident = #init;
                }
            }
        })
        .collect();
    (moves, arguments)
}

/// The parts of the loop that do not depend on the function's shape.
struct Expansion<'a> {
    config: &'a Config,
    private: &'a TokenStream,
    krate: &'a TokenStream,
    output: &'a Type,
    name: String,
}

impl Expansion<'_> {
    /// The loop around `body`, the statements of one attempt.
    fn run(
        &self,
        arguments: &Arguments,
        is_async: bool,
        body: TokenStream,
        body_span: Span,
    ) -> TokenStream {
        let Expansion {
            config,
            private,
            krate,
            output,
            ..
        } = self;
        let span = Span::mixed_site();
        let attempts = Ident::new("attempts", span);
        let rules = Ident::new("rules", span);
        let outcome = Ident::new("outcome", span);
        let wait = Ident::new("wait", span);
        let attempt = Ident::new("attempt", span);
        let fake = Ident::new("fake", span);
        let limit = Ident::new("limit", span);

        let policy_copy = Ident::new("policy", span);
        let (copy_policy, policy) = match &config.policy {
            Some(policy) => {
                // Spanned on the policy, so that an error type that cannot
                // express the timeout a `Policy` may carry is reported there.
                let split = call_spanned(
                    quote!(#private::runtime_policy::<#output, _>),
                    quote!(#policy),
                    policy.span(),
                );
                (
                    quote!(let (#policy_copy, #limit) = #split;),
                    quote!(&#policy_copy),
                )
            }
            None => (TokenStream::new(), policy_const(krate, config)),
        };
        let budget = config.budget.as_ref().map_or_else(
            || quote!(#private::NoBudget),
            |budget| quote!(#private::budget(#budget)),
        );
        let name = &self.name;
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
        // The bounds of the rules and the return type are checked in this
        // one call, so a mismatch is one error. It is spanned on the rule
        // when only one is written, the usual case, so that a rule of the
        // wrong signature is reported on it; otherwise on the return type,
        // which every rule is checked against.
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
        let rules_span = match written.as_slice() {
            [rule] => rule.span(),
            _ => output.span(),
        };
        let rules_init = call_spanned(
            quote!(#private::classifier::<#output, _, _, _, _, _, _>),
            quote!(#(#rule_args),*),
            rules_span,
        );
        // Spanned as `classifier` is: should the rules not fit the return
        // type, the error here is the one already reported there, and is not
        // repeated.
        // With `breaker`, a retried outcome is kept through the wait: should
        // the breaker refuse the retry, the caller gets that error back.
        let kept = Ident::new("kept", span);
        let next_fn = if config.breaker.is_some() {
            quote!(#private::Attempts::next_keeping)
        } else {
            quote!(#private::Attempts::next)
        };
        let next = call_spanned(
            next_fn,
            quote!(&mut #attempts, &#rules, #outcome),
            rules_span,
        );
        // With `breaker`, every attempt asks it first; the conversion of
        // `CircuitOpen` into the error type is checked on the key.
        let with_breaker = config
            .breaker
            .as_ref()
            .map(|breaker| quote!(.with_breaker(#breaker)));

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
        // The statements get a block of their own after the fake return, so
        // that items at the top of the body do not follow a statement. Its
        // braces are the expansion's, not the user's: braces the user did
        // not write are no `unused_braces` of theirs.
        let mut statements = Group::new(Delimiter::Brace, body);
        statements.set_span(Span::mixed_site().located_at(body_span));
        let Arguments {
            rebind,
            fresh,
            capture,
        } = arguments;
        if let (Some(hedge), true) = (config.hedge, is_async) {
            let body = quote_spanned! {body_span=>
                async {
                    #fake_return
                    #statements
                }
            };
            let parts = self.hedged(hedge, &rule_args, rules_span, body);
            return quote!(#copy_policy #parts);
        }

        let run_attempt = if is_async {
            // The attempt: the original body in a block of its own, spanned on
            // the body so that the compiler's errors about it point there.
            let body = quote_spanned! {body_span=>
                async {
                    #capture
                    #fake_return
                    #statements
                }
            };
            // With `timeout` (or a policy that may have one), the attempt is cut
            // off; the conversion of `TimedOut` into the error type is checked on
            // the key that asked for it.
            match (&config.policy, timeout_span(config)) {
                (Some(_), _) => quote! {
                    {
                        #fresh
                        let #attempt = #limit.attempt(#attempts.attempt_timeout(), #body);
                        let #attempt = ::core::pin::pin!(#attempt);
                        #attempts.scoped(#attempt).await
                    }
                },
                (None, Some(span)) => {
                    // The limit is made at the key, so that an error type
                    // without `From<TimedOut>` is reported on the key.
                    let timeout_key = call_spanned(
                        quote!(#private::timeout_key::<#output>),
                        TokenStream::new(),
                        span,
                    );
                    quote! {
                        {
                            #fresh
                            let #attempt = #timeout_key.attempt(#attempts.attempt_timeout(), #body);
                            let #attempt = ::core::pin::pin!(#attempt);
                            #attempts.scoped(#attempt).await
                        }
                    }
                }
                (None, None) => quote! {
                    {
                        #fresh
                        let #attempt = ::core::pin::pin!(#body);
                        #attempts.scoped(#attempt).await
                    }
                },
            }
        } else {
            let body = quote_spanned! {body_span=>
                || -> #output #statements
            };
            // A blocking attempt cannot be cut off: one that returns after its
            // limit counts as timed out.
            let call = match (&config.policy, timeout_span(config)) {
                (Some(_), _) => quote!(#attempts.call_limited(#limit, #body)),
                (None, Some(span)) => {
                    let timeout_key = call_spanned(
                        quote!(#private::timeout_key::<#output>),
                        TokenStream::new(),
                        span,
                    );
                    quote!(#attempts.call_limited(#timeout_key, #body))
                }
                (None, None) => quote!(#attempts.call(#body)),
            };
            quote!({ #fresh #call })
        };
        let run_attempt = match &config.breaker {
            Some(breaker) => {
                // On the breaker's name rather than its `&`, the first token.
                let span = match breaker {
                    Expr::Reference(reference) => reference.expr.span(),
                    other => other.span(),
                };
                let refused =
                    call_spanned(quote!(#private::circuit_open), TokenStream::new(), span);
                quote! {
                    if #attempts.acquire() {
                        #run_attempt
                    } else {
                        match #kept.take() {
                            #private::Some(#outcome) => #outcome,
                            #private::None => #refused,
                        }
                    }
                }
            }
            None => run_attempt,
        };
        let sleep = if is_async {
            quote!(#private::sleep(#wait).await;)
        } else {
            quote!(#private::sleep_blocking(#wait);)
        };

        let (keep, continued) = if config.breaker.is_some() {
            (
                quote!(let mut #kept: ::core::option::Option<#output> = #private::None;),
                quote!(#private::ControlFlow::Continue((#wait, #outcome)) => {
                    #kept = #private::Some(#outcome);
                    #wait
                }),
            )
        } else {
            (
                TokenStream::new(),
                quote!(#private::ControlFlow::Continue(#wait) => #wait,),
            )
        };
        quote! {
            #rebind
            #copy_policy
            let mut #attempts = #private::Attempts::#start(#policy, #budget, #name)#with_breaker;
            let #rules = #rules_init;
            #keep
            loop {
                let #outcome: #output = #run_attempt;
                let #wait = match #next {
                    #private::ControlFlow::Break(#outcome) => return #outcome,
                    #continued
                };
                #sleep
            }
        }
    }
}

impl Expansion<'_> {
    /// A hedged call (`hedge = ...`): the attempts run side by side and
    /// share the arguments; see `crate::hedge`.
    fn hedged(
        &self,
        hedge: crate::hedge::Hedge,
        rule_args: &[TokenStream],
        rules_span: Span,
        attempt: TokenStream,
    ) -> TokenStream {
        let Expansion {
            config,
            private,
            krate,
            output,
            ..
        } = self;
        let span = Span::mixed_site();
        let limit = Ident::new("limit", span);
        let policy_copy = Ident::new("policy", span);
        let (policy, max, limit) = match (&config.policy, timeout_span(config)) {
            (Some(_), _) => (quote!(&#policy_copy), None, quote!(#limit)),
            (None, Some(span)) => (
                policy_const(krate, config),
                Some(config.max),
                call_spanned(
                    quote!(#private::hedge::timed::<#output>),
                    TokenStream::new(),
                    span,
                ),
            ),
            (None, None) => (
                policy_const(krate, config),
                Some(config.max),
                quote!(#private::Limit::untimed()),
            ),
        };
        let breaker = match &config.breaker {
            Some(breaker) => {
                let span = match breaker {
                    Expr::Reference(reference) => reference.expr.span(),
                    other => other.span(),
                };
                call_spanned(
                    quote!(#private::hedge::breaker::<#output>),
                    quote!(#breaker),
                    span,
                )
            }
            None => quote!(#private::hedge::no_breaker::<#output>()),
        };
        let name = &self.name;
        crate::hedge::expand(crate::hedge::Parts {
            hedge,
            private,
            krate,
            policy,
            max,
            budget: config.budget.as_ref().map_or_else(
                || quote!(#private::None),
                |budget| quote!(#private::budget(#budget)),
            ),
            breaker,
            limit,
            name: quote!(::core::concat!(::core::module_path!(), "::", #name)),
            rules: call_spanned(
                quote!(#private::hedge::rules::<#output, _, _, _, _, _, _>),
                quote!(#(#rule_args),*),
                rules_span,
            ),
            attempt,
        })
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
