//! Checks the shape of the annotated function: a body, a `Result` return
//! type, and nothing the loop cannot hold across attempts. Sees through the
//! shapes other attributes leave when they run first (`#[async_trait]`,
//! `#[tracing::instrument]`), so that `#[retry]` retries the user's own body.

use proc_macro2::{Delimiter, Group, Span, TokenStream, TokenTree};
use quote::ToTokens;
use syn::{Expr, Pat, ReturnType, Stmt, Type};

use crate::check::Errors;
use crate::parse::Function;

mod borrows;

use borrows::returns_mutable_borrow;

/// What `#[retry]` rewrites.
pub enum Shape {
    /// The function as written.
    Plain,
    /// What `#[async_trait]` leaves:
    ///
    /// ```text
    /// // Input:
    /// fn f(&self, x: X) -> Pin<Box<dyn Future<Output = R> + Send + 'async_trait>> {
    ///     Box::pin(async move {
    ///         if let Some(__ret) = None::<R> { return __ret; }
    ///         let __self = self;
    ///         let x = x;
    ///         let __ret: R = { /* the body */ };
    ///         __ret
    ///     })
    /// }
    /// ```
    ///
    /// The loop goes inside the `async move` block, after the arguments are
    /// moved into it, and retries the body.
    AsyncTrait(Box<AsyncTrait>),
    /// What `#[tracing::instrument]` leaves on an `async fn`: the body moved
    /// into `async move { .. }` (possibly inside a wrapper that records the
    /// result). The loop replaces that block's body.
    Instrumented {
        /// The function body as `#[tracing::instrument]` left it.
        body: TokenStream,
        /// Where the user's block is in it: an index at each level of groups.
        path: Vec<usize>,
        /// The user's block.
        block: Group,
    },
}

/// The parts of an `#[async_trait]` method.
pub struct AsyncTrait {
    /// `Box::pin`, as written.
    pub pin: Expr,
    /// The statements before the arguments are moved.
    pub guard: Vec<Stmt>,
    /// `let x = x;` for each argument moved into the future.
    pub moves: Vec<Stmt>,
    /// `R`, the outcome.
    pub output: Type,
    /// The body.
    pub block: syn::Block,
}

impl Shape {
    /// The outcome of an attempt: the return type, or the output of the
    /// future `#[async_trait]` returns.
    pub fn output<'a>(&'a self, function: &'a Function) -> Option<&'a Type> {
        match self {
            Shape::AsyncTrait(parts) => Some(&parts.output),
            _ => match &function.sig.output {
                ReturnType::Type(_, ty) => Some(ty),
                ReturnType::Default => None,
            },
        }
    }
}

/// Checks that the item is a function `#[retry]` can rewrite, and what shape
/// it has.
pub fn function(function: &Function) -> syn::Result<Shape> {
    let mut errors = Errors::default();
    let sig = &function.sig;
    if function.body.is_none() {
        errors.add(
            &sig.ident,
            "`#[retry]` needs a function body; put it on the implementation of this method, not on its declaration",
        );
    }
    if let Some(constness) = &sig.constness {
        errors.add(
            constness,
            "`#[retry]` cannot retry a `const fn`: waiting between attempts cannot happen while compiling; remove `const`",
        );
    }
    let shape = match async_trait(function) {
        Some(parts) => Shape::AsyncTrait(Box::new(parts)),
        None => match instrumented(function) {
            Some(Ok(shape)) => shape,
            Some(Err(error)) => {
                // Kept with the mistakes found above, not instead of them.
                errors.push(error);
                return errors.finish(Shape::Plain);
            }
            None => Shape::Plain,
        },
    };
    let output = match &shape {
        Shape::AsyncTrait(parts) => {
            ReturnType::Type(Default::default(), Box::new(parts.output.clone()))
        }
        _ => sig.output.clone(),
    };
    match &output {
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
    errors.finish(shape)
}

/// The parts of a method `#[async_trait]` rewrote, if it is one.
fn async_trait(function: &Function) -> Option<AsyncTrait> {
    if function.sig.asyncness.is_some() {
        return None;
    }
    let mut stmts = function.stmts()?;
    let Some(Stmt::Expr(Expr::Call(call), None)) = stmts.pop() else {
        return None;
    };
    if !stmts.is_empty() || call.args.len() != 1 {
        return None;
    }
    let Expr::Path(pin) = &*call.func else {
        return None;
    };
    let segments: Vec<String> = pin
        .path
        .segments
        .iter()
        .map(|s| s.ident.to_string())
        .collect();
    if !segments.ends_with(&["Box".to_owned(), "pin".to_owned()]) {
        return None;
    }
    let Some(Expr::Async(future)) = call.args.first() else {
        return None;
    };
    future.capture?;
    let mut stmts = future.block.stmts.clone().into_iter();
    let mut guard = Vec::new();
    let mut moves = Vec::new();
    for stmt in stmts.by_ref() {
        match &stmt {
            Stmt::Expr(Expr::If(_), _) if moves.is_empty() => guard.push(stmt),
            Stmt::Local(local) => {
                if let (Pat::Type(typed), Some(init)) = (&local.pat, &local.init) {
                    if let (Pat::Ident(name), Expr::Block(block)) = (&*typed.pat, &*init.expr) {
                        if name.ident == "__ret" {
                            return Some(AsyncTrait {
                                pin: (*call.func).clone(),
                                guard,
                                moves,
                                output: (*typed.ty).clone(),
                                block: block.block.clone(),
                            });
                        }
                    }
                }
                moves.push(stmt);
            }
            _ => return None,
        }
    }
    None
}

/// What `#[tracing::instrument]` left, if it ran before `#[retry]`.
fn instrumented(function: &Function) -> Option<syn::Result<Shape>> {
    let body = function.body.as_ref()?;
    fn mentions(tokens: TokenStream, name: &str) -> bool {
        tokens.into_iter().any(|token| match token {
            TokenTree::Ident(ident) => ident == name,
            TokenTree::Group(group) => mentions(group.stream(), name),
            _ => false,
        })
    }
    let mentions = |name: &str| mentions(body.clone(), name);
    if !mentions("__tracing_attr_span") {
        return None;
    }
    if function.sig.asyncness.is_none() {
        // A plain fn runs its body in place, or, to record the result, in
        // `(move || BLOCK)()`: the loop goes inside the closure.
        return closure_block(body.clone(), &mut Vec::new()).map(|(path, block)| {
            Ok(Shape::Instrumented {
                body: body.clone(),
                path,
                block,
            })
        });
    }
    let unsupported = || {
        Some(Err(syn::Error::new(
            Span::call_site(),
            "`#[retry]` cannot find the body `#[tracing::instrument]` wrapped: put `#[retry(..)]` \
             above `#[tracing::instrument]`, so that one span covers every attempt",
        )))
    };
    // `let __tracing_instrument_future = async move BLOCK;`, where BLOCK is
    // the user's, or wraps it: `async move { let x = async move BLOCK.await;
    // .. }`, `async move { match async move BLOCK.await { .. } }`.
    let tokens: Vec<TokenTree> = body.clone().into_iter().collect();
    let Some(at) = tokens.windows(2).position(|pair| {
        matches!(&pair[0], TokenTree::Ident(ident) if ident == "__tracing_instrument_future")
            && matches!(&pair[1], TokenTree::Punct(punct) if punct.as_char() == '=')
    }) else {
        return unsupported();
    };
    let Some((outer, index)) = async_move_block(&tokens, at + 2) else {
        return unsupported();
    };
    let inner: Vec<TokenTree> = outer.stream().into_iter().collect();
    let wrapped = (0..inner.len().min(4)).find_map(|start| async_move_block(&inner, start));
    let (path, block) = match wrapped {
        Some((block, inner_index)) => (vec![index, inner_index], block),
        None => (vec![index], outer),
    };
    Some(Ok(Shape::Instrumented {
        body: body.clone(),
        path,
        block,
    }))
}

/// The block of the first `move || { .. }` in `tokens`, and where it is.
fn closure_block(tokens: TokenStream, path: &mut Vec<usize>) -> Option<(Vec<usize>, Group)> {
    let tokens: Vec<TokenTree> = tokens.into_iter().collect();
    for (index, token) in tokens.iter().enumerate() {
        if let [TokenTree::Ident(m), TokenTree::Punct(a), TokenTree::Punct(b), TokenTree::Group(block)] =
            tokens.get(index..index + 4).unwrap_or_default()
        {
            if m == "move"
                && a.as_char() == '|'
                && b.as_char() == '|'
                && block.delimiter() == Delimiter::Brace
            {
                let mut path = path.clone();
                path.push(index + 3);
                return Some((path, block.clone()));
            }
        }
        if let TokenTree::Group(group) = token {
            path.push(index);
            if let Some(found) = closure_block(group.stream(), path) {
                return Some(found);
            }
            path.pop();
        }
    }
    None
}

/// `async move { .. }` starting at `start` in `tokens`: the block, and its
/// index.
fn async_move_block(tokens: &[TokenTree], start: usize) -> Option<(Group, usize)> {
    match tokens.get(start..start + 3)? {
        [TokenTree::Ident(a), TokenTree::Ident(m), TokenTree::Group(block)]
            if a == "async" && m == "move" && block.delimiter() == Delimiter::Brace =>
        {
            Some((block.clone(), start + 2))
        }
        _ => None,
    }
}

/// `tokens` with the token at `path` (an index at each level of groups)
/// replaced by `with`.
pub fn replace_at(tokens: TokenStream, path: &[usize], with: TokenTree) -> TokenStream {
    let Some((&first, rest)) = path.split_first() else {
        return tokens;
    };
    let mut with = Some(with);
    tokens
        .into_iter()
        .enumerate()
        .map(|(i, token)| match (i == first, token) {
            (true, TokenTree::Group(group)) if !rest.is_empty() => {
                let stream = replace_at(
                    group.stream(),
                    rest,
                    with.take()
                        .unwrap_or_else(|| TokenTree::Group(group.clone())),
                );
                let mut new = Group::new(group.delimiter(), stream);
                new.set_span(group.span());
                TokenTree::Group(new)
            }
            (true, token) => with.take().unwrap_or(token),
            (false, token) => token,
        })
        .collect()
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
                .then(|| format!("`{}`", written(ty)))
        }
        Type::Path(_) | Type::Macro(_) | Type::Verbatim(_) => None,
        Type::ImplTrait(_) => Some("`impl Trait`; write the `Result` type out".to_owned()),
        _ => Some(format!("`{}`", written(ty))),
    }
}

/// Tokens as a user writes them in a message: `Option<u32>` and
/// `&mut Vec<u8>`, not `Option < u32 >` and `& mut Vec < u8 >`.
fn written(tokens: &impl ToTokens) -> String {
    let mut text = tokens.to_token_stream().to_string();
    for (spaced, tight) in [
        (" <", "<"),
        ("< ", "<"),
        (" >", ">"),
        (" ::", "::"),
        (":: ", "::"),
        (" ,", ","),
        ("& ", "&"),
        ("' ", "'"),
        (" ;", ";"),
        ("( ", "("),
        (" )", ")"),
        ("[ ", "["),
        (" ]", "]"),
    ] {
        text = text.replace(spaced, tight);
    }
    // `-> T` keeps its spaces; `Fn(u8) ->T` would not read well.
    text.replace("->", " -> ").replace("  ", " ")
}

/// The first `impl` keyword in `tokens`.
fn impl_trait(tokens: TokenStream) -> Option<TokenTree> {
    tokens.into_iter().find_map(|token| match token {
        TokenTree::Ident(ref ident) if ident == "impl" => Some(token),
        TokenTree::Group(group) => impl_trait(group.stream()),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Types in messages read as written, not as spaced tokens.
    #[test]
    fn types_in_messages_read_as_written() {
        let ty: Type = syn::parse_quote!(Option<Vec<u32>>);
        assert_eq!(written(&ty), "Option<Vec<u32>>");
        let ty: Type = syn::parse_quote!(&'a mut std::collections::HashMap<String, [u8; 4]>);
        assert_eq!(
            written(&ty),
            "&'a mut std::collections::HashMap<String, [u8; 4]>"
        );
        let ty: Type = syn::parse_quote!(Box<dyn Fn(&str) -> bool>);
        assert_eq!(written(&ty), "Box<dyn Fn (&str) -> bool>");
    }
}
