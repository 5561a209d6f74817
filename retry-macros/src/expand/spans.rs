//! How the expansion places what it writes: a call located at the key it
//! comes from, so that the compiler reports an unmet bound there, and the
//! copies of the function's return type that a call needs, which must not
//! report the user's lints on that type once more.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::quote;
use syn::{Ident, Type};

/// A call of `function` with `args`, the call itself located at `span`, so
/// that the compiler reports an unmet bound of `function` there. The
/// arguments keep their own spans.
pub(crate) fn call_spanned(function: TokenStream, args: TokenStream, span: Span) -> TokenStream {
    let function = respan(function, span);
    let args = spanned_args(args, span);
    quote!(#function #args)
}

/// The lints about how the user wrote the return type that a copy of it
/// would report again: a path longer than it needs to be, a lifetime it
/// hides. Allowed on the statements that copy the type to the location of a
/// key (see [`split_on_output`]); the type the user wrote keeps them.
pub(crate) fn output_lints() -> TokenStream {
    quote!(unused_qualifications, elided_lifetimes_in_paths)
}

/// As [`call_spanned`], for a `function` whose path copies the function's
/// return type, split in two: the path alone bound to a local, in a
/// statement under `#[allow(..)]` of the [`output_lints`], and the call of
/// that local with `args`, written where the value is used (so that the
/// temporaries of the arguments live as long as they did in the call
/// itself). The copy is located at `span`, the key, so that an unmet bound
/// on it is reported there; a lint about how the user wrote the type (a
/// path longer than it needs to be, a hidden lifetime) is then reported
/// once, on the type they wrote, not again on each key that copies it.
/// The `allow` covers the path only, never `args`: the user's own code in
/// a key keeps every lint (`tests/ui/fail/lints_in_keys_are_the_users.rs`).
/// (Split so, `give_up_hook` reports a hook of the wrong type twice and
/// `circuit_open_with` a closure of the wrong type as an E0271 into
/// `__private`: those two use [`call_keeping_output`] instead.)
/// `#[allow]` cannot go on an expression, hence the `let`.
pub(crate) fn split_on_output(
    function: TokenStream,
    args: TokenStream,
    span: Span,
    name: &str,
) -> (TokenStream, TokenStream) {
    let quiet = output_lints();
    let bound = Ident::new(name, Span::mixed_site().located_at(span));
    let function = respan(function, span);
    let args = spanned_args(args, span);
    (
        quote! {
            #[allow(#quiet)]
            let #bound = #function;
        },
        quote!(#bound #args),
    )
}

/// As [`call_spanned`], for `function::<Ret, rest>` with `args`, where `Ret`
/// is the function's return type: the call is located at `span`, but the
/// copy of `Ret` keeps the spans the user wrote it with. A lint about how
/// they wrote the type (a path longer than it needs to be, a hidden
/// lifetime) is then the one already reported on their return type, the
/// same message on the same tokens, which the compiler reports once; so the
/// call needs no `allow` of the [`output_lints`], and the user's own code in
/// `args` keeps every lint (`tests/ui/fail/lints_in_keys_are_the_users.rs`),
/// and a type the user misspelled is not reported again on the key. Only
/// for a call whose unmet bounds the compiler reports on an argument, the
/// key's value: `give_up_hook` and `circuit_open_with` (even `Ret: Outcome`
/// there, on a return type that is not a `Result`). A call without
/// arguments, such as `circuit_open::<Ret>()`, has a bound on `Ret` reported
/// on the copy of `Ret`, which would then be the return type rather than the
/// key: use [`split_on_output`] there.
pub(crate) fn call_keeping_output(
    function: TokenStream,
    output: &Type,
    rest: TokenStream,
    args: TokenStream,
    span: Span,
) -> TokenStream {
    let head = respan(quote!(#function::<), span);
    let tail = respan(quote!(, #rest>), span);
    let args = spanned_args(args, span);
    quote!(#head #output #tail #args)
}

/// `args` in parentheses located at `span`, where the compiler reports a
/// call's wrong number of arguments; each argument keeps its own spans.
fn spanned_args(args: TokenStream, span: Span) -> Group {
    let mut args = Group::new(Delimiter::Parenthesis, args);
    args.set_span(span);
    args
}

/// `tokens` with every span set to `span`, so the compiler reports what goes
/// wrong in them there.
pub(crate) fn respan(tokens: TokenStream, span: Span) -> TokenStream {
    tokens
        .into_iter()
        .map(|mut token| {
            if let TokenTree::Group(group) = &token {
                let mut inner = Group::new(group.delimiter(), respan(group.stream(), span));
                inner.set_span(span);
                token = inner.into();
            } else {
                token.set_span(span);
            }
            token
        })
        .collect()
}

/// The spans of the first and the last token of `ty`: tokens located at
/// them make an expression whose span is the type's, as the compiler
/// computes it for the type written in a call (`rules::<Ret, _, _>()`), so
/// that an error reported on either is the same, reported once.
pub(crate) fn ends(ty: &Type) -> (Span, Span) {
    let tokens: Vec<TokenTree> = quote!(#ty).into_iter().collect();
    match (tokens.first(), tokens.last()) {
        (Some(first), Some(last)) => (first.span(), last.span()),
        _ => (Span::call_site(), Span::call_site()),
    }
}
