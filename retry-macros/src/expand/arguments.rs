//! What the loop does with the function's arguments, so that each attempt
//! starts from them as the caller passed them:
//!
//! ```text
//! // Input:
//! async fn f(x: X, mut batch: B, r: &R, mut s: &S) -> Ret { .. }
//! // Output, around the loop:
//! let mut x = x;                      // by value: the attempt borrows it uniquely
//! let mut batch = batch;
//! let kept = (&Probe(&batch)).kept(); // a copy of the caller's value if `B: Clone`
//! loop {
//!     { let mut s = s;                // `mut` reference: a fresh one per attempt
//!       async { let _ = &mut x; let _ = &mut batch; /* body */ } }
//!     ..
//!     kept.restore(&mut batch);       // before a retry: the caller's value again
//! }
//! ```
//!
//! The `let _ = &mut x;` makes the attempt capture each by-value argument by
//! unique borrow: `&mut X: Send` needs only `X: Send`, where the shared
//! borrow the body may need would make the future `Send` only for `X: Sync`
//! (an `mpsc::Receiver`, an axum `Request`). A by-value `mut` argument whose
//! type is not `Clone` with the bounds in scope (a generic `F: FnMut`) is
//! carried from one attempt to the next, as a `&mut` argument would be.
//! Each statement carries the argument's `#[cfg]` attributes, so that an
//! argument configured out is not named.

use proc_macro2::{Span, TokenStream};
use quote::{format_ident, quote};
use syn::ext::IdentExt;
use syn::{Attribute, FnArg, Ident, Pat, Signature, Stmt, Type};

/// The statements the loop needs for the function's arguments.
#[derive(Default)]
pub struct Arguments {
    /// Before the loop: by-value arguments rebound `mut`, so that the
    /// attempt can capture them by unique borrow, and the caller's value of
    /// each `mut` one kept.
    pub before: TokenStream,
    /// At the start of each attempt: a fresh copy of each `mut` reference.
    pub fresh: TokenStream,
    /// Inside each async attempt: a unique borrow of each by-value argument,
    /// so the attempt's future captures `&mut T` (`Send` when `T: Send`)
    /// rather than `&T` (`Send` only when `T: Sync`).
    pub capture: TokenStream,
    /// Before each retry: the caller's value of each `mut` argument back.
    pub restore: TokenStream,
    /// The by-value arguments, which a rule names by reference.
    pub by_value: Vec<Ident>,
}

impl Arguments {
    /// `let mut x = x;`, so the attempt can borrow `x` uniquely.
    fn by_value(&mut self, ident: &Ident, cfg: &[Attribute], is_async: bool) {
        self.by_value.push(ident.clone());
        if is_async {
            self.before.extend(quote! {
                #(#cfg)*
                #[allow(unused_mut, clippy::redundant_locals, clippy::used_underscore_binding)]
                let mut #ident = #ident;
            });
            self.unique(ident, cfg);
        }
    }

    fn unique(&mut self, ident: &Ident, cfg: &[Attribute]) {
        self.capture.extend(quote! {
            #(#cfg)*
            #[allow(clippy::used_underscore_binding)]
            let _ = &mut #ident;
        });
    }

    /// A by-value `mut` argument: rebound, and the caller's value kept to
    /// restore before each retry, if its type is `Clone`.
    fn kept(&mut self, ident: &Ident, cfg: &[Attribute], private: &TokenStream, is_async: bool) {
        self.by_value.push(ident.clone());
        self.before.extend(quote! {
            #(#cfg)*
            #[allow(unused_mut, clippy::redundant_locals, clippy::used_underscore_binding)]
            let mut #ident = #ident;
        });
        self.keep(ident, cfg, private, is_async);
    }

    /// The caller's value of `ident`, already bound `mut`, kept.
    fn keep(&mut self, ident: &Ident, cfg: &[Attribute], private: &TokenStream, is_async: bool) {
        let kept = format_ident!("__kept_{}", ident.unraw(), span = Span::mixed_site());
        self.before.extend(quote! {
            #(#cfg)*
            #[allow(clippy::used_underscore_binding)]
            let #kept = {
                #[allow(unused_imports)]
                use #private::{KeepCarried as _, KeepClone as _};
                (&#private::Probe(&#ident)).kept()
            };
        });
        self.restore.extend(quote! {
            #(#cfg)*
            #[allow(clippy::used_underscore_binding)]
            #kept.restore(&mut #ident);
        });
        if is_async {
            self.unique(ident, cfg);
        }
    }

    fn fresh(&mut self, ident: &Ident, cfg: &[Attribute], copy: TokenStream) {
        self.fresh.extend(quote! {
            #(#cfg)*
            #[allow(unused_mut)]
            let mut #ident = #copy;
        });
    }
}

/// The `#[cfg]` attributes of an argument, with those a `#[cfg_attr]`
/// writes: `#[cfg_attr(feature = "x", cfg(unix))]` is kept as
/// `#[cfg_attr(feature = "x", cfg(unix))]`, and the other attributes it
/// writes (an `allow`, a helper attribute) are left out, since they belong to
/// the parameter and not to the statements that name it.
fn cfg(attrs: &[Attribute]) -> Vec<Attribute> {
    attrs
        .iter()
        .filter_map(|attr| {
            let meta = configuring(&attr.meta)?;
            Some(syn::parse_quote!(#[#meta]))
        })
        .collect()
}

/// `meta` as far as it configures the item out: a `cfg(..)` whole, and a
/// `cfg_attr(predicate, ..)` with only the `cfg`s it writes, if any.
fn configuring(meta: &syn::Meta) -> Option<TokenStream> {
    use syn::punctuated::Punctuated;
    use syn::{Meta, Token};
    if meta.path().is_ident("cfg") {
        return Some(quote!(#meta));
    }
    if !meta.path().is_ident("cfg_attr") {
        return None;
    }
    let Meta::List(list) = meta else {
        return None;
    };
    let (predicate, written) = list
        .parse_args_with(|input: syn::parse::ParseStream<'_>| {
            let predicate: Meta = input.parse()?;
            input.parse::<Token![,]>()?;
            let written = Punctuated::<Meta, Token![,]>::parse_terminated(input)?;
            Ok((predicate, written))
        })
        .ok()?;
    let kept: Vec<TokenStream> = written.iter().filter_map(configuring).collect();
    (!kept.is_empty()).then(|| quote!(cfg_attr(#predicate, #(#kept),*)))
}

/// What the loop does with each argument of `sig`; the `mut` of a by-value
/// argument moves from the signature to its rebinding.
pub fn arguments(sig: &mut Signature, private: &TokenStream, is_async: bool) -> Arguments {
    let mut arguments = Arguments::default();
    for input in &mut sig.inputs {
        let typed = match input {
            FnArg::Typed(typed) => typed,
            // `mut self` is a by-value `mut` argument like any other: the
            // caller's value is kept (if `Self: Clone`) and restored before
            // each retry.
            FnArg::Receiver(receiver) if is_mut_self(receiver) => {
                arguments.keep(&Ident::from(receiver.self_token), &[], private, is_async);
                continue;
            }
            // `self` by value cannot be rebound: it is made `mut` in the
            // signature instead (invisible to callers), so that the attempt
            // can borrow it uniquely.
            FnArg::Receiver(receiver) if receiver.reference.is_none() && is_async => {
                receiver.mutability = Some(Default::default());
                let token = receiver.self_token;
                arguments.capture.extend(quote!(let _ = &mut #token;));
                continue;
            }
            FnArg::Receiver(_) => continue,
        };
        let cfg = cfg(&typed.attrs);
        let Pat::Ident(pat) = &mut *typed.pat else {
            // A destructuring pattern (`Json(body): Json<Input>`): each
            // binding by value, whatever its type.
            for (ident, mutable) in bindings(&mut typed.pat) {
                if mutable {
                    arguments.kept(&ident, &cfg, private, is_async);
                } else {
                    arguments.by_value(&ident, &cfg, is_async);
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
                arguments.fresh(&ident, &cfg, copy);
            }
            (_, false) => arguments.by_value(&ident, &cfg, is_async),
            (_, true) => arguments.kept(&ident, &cfg, private, is_async),
        }
    }
    arguments
}

/// A by-value `mut` argument, as the `# Retries` section lists it: its name,
/// and the configuration it is compiled in, if its `#[cfg]` attributes
/// restrict it (`None`: always).
pub struct KeptArgument {
    pub name: String,
    pub cfg: Option<TokenStream>,
}

/// The by-value `mut` arguments of `sig`, by name, as its `# Retries`
/// section lists them.
pub fn kept(sig: &Signature) -> Vec<KeptArgument> {
    let mut sig = sig.clone();
    let mut kept = Vec::new();
    for input in &mut sig.inputs {
        let typed = match input {
            FnArg::Receiver(receiver) if is_mut_self(receiver) => {
                kept.push(KeptArgument {
                    name: "self".to_owned(),
                    cfg: None,
                });
                continue;
            }
            FnArg::Receiver(_) => continue,
            FnArg::Typed(typed) => typed,
        };
        if matches!(&*typed.ty, Type::Reference(_)) && matches!(&*typed.pat, Pat::Ident(_)) {
            continue;
        }
        let predicates: Vec<TokenStream> = cfg(&typed.attrs)
            .iter()
            .filter_map(|attr| predicate(&attr.meta))
            .collect();
        let cfg = (!predicates.is_empty()).then(|| quote!(all(#(#predicates),*)));
        let named = bindings(&mut typed.pat);
        kept.extend(
            named
                .into_iter()
                .filter(|(_, mutable)| *mutable)
                .map(|(ident, _)| KeptArgument {
                    name: ident.unraw().to_string(),
                    cfg: cfg.clone(),
                }),
        );
    }
    kept
}

/// The configuration predicate under which an attribute that [`configuring`]
/// kept leaves the argument in: `cfg(p)` is `p`, and
/// `cfg_attr(p, cfg(q), ..)` is `any(not(p), all(q, ..))`.
fn predicate(meta: &syn::Meta) -> Option<TokenStream> {
    use syn::punctuated::Punctuated;
    use syn::{Meta, Token};
    let Meta::List(list) = meta else {
        return None;
    };
    if meta.path().is_ident("cfg") {
        return Some(list.tokens.clone());
    }
    let (condition, written) = list
        .parse_args_with(|input: syn::parse::ParseStream<'_>| {
            let condition: Meta = input.parse()?;
            input.parse::<Token![,]>()?;
            let written = Punctuated::<Meta, Token![,]>::parse_terminated(input)?;
            Ok((condition, written))
        })
        .ok()?;
    let inner: Vec<TokenStream> = written.iter().filter_map(predicate).collect();
    Some(quote!(any(not(#condition), all(#(#inner),*))))
}

/// The by-value bindings of a destructuring pattern, with whether each was
/// `mut` (its `mut` taken off: the rebinding carries it). Bindings by `ref`,
/// and those under `&` or `|`, are left alone.
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

/// `#[async_trait]`'s `let x = x;` moves, with the caller's value of each
/// `mut` argument kept and every argument captured by unique borrow, as in
/// [`arguments`].
pub fn async_trait_moves(
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
                return quote!(#stmt);
            };
            let Pat::Ident(pat) = &local.pat else {
                return quote!(#stmt);
            };
            let ident = pat.ident.clone();
            if ident == "__self" && !receiver_by_value {
                return quote!(#stmt);
            }
            let cfg = cfg(&local.attrs);
            let attrs = &local.attrs;
            let init = local.init.as_ref().map(|init| &init.expr);
            arguments.by_value.push(ident.clone());
            if pat.mutability.is_some() {
                arguments.keep(&ident, &cfg, private, true);
            } else {
                arguments.unique(&ident, &cfg);
            }
            quote! {
                #(#attrs)*
                #[allow(unused_mut)]
                let mut #ident = #init;
            }
        })
        .collect();
    (moves, arguments)
}

/// `mut self`: a by-value `mut` argument like any other, kept (if
/// `Self: Clone`) and restored before each retry.
fn is_mut_self(receiver: &syn::Receiver) -> bool {
    receiver.reference.is_none() && receiver.mutability.is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The `# Retries` section names exactly the arguments that are restored
    /// or carried: by value and `mut`, in patterns too; never references.
    #[test]
    fn the_kept_arguments_are_the_by_value_mut_ones() {
        let sig: Signature = syn::parse_quote! {
            fn f(mut batch: Vec<u8>, id: u64, (mut left, right): (A, B), mut r: &mut R, mut r#type: T)
        };
        let names: Vec<String> = kept(&sig).into_iter().map(|kept| kept.name).collect();
        assert_eq!(names, ["batch", "left", "type"]);
    }
}
