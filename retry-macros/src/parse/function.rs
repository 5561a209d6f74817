//! The annotated item, read into its parts: attributes, visibility,
//! signature and the body as written.

use proc_macro2::{Span, TokenStream};
use syn::parse::{Parse, ParseStream, Parser};
use syn::{Attribute, Block, Signature, Stmt, Token, Visibility};

/// The annotated function. `body` is `None` for a declaration without a
/// body (`async fn f(&self);` in a trait).
pub struct Function {
    pub attrs: Vec<Attribute>,
    pub vis: Visibility,
    pub sig: Signature,
    pub inner_attrs: Vec<Attribute>,
    /// The statements as written, unparsed: a syntax error in them is left
    /// for the compiler to report as it would without `#[retry]`.
    pub body: Option<TokenStream>,
    /// The body's braces, so that errors about the body as a whole (a move
    /// of an argument) point at it rather than at the attribute.
    pub body_span: Span,
}

impl Function {
    /// The statements, when they parse.
    pub fn stmts(&self) -> Option<Vec<Stmt>> {
        Block::parse_within.parse2(self.body.clone()?).ok()
    }
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
                body: None,
                body_span,
            });
        }
        let content;
        let braces = syn::braced!(content in input);
        let body_span = braces.span.join();
        let inner_attrs = content.call(Attribute::parse_inner)?;
        let body = content.parse()?;
        Ok(Function {
            attrs,
            vis,
            sig,
            inner_attrs,
            body: Some(body),
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
        match &self.body {
            None => <Token![;]>::default().to_tokens(tokens),
            Some(body) => {
                let inner = &self.inner_attrs;
                let mut group = proc_macro2::Group::new(
                    proc_macro2::Delimiter::Brace,
                    quote::quote!(#(#inner)* #body),
                );
                group.set_span(self.body_span);
                tokens.append(group);
            }
        }
    }
}
