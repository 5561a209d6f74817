//! Reads `#[retry(key = value, ...)]` into a typed [`Config`], keeping the
//! span of every key and value, and the annotated item into its parts.
//!
//! [`KEYS`] is the one list of keys: the parser dispatches through it, the
//! "unknown key" error lists it and the spelling suggestions search it. Each
//! key has one `set_<key>` method that turns its value into its type, in the
//! file of its family: `schedule` (the backoff and time limits), `rules`
//! (functions called with an outcome) and `shared` (shared state, where the
//! runtime lives). A `set_` method rejects what cannot be read as the key's
//! type (a string for `max`, a negative number); `check.rs` judges the values
//! read (`max = 0`, `cap` below `base`) and the keys against each other.
//!
//! A new key: a `set_<key>` in its family's file, a row in [`KEYS`], a field
//! in [`Config`], then its checks in `check.rs` and its code in `expand/`.

mod function;
mod hedge;
mod rules;
mod schedule;
mod shared;

use std::collections::HashMap;

use core::time::Duration;

use proc_macro2::{Span, TokenStream};
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Ident, Lit, Path, Token};

pub use function::Function;
pub use hedge::Hedge;
pub use schedule::Jitter;
pub use shared::Nested;

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
        // `max: 3`, `max => 3`, `max == 3`: on the separator written instead
        // of `=`, the token at fault.
        if !input.peek(Token![=]) || input.peek(Token![==]) || input.peek(Token![=>]) {
            let fork = input.fork();
            let separator = if let Ok(token) = fork.parse::<Token![==]>() {
                Some(("==", quote::quote!(#token)))
            } else if let Ok(token) = fork.parse::<Token![=>]>() {
                Some(("=>", quote::quote!(#token)))
            } else if let Ok(token) = fork.parse::<Token![::]>() {
                Some(("::", quote::quote!(#token)))
            } else if let Ok(token) = fork.parse::<Token![:]>() {
                Some((":", quote::quote!(#token)))
            } else {
                None
            };
            if let Some((written, token)) = separator {
                return Err(syn::Error::new_spanned(
                    token,
                    format!(
                        "`{key}` takes its value after `=`, not `{written}`: write `{key} = ...`"
                    ),
                ));
            }
            return Err(syn::Error::new(
                key.span(),
                format!("`{key}` needs a value: write `{key} = ...`, such as `max = 4`"),
            ));
        }
        let eq = input.parse::<Token![=]>()?;
        if input.is_empty() || input.peek(Token![,]) {
            // On `key =`: at the end of the attribute, `input.error` would
            // point at the whole attribute.
            return Err(syn::Error::new_spanned(
                quote::quote!(#key #eq),
                format!("`{key} =` is missing its value: write one after the `=`"),
            ));
        }
        let value = input.parse()?;
        Ok(Arg { key, value })
    }
}

pub fn parse_args(args: TokenStream) -> syn::Result<Vec<Arg>> {
    let args = Punctuated::<Arg, Token![,]>::parse_terminated.parse2(args)?;
    Ok(args.into_iter().collect())
}

/// One key of the attribute.
pub struct Key {
    pub name: &'static str,
    /// Whether a `policy = ...` sets it at run time, so that it cannot also
    /// be written next to `policy`.
    pub in_policy: bool,
    /// Reads the value into the config.
    set: fn(&mut Config, &Expr) -> syn::Result<()>,
}

impl Key {
    const fn new(
        name: &'static str,
        in_policy: bool,
        set: fn(&mut Config, &Expr) -> syn::Result<()>,
    ) -> Self {
        Key {
            name,
            in_policy,
            set,
        }
    }
}

/// The keys, in the order the documentation lists them.
pub const KEYS: [Key; 22] = [
    Key::new("max", true, Config::set_max),
    Key::new("base", true, Config::set_base),
    Key::new("cap", true, Config::set_cap),
    Key::new("multiplier", true, Config::set_multiplier),
    Key::new("jitter", true, Config::set_jitter),
    Key::new("deadline", true, Config::set_deadline),
    Key::new("on", false, Config::set_on),
    Key::new("on_ok", false, Config::set_on_ok),
    Key::new("retry_after", false, Config::set_retry_after),
    Key::new("retry_after_ok", false, Config::set_retry_after_ok),
    Key::new("budget", false, Config::set_budget),
    Key::new("timeout", true, Config::set_timeout),
    Key::new("timed_out", false, Config::set_timed_out),
    Key::new("breaker", false, Config::set_breaker),
    Key::new("circuit_open", false, Config::set_circuit_open),
    Key::new("hedge", false, Config::set_hedge),
    Key::new("on_retry", false, Config::set_on_retry),
    Key::new("on_retry_ok", false, Config::set_on_retry_ok),
    Key::new("on_give_up", false, Config::set_on_give_up),
    Key::new("nested", true, Config::set_nested),
    Key::new("policy", false, Config::set_policy),
    Key::new("crate", false, Config::set_crate),
];

/// The key named `name`, if there is one.
pub fn key(name: &str) -> Option<&'static Key> {
    KEYS.iter().find(|key| key.name == name)
}

/// The attribute's keys as typed values, defaults filled in.
pub struct Config {
    pub max: u32,
    pub base: Duration,
    pub cap: Duration,
    pub multiplier: f64,
    pub jitter: Jitter,
    pub deadline: Option<Duration>,
    pub on: Option<Expr>,
    pub on_ok: Option<Expr>,
    pub retry_after: Option<Expr>,
    pub retry_after_ok: Option<Expr>,
    pub budget: Option<Expr>,
    pub timeout: Option<Duration>,
    /// How an attempt cut off by `timeout` fails: `Fn(TimedOut) -> E`.
    pub timed_out: Option<Expr>,
    pub breaker: Option<Expr>,
    /// How a call the breaker refuses fails: `Fn(CircuitOpen) -> E`.
    pub circuit_open: Option<Expr>,
    pub hedge: Option<Hedge>,
    pub on_retry: Option<Expr>,
    pub on_retry_ok: Option<Expr>,
    /// Called once when the call gives up: `Fn(&R, &Stopped)`.
    pub on_give_up: Option<Expr>,
    pub nested: Nested,
    /// A policy built at run time, instead of the literal keys.
    pub policy: Option<Expr>,
    pub krate: Option<Path>,
    /// The keys as written, by name.
    pub keys: HashMap<&'static str, Ident>,
    /// Where each value was written, by key name.
    pub values: HashMap<&'static str, Span>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max: 3,
            base: Duration::from_millis(100),
            cap: Duration::from_secs(10),
            multiplier: 2.0,
            jitter: Jitter::Full,
            deadline: None,
            on: None,
            on_ok: None,
            retry_after: None,
            retry_after_ok: None,
            budget: None,
            timeout: None,
            timed_out: None,
            breaker: None,
            circuit_open: None,
            hedge: None,
            on_retry: None,
            on_retry_ok: None,
            on_give_up: None,
            nested: Nested::Once,
            policy: None,
            krate: None,
            keys: HashMap::new(),
            values: HashMap::new(),
        }
    }
}

impl Config {
    /// Reads one `key = value`. The key is known to be in [`KEYS`] and not
    /// set before.
    pub fn set(&mut self, key: &'static Key, written: &Ident, value: &Expr) -> syn::Result<()> {
        self.keys.insert(key.name, written.clone());
        self.values.insert(key.name, value.span());
        (key.set)(self, value)
    }
}

fn literal(value: &Expr) -> Option<&Lit> {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Group(group) => literal(&group.expr),
        _ => None,
    }
}

fn is_negative(value: &Expr) -> bool {
    matches!(value, Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)))
}
