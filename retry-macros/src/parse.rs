//! Reads `#[retry(key = value, ...)]` into a typed [`Config`], keeping the
//! span of every key and value, and the annotated item into its parts.
//!
//! [`KEYS`] is the one list of keys: the parser dispatches through it, the
//! "unknown key" error lists it and the spelling suggestions search it. Each
//! key has one `set_<key>` method that turns its value into its type; the
//! rules about the values (ranges, keys that exclude each other) are in
//! `check.rs`.

use std::collections::HashMap;

use core::time::Duration;

use proc_macro2::{Span, TokenStream};

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::parse::{Parse, ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::spanned::Spanned;
use syn::{Attribute, Block, Expr, ExprLit, Ident, Lit, Path, Signature, Stmt, Token, Visibility};

use retry_core::{parse_duration, DurationError};

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

/// `jitter = "..."`: how a wait is drawn below its ceiling.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Jitter {
    Full,
    Equal,
    Decorrelated,
    None,
}

impl Jitter {
    /// Every jitter, by the name the attribute takes.
    pub const ALL: [(&'static str, Jitter); 4] = [
        ("full", Jitter::Full),
        ("equal", Jitter::Equal),
        ("decorrelated", Jitter::Decorrelated),
        ("none", Jitter::None),
    ];

    /// The name of the runtime's `Jitter` variant.
    pub fn variant(self) -> &'static str {
        match self {
            Jitter::Full => "Full",
            Jitter::Equal => "Equal",
            Jitter::Decorrelated => "Decorrelated",
            Jitter::None => "None",
        }
    }
}

/// `nested = "..."`: what an outer function does with a failure an inner
/// retried function already retried.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Nested {
    Once,
    Retry,
}

impl Nested {
    /// The name of the runtime's `Nested` variant.
    pub fn variant(self) -> &'static str {
        match self {
            Nested::Once => "Once",
            Nested::Retry => "Retry",
        }
    }
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

/// The keys, in the order the documentation lists them.
pub const KEYS: [Key; 19] = [
    Key {
        name: "max",
        in_policy: true,
        set: Config::set_max,
    },
    Key {
        name: "base",
        in_policy: true,
        set: Config::set_base,
    },
    Key {
        name: "cap",
        in_policy: true,
        set: Config::set_cap,
    },
    Key {
        name: "multiplier",
        in_policy: true,
        set: Config::set_multiplier,
    },
    Key {
        name: "jitter",
        in_policy: true,
        set: Config::set_jitter,
    },
    Key {
        name: "deadline",
        in_policy: true,
        set: Config::set_deadline,
    },
    Key {
        name: "on",
        in_policy: false,
        set: Config::set_on,
    },
    Key {
        name: "on_ok",
        in_policy: false,
        set: Config::set_on_ok,
    },
    Key {
        name: "retry_after",
        in_policy: false,
        set: Config::set_retry_after,
    },
    Key {
        name: "retry_after_ok",
        in_policy: false,
        set: Config::set_retry_after_ok,
    },
    Key {
        name: "budget",
        in_policy: false,
        set: Config::set_budget,
    },
    Key {
        name: "timeout",
        in_policy: true,
        set: Config::set_timeout,
    },
    Key {
        name: "breaker",
        in_policy: false,
        set: Config::set_breaker,
    },
    Key {
        name: "hedge",
        in_policy: false,
        set: Config::set_hedge,
    },
    Key {
        name: "on_retry",
        in_policy: false,
        set: Config::set_on_retry,
    },
    Key {
        name: "on_retry_ok",
        in_policy: false,
        set: Config::set_on_retry_ok,
    },
    Key {
        name: "nested",
        in_policy: true,
        set: Config::set_nested,
    },
    Key {
        name: "policy",
        in_policy: false,
        set: Config::set_policy,
    },
    Key {
        name: "crate",
        in_policy: false,
        set: Config::set_crate,
    },
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
    pub breaker: Option<Expr>,
    pub hedge: Option<crate::hedge::Hedge>,
    pub on_retry: Option<Expr>,
    pub on_retry_ok: Option<Expr>,
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
            breaker: None,
            hedge: None,
            on_retry: None,
            on_retry_ok: None,
            nested: Nested::Once,
            policy: None,
            krate: None,
            keys: HashMap::new(),
            values: HashMap::new(),
        }
    }
}

const DURATION_HELP: &str =
    "write a number and a unit, such as \"200ms\", \"1.5s\" or \"1m30s\" (units: ns, us, ms, s, m, h)";

impl Config {
    /// Reads one `key = value`. The key is known to be in [`KEYS`] and not
    /// set before.
    pub fn set(&mut self, key: &'static Key, written: &Ident, value: &Expr) -> syn::Result<()> {
        self.keys.insert(key.name, written.clone());
        self.values.insert(key.name, value.span());
        (key.set)(self, value)
    }

    fn set_max(&mut self, value: &Expr) -> syn::Result<()> {
        let help = "`max` takes an integer, the number of attempts with the first call included: `max = 4`";
        let Some(Lit::Int(int)) = literal(value) else {
            return Err(match literal(value) {
                Some(Lit::Str(s)) => syn::Error::new(s.span(), format!("{help}, without quotes")),
                _ if is_negative(value) => syn::Error::new(
                    value.span(),
                    "`max` must be at least 1: it counts every attempt, the first call included",
                ),
                _ => syn::Error::new_spanned(value, help),
            });
        };
        self.max = int.base10_parse::<u32>().map_err(|_| {
            syn::Error::new(
                int.span(),
                format!("`max` must be a whole number from 1 to {}", u32::MAX),
            )
        })?;
        Ok(())
    }

    fn set_base(&mut self, value: &Expr) -> syn::Result<()> {
        self.base = duration("base", value)?;
        Ok(())
    }

    fn set_cap(&mut self, value: &Expr) -> syn::Result<()> {
        self.cap = duration("cap", value)?;
        Ok(())
    }

    fn set_multiplier(&mut self, value: &Expr) -> syn::Result<()> {
        let help = "`multiplier` takes a number of at least 1, such as `multiplier = 2` (each ceiling doubles)";
        let parsed = match literal(value) {
            Some(Lit::Int(int)) => int.base10_parse::<f64>(),
            Some(Lit::Float(float)) => float.base10_parse::<f64>(),
            Some(Lit::Str(s)) => {
                return Err(syn::Error::new(s.span(), format!("{help}, without quotes")))
            }
            _ if is_negative(value) => return Err(syn::Error::new(
                value.span(),
                "`multiplier` must be at least 1: below 1 each wait would be shorter than the last",
            )),
            _ => return Err(syn::Error::new_spanned(value, help)),
        };
        match parsed {
            Ok(m) if m.is_finite() => {
                self.multiplier = m;
                Ok(())
            }
            _ => Err(syn::Error::new_spanned(
                value,
                format!("{help}; this one is not a finite number"),
            )),
        }
    }

    fn set_jitter(&mut self, value: &Expr) -> syn::Result<()> {
        let names = Jitter::ALL
            .map(|(name, _)| format!("\"{name}\""))
            .join(", ");
        let Some(Lit::Str(s)) = literal(value) else {
            let written = value.to_token_stream().to_string();
            let example = Jitter::ALL
                .iter()
                .find(|(n, _)| *n == written)
                .map_or("full", |(n, _)| n);
            return Err(syn::Error::new(
                value.span(),
                format!("`jitter` takes a string: write `jitter = \"{example}\"` (one of {names})"),
            ));
        };
        let name = s.value();
        if let Some(&(_, jitter)) = Jitter::ALL.iter().find(|(n, _)| *n == name) {
            self.jitter = jitter;
            return Ok(());
        }
        let suggestion = crate::suggest::closest(&name, Jitter::ALL.map(|(n, _)| n))
            .map(|n| format!("; did you mean \"{n}\"?"))
            .unwrap_or_default();
        Err(syn::Error::new(
            s.span(),
            format!("unknown jitter {name:?}{suggestion} The jitters are {names}"),
        ))
    }

    fn set_deadline(&mut self, value: &Expr) -> syn::Result<()> {
        self.deadline = Some(duration("deadline", value)?);
        Ok(())
    }

    fn set_timeout(&mut self, value: &Expr) -> syn::Result<()> {
        self.timeout = Some(duration("timeout", value)?);
        Ok(())
    }

    fn set_on(&mut self, value: &Expr) -> syn::Result<()> {
        self.on = Some(rule("on", RULE_ON, value)?);
        Ok(())
    }

    fn set_on_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_ok = Some(rule("on_ok", RULE_ON_OK, value)?);
        Ok(())
    }

    fn set_retry_after(&mut self, value: &Expr) -> syn::Result<()> {
        self.retry_after = Some(rule("retry_after", RULE_RETRY_AFTER, value)?);
        Ok(())
    }

    fn set_retry_after_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.retry_after_ok = Some(rule("retry_after_ok", RULE_RETRY_AFTER_OK, value)?);
        Ok(())
    }

    fn set_on_retry(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_retry = Some(rule("on_retry", RULE_ON_RETRY, value)?);
        Ok(())
    }

    fn set_on_retry_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_retry_ok = Some(rule("on_retry_ok", RULE_ON_RETRY_OK, value)?);
        Ok(())
    }

    fn set_nested(&mut self, value: &Expr) -> syn::Result<()> {
        self.nested = match literal(value) {
            Some(Lit::Str(s)) if s.value() == "once" => Nested::Once,
            Some(Lit::Str(s)) if s.value() == "retry" => Nested::Retry,
            Some(Lit::Str(s)) => return Err(syn::Error::new(
                s.span(),
                format!(
                    "unknown `nested` value {:?}: write `nested = \"once\"` (the default: a failure that \
                     a retried function called here already retried is not retried again) or \
                     `nested = \"retry\"` (retry it here too)",
                    s.value()
                ),
            )),
            _ => return Err(syn::Error::new_spanned(
                value,
                "`nested` takes a string: `nested = \"once\"` or `nested = \"retry\"`",
            )),
        };
        Ok(())
    }

    /// `policy`: an expression of type `&Policy` or `&UntimedPolicy`, not a
    /// literal.
    fn set_policy(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`policy` takes an expression of type `&Policy` built at run time, such as \
                 `policy = &CONFIG.retry`; for a fixed policy, write its keys here instead",
            ));
        }
        self.policy = Some(value.clone());
        Ok(())
    }

    /// `budget`: an expression of type `&'static RetryBudget`, not a literal.
    fn set_budget(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`budget` takes a reference to a shared `static RetryBudget`, such as `budget = &API_BUDGET`",
            ));
        }
        self.budget = Some(value.clone());
        Ok(())
    }

    /// `breaker`: an expression of type `&CircuitBreaker`, not a literal.
    fn set_breaker(&mut self, value: &Expr) -> syn::Result<()> {
        if let Expr::Lit(_) = value {
            return Err(syn::Error::new_spanned(
                value,
                "`breaker` takes a reference to a shared `static CircuitBreaker`, such as `breaker = &INVENTORY`",
            ));
        }
        self.breaker = Some(value.clone());
        Ok(())
    }

    fn set_hedge(&mut self, value: &Expr) -> syn::Result<()> {
        self.hedge = Some(crate::hedge::parse(value)?);
        Ok(())
    }

    fn set_crate(&mut self, value: &Expr) -> syn::Result<()> {
        let path = match literal(value) {
            Some(Lit::Str(s)) => s.parse::<Path>().map_err(|_| {
                syn::Error::new(
                    s.span(),
                    format!("`crate` must name a path, such as `crate = \"::retry_runtime\"`; {:?} is not one", s.value()),
                )
            })?,
            _ => return Err(syn::Error::new(
                value.span(),
                "`crate` takes the path of the runtime as a string: `crate = \"::my_retry\"`",
            )),
        };
        self.krate = Some(path);
        Ok(())
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

pub(crate) fn duration(key: &str, value: &Expr) -> syn::Result<Duration> {
    let text = match literal(value) {
        Some(Lit::Str(s)) => s,
        // A whole number most likely means milliseconds, a decimal seconds.
        Some(Lit::Int(int)) => return Err(bare_number(key, int.span(), int.base10_digits(), "ms")),
        Some(Lit::Float(float)) => {
            return Err(bare_number(key, float.span(), float.base10_digits(), "s"))
        }
        _ => {
            return Err(syn::Error::new(
                value.span(),
                format!(
                    "`{key}` takes a duration string such as `{key} = \"200ms\"`; {DURATION_HELP}"
                ),
            ))
        }
    };
    parse_duration(&text.value()).map_err(|error| {
        let hint = match error {
            DurationError::MissingUnit => format!(
                "; a number needs a unit: write `{key} = \"{}ms\"`",
                text.value()
            ),
            _ => format!("; {DURATION_HELP}"),
        };
        syn::Error::new(
            text.span(),
            format!(
                "invalid duration {:?} for `{key}`: {error}{hint}",
                text.value()
            ),
        )
    })
}

/// A number where a duration string belongs: suggest it with a unit.
fn bare_number(key: &str, span: Span, digits: &str, unit: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("`{key}` takes a duration string with a unit, not a bare number: write `{key} = \"{digits}{unit}\"`"),
    )
}

const RULE_ON: &str =
    "a function or closure `Fn(&E) -> bool` saying which errors to retry, such as `on = is_transient` or `on = |e| e.is_timeout()`";
const RULE_ON_OK: &str = "a function or closure `Fn(&T) -> bool` saying which `Ok` values to retry, such as `on_ok = |response| response.status() == 503`";
const RULE_RETRY_AFTER: &str = "a function or closure `Fn(&E) -> Option<Duration>` giving the wait a server asked for, such as `retry_after = |e| e.retry_after()`";
const RULE_ON_RETRY: &str = "a function or closure `Fn(&E, u32, Duration)`, called before each wait with the error, the number of the attempt that failed and the wait, such as `on_retry = |error, attempt, wait| log::warn!(...)`";
const RULE_ON_RETRY_OK: &str = "a function or closure `Fn(&T, u32, Duration)`, called before each wait with the `Ok` value `on_ok` retries, the attempt number and the wait";
const RULE_RETRY_AFTER_OK: &str = "a function or closure `Fn(&T) -> Option<Duration>` giving the wait a server asked for in an `Ok` value, such as `retry_after_ok = retry_runtime::classify::reqwest::retry_after`";

/// `on`, `on_ok`, `retry_after`, `retry_after_ok`, `on_retry` and
/// `on_retry_ok`: a path or a closure.
fn rule(key: &str, expected: &str, value: &Expr) -> syn::Result<Expr> {
    match value {
        Expr::Path(_) | Expr::Closure(_) => Ok(value.clone()),
        Expr::Lit(ExprLit {
            lit: Lit::Str(s), ..
        }) if s.parse::<Path>().is_ok() => Err(syn::Error::new(
            s.span(),
            format!(
                "`{key}` takes a function or closure, not a string: write `{key} = {}`",
                s.value()
            ),
        )),
        _ => Err(syn::Error::new_spanned(
            value,
            format!("`{key}` takes {expected}"),
        )),
    }
}
