//! Whether the return type borrows from a `&mut` parameter: the loop holds
//! its arguments across attempts, so such a function cannot be retried.
//! `Fn` and `fn` types in the return type have lifetimes of their own.

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::{FnArg, Type};

use super::written;
use crate::parse::Function;

/// The `&mut` parameter (`&mut self` or a named one) that the return type
/// borrows from, if any.
pub(super) fn returns_mutable_borrow(function: &Function, output: &Type) -> Option<String> {
    let inputs = &function.sig.inputs;
    // Elided lifetimes in the output belong to a reference receiver when
    // there is one, and otherwise to the one reference parameter.
    // `self: &mut Self` is `&mut self` written out.
    let reference_receiver = inputs.iter().any(|input| {
        matches!(input, FnArg::Receiver(receiver) if matches!(&*receiver.ty, Type::Reference(_)))
    });
    for input in inputs {
        let (written, lifetime, elided) = match input {
            FnArg::Receiver(receiver) => match &*receiver.ty {
                Type::Reference(reference) if reference.mutability.is_some() => (
                    if receiver.colon_token.is_some() {
                        format!("self: {}", written(&receiver.ty))
                    } else {
                        "&mut self".to_owned()
                    },
                    reference.lifetime.as_ref().map(|l| l.ident.to_string()),
                    true,
                ),
                _ => continue,
            },
            FnArg::Typed(typed) => match &*typed.ty {
                Type::Reference(reference) if reference.mutability.is_some() => (
                    format!("{}: {}", written(&typed.pat), written(&typed.ty)),
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
/// `elided`) one whose lifetime is elided or `'_`. In the arguments and the
/// return type of `Fn`, `FnMut`, `FnOnce` and `fn` types, elided lifetimes
/// are their own: only `lifetime` is looked for there.
fn borrows(tokens: TokenStream, lifetime: Option<&str>, elided: bool) -> bool {
    let mut tokens = tokens.into_iter().peekable();
    while let Some(token) = tokens.next() {
        match token {
            TokenTree::Ident(ident)
                if ["Fn", "FnMut", "FnOnce", "fn"]
                    .iter()
                    .any(|name| ident == name) =>
            {
                let Some(TokenTree::Group(arguments)) = tokens.peek().cloned() else {
                    continue;
                };
                tokens.next();
                let output = fn_output(&mut tokens);
                if borrows(arguments.stream(), lifetime, false) || borrows(output, lifetime, false)
                {
                    return true;
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

/// The return type of an `Fn(..) -> T` or `fn(..) -> T` whose arguments
/// were just read, taken from `tokens`: after `->`, up to the `,`, `>`,
/// `+`, `=` or `;` that ends it (outside its own `<..>`), or the end.
fn fn_output(tokens: &mut core::iter::Peekable<impl Iterator<Item = TokenTree>>) -> TokenStream {
    let is = |token: Option<&TokenTree>, c: char| matches!(token, Some(TokenTree::Punct(punct)) if punct.as_char() == c);
    let mut output = TokenStream::new();
    if !is(tokens.peek(), '-') {
        return output;
    }
    tokens.next();
    if !is(tokens.peek(), '>') {
        return output;
    }
    tokens.next();
    let mut depth = 0_usize;
    let mut after_dash = false;
    while let Some(token) = tokens.peek() {
        if let TokenTree::Punct(punct) = token {
            match punct.as_char() {
                // The `>` of a nested `->`.
                '>' if after_dash => {}
                '<' => depth += 1,
                '>' if depth > 0 => depth -= 1,
                ',' | '>' | '+' | '=' | ';' if depth == 0 => break,
                _ => {}
            }
            after_dash = punct.as_char() == '-';
        } else {
            after_dash = false;
        }
        output.extend(tokens.next());
    }
    output
}
