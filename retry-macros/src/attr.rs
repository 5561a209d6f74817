//! Reads `#[retry(key = value, ...)]` into keys and values, keeping every
//! span, and the annotated item into its parts. Nothing is checked here beyond
//! the `key = value` shape; `validate.rs` judges the values.

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::{Attribute, Block, Expr, Ident, Signature, Stmt, Token, Visibility};

/// One `key = value` of the attribute.
pub struct Arg {
    pub key: Ident,
    pub value: Expr,
}

impl Parse for Arg {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        // `crate` is a keyword, so take any identifier.
        if !input.peek(Ident::peek_any) {
            return Err(
                input.error("expected `key = value`, such as `max = 4` or `base = \"200ms\"`")
            );
        }
        let key = Ident::parse_any(input)?;
        if !input.peek(Token![=]) {
            return Err(syn::Error::new(
                key.span(),
                format!("`{key}` needs a value: write `{key} = ...`, such as `max = 4`"),
            ));
        }
        input.parse::<Token![=]>()?;
        if input.is_empty() || input.peek(Token![,]) {
            return Err(input.error(format!("`{key} =` is missing its value")));
        }
        let value = input.parse()?;
        Ok(Arg { key, value })
    }
}

pub fn parse_args(args: TokenStream) -> syn::Result<Vec<Arg>> {
    let args = Punctuated::<Arg, Token![,]>::parse_terminated.parse2(args)?;
    Ok(args.into_iter().collect())
}

/// The annotated function. `block` is `None` for a declaration without a
/// body (`async fn f(&self);` in a trait).
pub struct Function {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    pub inner_attrs: Vec<Attribute>,
    pub stmts: Option<Vec<Stmt>>,
    /// The body's braces, so that errors about the body as a whole (a move
    /// of an argument) point at it rather than at the attribute.
    pub body_span: Span,
}

impl Parse for Function {
    fn parse(input: ParseStream<'_>) -> syn::Result<Self> {
        let attrs = input.call(Attribute::parse_outer)?;
        let vis = input.parse()?;
        let sig: Signature = input.parse()?;
        if input.peek(Token![;]) {
            input.parse::<Token![;]>()?;
            let body_span = sig.ident.span();
            return Ok(Function {
                attrs,
                vis,
                sig,
                inner_attrs: Vec::new(),
                stmts: None,
                body_span,
            });
        }
        let content;
        let braces = syn::braced!(content in input);
        let body_span = braces.span.join();
        let inner_attrs = content.call(Attribute::parse_inner)?;
        let stmts = content.call(Block::parse_within)?;
        Ok(Function {
            attrs,
            vis,
            sig,
            inner_attrs,
            stmts: Some(stmts),
            body_span,
        })
    }
}

impl quote::ToTokens for Function {
    /// The function exactly as written: what is emitted next to an error.
    fn to_tokens(&self, tokens: &mut TokenStream) {
        use quote::TokenStreamExt;
        tokens.append_all(&self.attrs);
        self.vis.to_tokens(tokens);
        self.sig.to_tokens(tokens);
        match &self.stmts {
            None => <Token![;]>::default().to_tokens(tokens),
            Some(stmts) => {
                let inner = &self.inner_attrs;
                tokens.extend(quote::quote!({ #(#inner)* #(#stmts)* }));
            }
        }
    }
}
