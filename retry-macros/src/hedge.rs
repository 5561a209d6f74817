//! `hedge = "50ms"` | `hedge = "p95"`: checked against the function, and
//! expanded into one hedged call; its value is read in `parse/hedge.rs`.
//! Attempts start while none has answered, up to `max`; the runtime side is
//! `retry_runtime::hedge`.

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::{FnArg, Pat, Type};

use crate::parse::{Config, Function, Hedge};

/// Attempts of a hedged call run at the same time and share the arguments:
/// one error, naming `hedge`, for an argument they cannot share or a
/// function that cannot run them side by side.
pub fn check(config: &Config, function: &Function, is_async: bool) -> syn::Result<()> {
    if config.hedge.is_none() {
        return Ok(());
    }
    if !is_async {
        return Err(syn::Error::new(
            function.sig.fn_token.span,
            "`hedge` runs attempts at the same time, and a plain `fn` blocks its thread for each \
             one: make the function `async fn`, or remove `hedge`",
        ));
    }
    for input in &function.sig.inputs {
        let why = match input {
            FnArg::Receiver(receiver) if receiver.mutability.is_some() => {
                if receiver.reference.is_some() {
                    "`&mut self`"
                } else {
                    "`mut self`"
                }
            }
            // `self: &mut Self`, `&mut self` written out.
            FnArg::Receiver(receiver) if matches!(&*receiver.ty, Type::Reference(reference) if reference.mutability.is_some()) => {
                "a `&mut` receiver"
            }
            // `self: Pin<&mut Self>`: a `&mut` all the same.
            FnArg::Receiver(receiver) if is_pin_mut(&receiver.ty) => "a `Pin<&mut Self>` receiver",
            FnArg::Receiver(_) => continue,
            FnArg::Typed(typed) => match (&*typed.pat, &*typed.ty) {
                (_, Type::Reference(reference)) if reference.mutability.is_some() => {
                    "a `&mut` argument"
                }
                (_, ty) if is_pin_mut(ty) => "a `Pin<&mut _>` argument",
                (Pat::Ident(pat), _) if pat.mutability.is_some() => "a `mut` argument",
                (pat, _) => match mut_binding(pat) {
                    // `Wrapper(mut items): Wrapper`: on the binding.
                    Some(binding) => {
                        return Err(syn::Error::new_spanned(
                            binding,
                            "`hedge` runs attempts at the same time, sharing the arguments, and a \
                             `mut` binding cannot be shared: bind it without `mut` (and copy it \
                             in the body if an attempt must change it), or remove `hedge`",
                        ));
                    }
                    None => continue,
                },
            },
        };
        return Err(syn::Error::new_spanned(
            input,
            format!(
                "`hedge` runs attempts at the same time, sharing the arguments, and {why} cannot \
                 be shared: take it by `&` (or by value without `mut`), or remove `hedge`"
            ),
        ));
    }
    Ok(())
}

/// Whether `ty` is `Pin<&mut T>` (under any path to `Pin`): a pinned
/// `&mut`, which the attempts cannot share either.
fn is_pin_mut(ty: &Type) -> bool {
    let Type::Path(path) = ty else {
        return false;
    };
    let Some(last) = path.path.segments.last() else {
        return false;
    };
    let syn::PathArguments::AngleBracketed(arguments) = &last.arguments else {
        return false;
    };
    last.ident == "Pin"
        && matches!(
            arguments.args.first(),
            Some(syn::GenericArgument::Type(Type::Reference(reference)))
                if reference.mutability.is_some()
        )
}

/// The first by-value `mut` binding inside a destructuring pattern, such as
/// `mut items` in `Wrapper(mut items)`. Bindings under `&` are left alone:
/// they bind through a reference the attempts share.
fn mut_binding(pat: &Pat) -> Option<&syn::PatIdent> {
    match pat {
        Pat::Ident(ident) if ident.by_ref.is_none() && ident.mutability.is_some() => Some(ident),
        Pat::Ident(ident) => ident.subpat.as_ref().and_then(|(_, sub)| mut_binding(sub)),
        Pat::Tuple(tuple) => tuple.elems.iter().find_map(mut_binding),
        Pat::TupleStruct(tuple) => tuple.elems.iter().find_map(mut_binding),
        Pat::Struct(fields) => fields
            .fields
            .iter()
            .find_map(|field| mut_binding(&field.pat)),
        Pat::Paren(inner) => mut_binding(&inner.pat),
        Pat::Type(inner) => mut_binding(&inner.pat),
        Pat::Slice(slice) => slice.elems.iter().find_map(mut_binding),
        _ => None,
    }
}

/// What the expansion of a hedged call is made of.
pub struct Parts<'a> {
    pub hedge: Hedge,
    pub private: &'a TokenStream,
    /// `&Policy`.
    pub policy: TokenStream,
    /// Set when the policy comes from `policy = ...`, known at run time.
    pub max: Option<u32>,
    /// `Option<&RetryBudget>`.
    pub budget: TokenStream,
    /// The breaker and its conversion, or none.
    pub breaker: TokenStream,
    /// `Limit<Ret>`.
    pub limit: TokenStream,
    /// `&'static str`.
    pub name: TokenStream,
    /// The rules, as the retry loop builds them (`Expansion::rules`).
    pub rules: TokenStream,
    /// Where the rules are located (`Expansion::step_span`): the call that
    /// takes them is located there too, so that a rule of the wrong type,
    /// which fails where it is set, fails on the same token where the call
    /// uses it and the compiler reports it once.
    pub at: Span,
    /// The body, as an `async` block borrowing the arguments.
    pub attempt: TokenStream,
    /// The `hedge` key as written.
    pub key: Span,
}

/// The statements of a hedged call: the attempts, made by a closure that
/// borrows the arguments, polled in place by one future.
pub fn expand(parts: Parts<'_>) -> TokenStream {
    let Parts {
        hedge,
        private,
        policy,
        max,
        budget,
        breaker,
        limit,
        name,
        rules,
        at,
        attempt,
        key,
    } = parts;
    let span = Span::mixed_site();
    let latencies = syn::Ident::new("LATENCIES", span);
    let (statics, hedge) = match hedge {
        Hedge::After(delay) => {
            let (secs, nanos) = (delay.as_secs(), delay.subsec_nanos());
            (
                TokenStream::new(),
                quote!(#private::hedge::Hedge::after(::core::time::Duration::new(#secs, #nanos))),
            )
        }
        Hedge::Percentile(per_mille) => {
            // `99.9` for 999: written in tenths, read back exactly.
            let tenths = format!("{}.{}", per_mille / 10, per_mille % 10);
            let percentile = syn::LitFloat::new(&tenths, span);
            (
                // One histogram per function, shared by every call of it.
                quote! {
                    static #latencies: #private::hedge::Latencies = #private::hedge::Latencies::new();
                },
                quote!(#private::hedge::Hedge::percentile(#percentile, &#latencies)),
            )
        }
    };
    // One slot per attempt that may run at once, inside the caller's
    // future; a policy known only at run time gets them on the heap.
    let slots = match max {
        Some(max) => {
            // `Slot::new(Slot::new(.. End))`, one `Slot` per attempt.
            let count = usize::try_from(max).unwrap_or(usize::MAX).min(16);
            (0..count).fold(
                quote!(#private::hedge::End),
                |rest, _| quote!(#private::hedge::Slot::new(#rest)),
            )
        }
        None => quote!(#private::hedge::Boxed::new((#policy).max_attempts())),
    };
    // A hedged function's future is `Send` only when its by-value arguments
    // are `Sync` too (the attempts borrow them at once). Where that fails,
    // under `tokio::spawn`, the compiler names the non-`Sync` type, and the
    // notes under the error name the closure that borrows the arguments and
    // an `async` block around the call, both located at the `hedge` key
    // (`tests/ui/fail/hedge_not_sync.rs`); without the block, the error is
    // "future cannot be sent between threads safely" on the whole internal
    // type, at another key. The awaits stay located at the rules, as the
    // call is, so that a rule of the wrong type is still reported once.
    let maker = quote_spanned!(key=> || #attempt);
    let run = crate::expand::spans::call_spanned(
        quote!(#private::hedge::run),
        quote_spanned! {span=>
            #policy,
            #hedge,
            #budget,
            #breaker,
            #limit,
            #name,
            #slots,
            #rules,
            #maker,
        },
        at,
    );
    // Named with the rules' span itself, not a hygienic one: an error an
    // await reports is then the very error the rules reported, and shown
    // once. No code of the user's is in their scope.
    let (hedged, call) = (
        syn::Ident::new("hedged", at),
        syn::Ident::new("hedged_call", at),
    );
    let await_hedged = quote_spanned!(at=> #hedged.await);
    let block = quote_spanned!(key=> async move { #await_hedged });
    // A `match`, not a `let`, so that the temporaries the call borrows live
    // until it ends.
    quote_spanned! {at=>
        #statics
        match #run {
            #hedged => {
                // The block is there for the error above, not to await.
                #[allow(clippy::redundant_async_block)]
                let #call = #block;
                return #call.await;
            }
        }
    }
}

/// The line of the `# Retries` section that says the call hedges.
pub fn doc(config: &Config) -> Option<String> {
    let attempts = if config.policy.is_some() {
        "up to the policy's `max` attempts in all".to_owned()
    } else {
        format!("up to {} attempts in all", config.max)
    };
    Some(match config.hedge? {
        Hedge::After(delay) => format!(
            "Hedged: while no attempt has answered, another starts each time the newest has run for {delay:?}, {attempts}; the first answer wins and the others are dropped."
        ),
        Hedge::Percentile(per_mille) => {
            let percentile = if per_mille % 10 == 0 {
                format!("{}", per_mille / 10)
            } else {
                format!("{}.{}", per_mille / 10, per_mille % 10)
            };
            let base = if config.policy.is_some() {
                "the policy's `base`".to_owned()
            } else {
                format!("{:?}", config.base)
            };
            format!(
                "Hedged: while no attempt has answered, another starts each time the newest has run for the {percentile}th percentile of this function's recent successful latencies ({base} until it has seen 100 successes), {attempts}; the first answer wins and the others are dropped."
            )
        }
    })
}
