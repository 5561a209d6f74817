//! Checks the shape of the annotated function: a body, a `Result` return
//! type, and nothing the loop cannot hold across attempts.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{FnArg, ReturnType, Type};

use crate::check::Errors;
use crate::parse::Function;

/// Checks that the item is a function `#[retry]` can rewrite.
pub fn function(function: &Function) -> syn::Result<()> {
    let mut errors = Errors::default();
    let sig = &function.sig;
    if function.stmts.is_none() {
        errors.add(
            &sig.ident,
            "`#[retry]` needs a function body; put it on the implementation of this method, not on its declaration",
        );
    }
    match &sig.output {
        ReturnType::Default => errors.add(
            &sig.ident,
            format!(
                "`#[retry]` needs a function that returns a `Result`; `{}` returns nothing, so \
                 there is no error to retry on",
                sig.ident
            ),
        ),
        ReturnType::Type(_, ty) => {
            if let Some(problem) = not_a_result(ty) {
                errors.add(
                    ty,
                    format!(
                        "`#[retry]` needs a function that returns a `Result`, not {problem}: the \
                         `Err` value decides whether to retry"
                    ),
                );
            } else if let Some(token) = impl_trait(ty.to_token_stream()) {
                errors.add(
                    token,
                    "`#[retry]` cannot name an `impl Trait` inside the return type (the loop holds \
                     each attempt's outcome in a variable of that type); write the concrete type, \
                     or a `Box<dyn Trait>`",
                );
            } else if let Some(borrowed) = returns_mutable_borrow(function, ty) {
                errors.add(
                    ty,
                    format!(
                        "`#[retry]` cannot retry a function that takes `{borrowed}` and returns a \
                         borrow of it: every attempt borrows it mutably, and a value borrowed in one \
                         attempt would have to stay borrowed through the next, which today's borrow \
                         checker rejects; return an owned value (`.to_owned()`, `.clone()`), or put \
                         `#[retry]` on a helper that returns owned data and borrow after it succeeds"
                    ),
                );
            }
        }
    }
    errors.finish(())
}

/// What the return type is, when it cannot be a `Result` whatever the
/// aliases in scope. Paths not listed here are left to the compiler, which
/// reports the same message through `Outcome`.
fn not_a_result(ty: &Type) -> Option<String> {
    match ty {
        Type::Paren(inner) => not_a_result(&inner.elem),
        Type::Group(inner) => not_a_result(&inner.elem),
        Type::Tuple(tuple) if tuple.elems.is_empty() => Some("`()`".to_owned()),
        Type::Path(path) if path.qself.is_none() => {
            let last = path.path.segments.last()?.ident.to_string();
            const NOT_RESULTS: [&str; 20] = [
                "Option", "String", "Vec", "Box", "bool", "char", "str", "u8", "u16", "u32", "u64",
                "u128", "usize", "i8", "i16", "i32", "i64", "i128", "isize", "f64",
            ];
            NOT_RESULTS
                .contains(&last.as_str())
                .then(|| format!("`{}`", ty.to_token_stream()))
        }
        Type::Path(_) | Type::Macro(_) | Type::Verbatim(_) => None,
        Type::ImplTrait(_) => Some("`impl Trait`; write the `Result` type out".to_owned()),
        _ => Some(format!("`{}`", ty.to_token_stream())),
    }
}

/// The first `impl` keyword in `tokens`.
fn impl_trait(tokens: TokenStream) -> Option<TokenTree> {
    tokens.into_iter().find_map(|token| match token {
        TokenTree::Ident(ref ident) if ident == "impl" => Some(token),
        TokenTree::Group(group) => impl_trait(group.stream()),
        _ => None,
    })
}

/// The `&mut` parameter (`&mut self` or a named one) that the return type
/// borrows from, if any.
fn returns_mutable_borrow(function: &Function, output: &Type) -> Option<String> {
    let inputs = &function.sig.inputs;
    // Elided lifetimes in the output belong to a reference receiver when
    // there is one, and otherwise to the one reference parameter.
    let reference_receiver = inputs
        .iter()
        .any(|input| matches!(input, FnArg::Receiver(receiver) if receiver.reference.is_some()));
    for input in inputs {
        let (written, lifetime, elided) = match input {
            FnArg::Receiver(receiver) => match &receiver.reference {
                Some((_, lifetime)) if receiver.mutability.is_some() => (
                    "&mut self".to_owned(),
                    lifetime.as_ref().map(|l| l.ident.to_string()),
                    true,
                ),
                _ => continue,
            },
            FnArg::Typed(typed) => match &*typed.ty {
                Type::Reference(reference) if reference.mutability.is_some() => (
                    format!(
                        "{}: {}",
                        typed.pat.to_token_stream(),
                        typed.ty.to_token_stream()
                    ),
                    reference.lifetime.as_ref().map(|l| l.ident.to_string()),
                    !reference_receiver,
                ),
                _ => continue,
            },
        };
        if borrows(output.to_token_stream(), lifetime.as_deref(), elided) {
            return Some(written);
        }
    }
    None
}

/// Whether `tokens` hold a reference with the lifetime `lifetime`, or (when
/// `elided`) one whose lifetime is elided or `'_`. The arguments of `Fn`,
/// `FnMut`, `FnOnce` and `fn` types are skipped: their lifetimes are their
/// own.
fn borrows(tokens: TokenStream, lifetime: Option<&str>, elided: bool) -> bool {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(ident)
                if ["Fn", "FnMut", "FnOnce", "fn"]
                    .iter()
                    .any(|name| ident == name) =>
            {
                if matches!(tokens.peek(), Some(TokenTree::Group(_))) {
                    tokens.next();
                }
            }
            TokenTree::Group(group) if borrows(group.stream(), lifetime, elided) => return true,
            TokenTree::Punct(punct) if punct.as_char() == '&' => match tokens.peek() {
                Some(TokenTree::Punct(tick)) if tick.as_char() == '\'' => {}
                _ if elided => return true,
                _ => {}
            },
            TokenTree::Punct(punct) if punct.as_char() == '\'' => {
                if let Some(TokenTree::Ident(name)) = tokens.next() {
                    let name = name.to_string();
                    if (elided && name == "_") || Some(name.as_str()) == lifetime {
                        return true;
                    }
                }
            }
            _ => {}
        }
    }
    false
}
