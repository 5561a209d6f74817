//! Writes the retry loop around a checked function.
//!
//! ```text
//! // Input:
//! #[retry(max = 4, on = is_transient)]
//! async fn f(x: X, r: &R) -> Ret { /* body */ }
//! // Output:
//! async fn f(x: X, r: &R) -> Ret {
//!     let mut x = x;                            // see `arguments`
//!     let mut attempts = Attempts::start(const { &Policy::new().with_max_attempts(4) }, NoBudget, name);
//!     loop {
//!         let wait = {
//!             let outcome: Ret = { /* the attempt: see `attempt` */ };
//!             // one match, on what the step says: see `step`
//!             match Attempts::step::<Ret, _, _, _>(&mut attempts, &rules::<..>().on(is_transient), &outcome) {
//!                 Break(()) => return outcome,    // see `rules`
//!                 Continue(wait) => wait,
//!             }
//!         };
//!         attempts.waiting();                // counted in flight in an enclosing attempt
//!         sleep(wait).await;
//!     }
//! }
//! ```
//!
//! The body goes into a non-`move` async block (a closure for a plain `fn`),
//! so each attempt borrows the arguments afresh and a body that moves one
//! gets the compiler's own "moved in previous iteration of loop" error at the
//! move. The outcome is judged by reference and dropped with its block before
//! the wait, so an error that is not `Send` never makes the future `!Send`;
//! with `breaker`, the loop keeps a retried outcome through the wait, to return it should the breaker refuse the retry (there the
//! error must be `Send` for the future to be). Locals use
//! `Span::mixed_site()`, invisible to the body; the braces around the body
//! are the expansion's, so a one-line body is no `unused_braces` of the
//! user's.
//!
//! Under `#[async_trait]` and `#[tracing::instrument]` (when they run first),
//! the loop goes inside the `async move` block they made, once the arguments
//! are moved into it; see `signatures::Shape`.

pub(crate) mod arguments;
mod attempt;
mod hedged;
mod rules;
pub(crate) mod spans;
mod step;

use core::time::Duration;

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, Ident, Type};

use crate::parse::{Config, Function};
use crate::signatures::{replace_at, Shape};
use arguments::{arguments, async_trait_moves, Arguments};
use attempt::Names;
use spans::{call_keeping_output, call_spanned, output_lints, respan};

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
            &arguments::kept(&function.sig),
        )
    } else {
        // Without docs of the user's, the section would hide a missing one
        // from `missing_docs`.
        Vec::new()
    };
    let docs = docs.into_iter().map(|(line, cfg)| match cfg {
        None => quote!(#[doc = #line]),
        Some(cfg) => quote!(#[cfg_attr(#cfg, doc = #line)]),
    });
    let Function {
        attrs,
        vis,
        mut sig,
        inner_attrs,
        body,
        body_span,
    } = function;
    let body = body.unwrap_or_default();
    // A path written in `crate = "..."` is imported once, at the top of the
    // body, and named through the import: should it not resolve, that is one
    // error, on the key, rather than one for each path of the expansion.
    let (import, krate) = match &config.krate {
        Some(path) => {
            let at = config
                .values
                .get("crate")
                .copied()
                .unwrap_or_else(Span::call_site);
            let alias = Ident::new("__retry_runtime", at);
            (
                quote_spanned! {at=>
                    #[allow(unused_imports, clippy::single_component_path_imports)]
                    use #path as #alias;
                },
                quote!(#alias),
            )
        }
        None => (TokenStream::new(), quote!(::retry_runtime)),
    };
    let private = quote!(#krate::__private);
    let name = sig.ident.to_string();
    let expansion = |arguments, is_async| Expansion {
        config: &config,
        private: &private,
        krate: &krate,
        output: &output,
        name: name.clone(),
        arguments,
        is_async,
    };
    let statements = match shape {
        Shape::Plain => {
            let is_async = sig.asyncness.is_some();
            let arguments = shared_or_rebound(&mut sig, &config, &private, is_async);
            expansion(&arguments, is_async).run(body, body_span)
        }
        Shape::AsyncTrait(parts) => {
            let parts = *parts;
            let (moves, arguments) = async_trait_moves(parts.moves, &sig, &private);
            let guard = parts.guard;
            let pin = parts.pin;
            let block_span = parts.block.brace_token.span.join();
            let stmts = parts.block.stmts;
            let run = expansion(&arguments, true).run(quote!(#(#stmts)*), block_span);
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
            let arguments = shared_or_rebound(&mut sig, &config, &private, is_async);
            let run = expansion(&arguments, is_async).run(block.stream(), block.span());
            let mut replaced = Group::new(Delimiter::Brace, run);
            replaced.set_span(block.span());
            replace_at(body, &path, TokenTree::Group(replaced))
        }
    };
    quote! {
        #(#attrs)*
        #(#docs)*
        #vis #sig {
            #(#inner_attrs)*
            #import
            #statements
        }
    }
}

/// What the loop does with the arguments; hedged attempts run side by side
/// and share them by `&`, so none is rebound, but a rule that names one
/// still borrows it (see `Expansion::rule_value`).
fn shared_or_rebound(
    sig: &mut syn::Signature,
    config: &Config,
    private: &TokenStream,
    is_async: bool,
) -> Arguments {
    if config.hedge.is_some() {
        Arguments {
            by_value: arguments(&mut sig.clone(), private, is_async).by_value,
            ..Arguments::default()
        }
    } else {
        arguments(sig, private, is_async)
    }
}

/// What every part of the loop needs: the keys, where the runtime is, the
/// return type, the arguments, and whether waits are awaited.
struct Expansion<'a> {
    config: &'a Config,
    private: &'a TokenStream,
    krate: &'a TokenStream,
    output: &'a Type,
    name: String,
    arguments: &'a Arguments,
    is_async: bool,
}

impl Expansion<'_> {
    /// The loop around `body`, the statements of one attempt.
    fn run(&self, body: TokenStream, body_span: Span) -> TokenStream {
        let Expansion {
            config,
            private,
            output,
            ..
        } = self;
        let names = Names::new();
        let Names {
            attempts,
            outcome,
            wait,
            limit,
            policy: policy_copy,
            ..
        } = &names;

        let (copy_policy, policy) = match (&config.policy, &config.timed_out) {
            // Spanned on the policy, so that an error type that cannot
            // express the timeout a `Policy` may carry is reported there.
            (Some(policy), None) => {
                // `runtime_policy::<Ret, _, _>`, `Ret` as the user wrote it
                // (see `call_keeping_output`): a return type that is not a
                // `Result` is reported there, once, and an error type that
                // cannot express a timeout on the policy.
                let split = call_keeping_output(
                    quote!(#private::runtime_policy),
                    output,
                    quote!(_, _),
                    quote!(#policy),
                    policy.span(),
                );
                (
                    quote! {
                        let (#policy_copy, #limit) = #split;
                    },
                    quote!(&#policy_copy),
                )
            }
            // With `timed_out`, any error type: the key says how a cut-off
            // attempt fails.
            (Some(policy), Some(_)) => {
                let copy = call_spanned(
                    quote!(#private::keyed_policy),
                    quote!(#policy),
                    policy.span(),
                );
                (quote!(let #policy_copy = #copy;), quote!(&#policy_copy))
            }
            (None, _) => (TokenStream::new(), self.policy_const()),
        };
        let budget = config.budget.as_ref().map_or_else(
            || quote!(#private::NoBudget),
            |budget| quote!(#private::budget(#budget)),
        );
        let name = &self.name;
        let name = quote!(::core::concat!(::core::module_path!(), "::", #name));
        let start = if self.is_async {
            quote!(start)
        } else {
            quote!(start_blocking)
        };
        // With `breaker`, every attempt asks it first.
        let with_breaker = config
            .breaker
            .as_ref()
            .map(|breaker| quote!(.with_breaker(#breaker)));
        let statements = Self::statements(output, body, body_span);
        if let (Some(hedge), true) = (config.hedge, self.is_async) {
            let (fake_return, statements) = statements;
            let body = quote_spanned! {body_span=>
                async {
                    #fake_return
                    #statements
                }
            };
            let parts = self.hedged(hedge, body);
            if config.on_give_up.is_some() {
                // The hedged call returns from its own block, so that the
                // hook sees the outcome.
                let (started, (bind_hook, call_hook)) = self.on_give_up(outcome);
                return quote! {
                    #copy_policy
                    #started
                    let #outcome: #output = async { #parts }.await;
                    #bind_hook
                    #call_hook
                    return #outcome;
                };
            }
            let moved = self.moved_by_rules();
            return quote!(#moved #copy_policy #parts);
        }
        let attempt = self.attempt(statements, body_span, &names);
        let sleep = if self.is_async {
            quote! {
                #attempts.waiting();
                #private::sleep(#wait).await;
            }
        } else {
            quote!(#private::sleep_blocking(#wait);)
        };
        let (started, hook) = self.on_give_up(outcome);
        let (keep, wait_block) = self.step(attempt, &names, hook);
        let Arguments {
            before, restore, ..
        } = self.arguments;

        let moved = self.moved_by_rules();
        quote! {
            #before
            #moved
            #copy_policy
            #started
            let mut #attempts = #private::Attempts::#start(#policy, #budget, #name)#with_breaker;
            #keep
            loop {
                let #wait = #wait_block;
                #sleep
                #restore
            }
        }
    }

    /// With `on_give_up`: the start of the call, read before the first
    /// attempt, and the hook, bound to a local and then called on the
    /// outcome the loop returns (the runtime calls it only if the call gave
    /// up). The hook is bound on the return type, as the rules are, so that
    /// a closure's arguments are inferred, and spanned on the key's value,
    /// so that a hook of the wrong type is reported on it.
    fn on_give_up(&self, outcome: &Ident) -> (TokenStream, (TokenStream, TokenStream)) {
        let Expansion {
            config,
            private,
            output,
            ..
        } = self;
        let Some(hook) = &config.on_give_up else {
            return (TokenStream::new(), (TokenStream::new(), TokenStream::new()));
        };
        let started = Ident::new("started", Span::mixed_site());
        let clock = if self.is_async {
            quote!(tokio)
        } else {
            quote!(blocking)
        };
        let value = self.rule_value(hook);
        let at = hook.span();
        // The copy of the return type keeps the user's spans: see
        // `call_keeping_output`.
        let (before, bound) = if let Expr::Closure(_) = hook {
            // Bound by `Fn`, so that the closure's arguments are inferred
            // (its arity was checked while parsing).
            let bound =
                call_keeping_output(quote!(#private::give_up_hook), output, quote!(_), value, at);
            (TokenStream::new(), bound)
        } else {
            // A function's type is asked whether it fits (see
            // `__private::GiveUpProbe`): a misfit is then one error naming
            // the key and the signature, not an E0593 or E0631 naming
            // `__private`. The call and its arguments all located at the
            // value, in its context, so that the compiler reports it once;
            // the copy of the return type in it under the `output_lints`
            // (see `split_on_output`).
            let (function, answer) = (
                Ident::new("__give_up_fn", at),
                Ident::new("__give_up_answer", at),
            );
            let probe = call_keeping_output(
                quote!(#private::give_up_probe),
                output,
                quote!(_),
                quote!(&#function),
                at,
            );
            let quiet = output_lints();
            let before = quote! {
                let #function = #value;
                let #answer = {
                    #[allow(unused_imports)]
                    use #private::{HookFits as _, HookMisfits as _};
                    (&#probe).fits()
                };
                #[allow(#quiet)]
            };
            let path = quote!(#private::give_up_path::<#output, _>(#function, #answer));
            (before, respan(path, at))
        };
        // Bound to a name of its own first: an error in the bound is then
        // reported on the value alone, not again on the call that uses it.
        let on_give_up = Ident::new("on_give_up", Span::mixed_site().located_at(hook.span()));
        (quote!(let #started = #private::Started::#clock();), {
            // The call located at the hook too: a hook of the wrong type,
            // which fails where it is bound, then fails on the same token
            // where it is called, and the compiler reports it once.
            let hook_at = hook.span();
            let call = call_spanned(
                quote!(#private::gave_up),
                quote_spanned!(hook_at=> &#on_give_up, #started, &#outcome),
                hook_at,
            );
            (quote!(#before let #on_give_up = #bound;), quote!(#call;))
        })
    }

    /// The body's statements in a block of their own, and a fake return to
    /// put before it in an async block, which gives that block the
    /// function's return type, so `?` and `.into()` in the body infer as they
    /// did before. The statements get a block of their own, so that items at
    /// the top of the body do not follow a statement. Its braces are the expansion's, not the user's:
    /// braces the user did not write are no `unused_braces` of theirs.
    fn statements(output: &Type, body: TokenStream, body_span: Span) -> (TokenStream, Group) {
        let fake = Ident::new("fake", Span::mixed_site());
        let mut statements = Group::new(Delimiter::Brace, body);
        statements.set_span(Span::mixed_site().located_at(body_span));
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
        (fake_return, statements)
    }

    fn policy_const(&self) -> TokenStream {
        let Expansion { krate, config, .. } = self;
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
}

fn duration(d: Duration) -> TokenStream {
    let secs = d.as_secs();
    let nanos = d.subsec_nanos();
    quote!(::core::time::Duration::new(#secs, #nanos))
}
