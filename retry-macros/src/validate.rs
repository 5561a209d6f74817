//! Judges the keys and the function. Every mistake becomes one error spanned
//! on the token at fault, saying how to fix it; all mistakes are reported at
//! once.

use core::time::Duration;

use proc_macro2::{TokenStream, TokenTree};
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, FnArg, Lit, Path, ReturnType, Type};

use crate::attr::{Arg, Function};
use retry_core::{parse_duration, DurationError};

/// The keys this attribute knows, in the order the documentation lists them.
const KEYS: [&str; 18] = [
    "max",
    "base",
    "cap",
    "multiplier",
    "jitter",
    "deadline",
    "on",
    "on_ok",
    "retry_after",
    "retry_after_ok",
    "budget",
    "timeout",
    "breaker",
    "on_retry",
    "on_retry_ok",
    "nested",
    "policy",
    "crate",
];

/// The keys a `policy = ...` sets at run time, and so cannot also be given.
const POLICY_KEYS: [&str; 8] = [
    "max",
    "base",
    "cap",
    "multiplier",
    "jitter",
    "deadline",
    "timeout",
    "nested",
];

/// Names other retry libraries use, mapped to ours.
const ALIASES: [(&str, &str); 31] = [
    ("hook", "on_retry"),
    ("notify", "on_retry"),
    ("config", "policy"),
    ("nesting", "nested"),
    ("attempt_timeout", "timeout"),
    ("per_attempt_timeout", "timeout"),
    ("retry_budget", "budget"),
    ("throttle", "budget"),
    ("circuit_breaker", "breaker"),
    ("circuit", "breaker"),
    ("attempts", "max"),
    ("max_attempts", "max"),
    ("tries", "max"),
    ("max_tries", "max"),
    ("delay", "base"),
    ("initial", "base"),
    ("initial_delay", "base"),
    ("initial_backoff", "base"),
    ("min_delay", "base"),
    ("max_delay", "cap"),
    ("max_backoff", "cap"),
    ("factor", "multiplier"),
    ("backoff_multiplier", "multiplier"),
    ("when", "on"),
    ("retry_if", "on"),
    ("retry_on", "on"),
    ("if", "on"),
    ("predicate", "on"),
    ("timeout_total", "deadline"),
    ("total_timeout", "deadline"),
    ("jiter", "jitter"),
];

const JITTERS: [(&str, &str); 4] = [
    ("full", "Full"),
    ("equal", "Equal"),
    ("decorrelated", "Decorrelated"),
    ("none", "None"),
];

const DURATION_HELP: &str =
    "write a number and a unit, such as \"200ms\", \"1.5s\" or \"1m30s\" (units: ns, us, ms, s, m, h)";

/// A checked policy, ready to expand.
pub struct Config {
    pub max: u32,
    pub base: Duration,
    pub cap: Duration,
    pub multiplier: f64,
    /// The `Jitter` variant's name.
    pub jitter: &'static str,
    pub deadline: Option<Duration>,
    pub on: Option<Expr>,
    pub on_ok: Option<Expr>,
    pub retry_after: Option<Expr>,
    pub retry_after_ok: Option<Expr>,
    pub budget: Option<Expr>,
    pub timeout: Option<(Duration, proc_macro2::Span)>,
    pub breaker: Option<Expr>,
    pub on_retry: Option<Expr>,
    pub on_retry_ok: Option<Expr>,
    /// The `Nested` variant's name.
    pub nested: &'static str,
    /// A policy built at run time, instead of the literal keys.
    pub policy: Option<Expr>,
    pub krate: Option<Path>,
}

impl Config {
    /// Where to report an error type that cannot hold `TimedOut`: the
    /// `timeout` key, or a `policy` that may carry a timeout.
    pub fn timeout_span(&self) -> Option<proc_macro2::Span> {
        match (&self.timeout, &self.policy) {
            (Some((_, span)), _) => Some(*span),
            (None, Some(policy)) => Some(policy.span()),
            (None, None) => None,
        }
    }
}

/// Collects errors so that every mistake is reported, each once.
#[derive(Default)]
pub struct Errors(Option<syn::Error>);

impl Errors {
    pub fn push(&mut self, error: syn::Error) {
        match &mut self.0 {
            Some(errors) => errors.combine(error),
            None => self.0 = Some(error),
        }
    }

    fn add(&mut self, tokens: impl ToTokens, message: impl core::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn finish<T>(self, value: T) -> Result<T, syn::Error> {
        self.0.map_or(Ok(value), Err)
    }
}

pub fn config(args: Vec<Arg>) -> syn::Result<Config> {
    let mut errors = Errors::default();
    let mut config = Config {
        max: 3,
        base: Duration::from_millis(100),
        cap: Duration::from_secs(10),
        multiplier: 2.0,
        jitter: "Full",
        deadline: None,
        on: None,
        on_ok: None,
        retry_after: None,
        retry_after_ok: None,
        budget: None,
        timeout: None,
        breaker: None,
        on_retry: None,
        on_retry_ok: None,
        nested: "Once",
        policy: None,
        krate: None,
    };
    // Keys `policy` would conflict with, as written.
    let mut policy_keys: Vec<syn::Ident> = Vec::new();
    let mut retry_after_ok_key = None;
    let mut seen: Vec<String> = Vec::new();
    // Where `base` and `cap` were written, for the error when they disagree.
    let mut base_span = None;
    let mut cap_span = None;
    for Arg { key, value } in args {
        let name = key.to_string();
        if seen.contains(&name) {
            errors.add(&key, format!("`{name}` is set more than once; keep one"));
            continue;
        }
        seen.push(name.clone());
        if POLICY_KEYS.contains(&name.as_str()) {
            policy_keys.push(key.clone());
        }
        let result = match name.as_str() {
            "max" => attempts(&value).map(|max| config.max = max),
            "base" => positive_duration("base", &value).map(|base| {
                config.base = base;
                base_span = Some(value.span());
            }),
            "cap" => duration("cap", &value).map(|cap| {
                config.cap = cap;
                cap_span = Some(value.span());
            }),
            "multiplier" => multiplier(&value).map(|m| config.multiplier = m),
            "jitter" => jitter(&value).map(|j| config.jitter = j),
            "deadline" => positive_duration("deadline", &value).map(|d| config.deadline = Some(d)),
            "on" => rule("on", RULE_ON, &value).map(|()| config.on = Some(value)),
            "on_ok" => rule("on_ok", RULE_ON_OK, &value).map(|()| config.on_ok = Some(value)),
            "retry_after" => rule("retry_after", RULE_RETRY_AFTER, &value)
                .map(|()| config.retry_after = Some(value)),
            "retry_after_ok" => rule("retry_after_ok", RULE_RETRY_AFTER_OK, &value).map(|()| {
                retry_after_ok_key = Some(key.clone());
                config.retry_after_ok = Some(value);
            }),
            "budget" => budget(&value).map(|()| config.budget = Some(value)),
            "breaker" => breaker(&value).map(|()| config.breaker = Some(value)),
            "on_retry" => {
                rule("on_retry", RULE_ON_RETRY, &value).map(|()| config.on_retry = Some(value))
            }
            "on_retry_ok" => rule("on_retry_ok", RULE_ON_RETRY_OK, &value)
                .map(|()| config.on_retry_ok = Some(value)),
            "nested" => nested(&value).map(|n| config.nested = n),
            "policy" => policy(&value).map(|()| config.policy = Some(value)),
            "timeout" => positive_duration("timeout", &value)
                .map(|d| config.timeout = Some((d, value.span()))),
            "crate" => crate_path(&value).map(|path| config.krate = Some(path)),
            _ => Err(unknown_key(&key)),
        };
        if let Err(error) = result {
            errors.push(error);
        }
    }
    if config.policy.is_some() {
        for key in &policy_keys {
            errors.add(
                key,
                format!(
                    "`{key}` cannot be set next to `policy`, which sets it at run time; set it in \
                     the policy, or remove `policy` to write the policy here"
                ),
            );
        }
    }
    if let (Some(key), None) = (&retry_after_ok_key, &config.on_ok) {
        errors.add(
            key,
            "`retry_after_ok` reads a hint from `Ok` values that `on_ok` retries, and there is no \
             `on_ok`; add `on_ok = ...` to say which `Ok` values to retry",
        );
    }
    if config.cap < config.base {
        let (base, cap) = (config.base, config.cap);
        match (cap_span, base_span) {
            (Some(span), _) => errors.push(syn::Error::new(
                span,
                format!("`cap` ({cap:?}) is below `base` ({base:?}); make `cap` at least `base`"),
            )),
            (None, Some(span)) => errors.push(syn::Error::new(
                span,
                format!(
                    "`base` ({base:?}) is above the default `cap` of 10s; lower `base` or set `cap` too"
                ),
            )),
            (None, None) => {}
        }
    }
    errors.finish(config)
}

fn unknown_key(key: &syn::Ident) -> syn::Error {
    let name = key.to_string();
    let list = KEYS.map(|k| format!("`{k}`")).join(", ");
    let message = if matches!(name.as_str(), "retries" | "max_retries") {
        format!(
            "unknown key `{name}`; use `max`, which counts every attempt including the first: \
             `{name} = 3` is `max = 4`"
        )
    } else if let Some(suggestion) = closest(&name, &KEYS, &ALIASES) {
        format!("unknown key `{name}`; did you mean `{suggestion}`? The keys are {list}")
    } else {
        format!("unknown key `{name}`; the keys are {list}")
    };
    syn::Error::new(key.span(), message)
}

/// The candidate closest to `name`, if it is close enough to be a typo, or
/// the key an alias from another library stands for.
fn closest(
    name: &str,
    candidates: &[&'static str],
    aliases: &[(&str, &'static str)],
) -> Option<&'static str> {
    if let Some(&(_, key)) = aliases.iter().find(|(alias, _)| *alias == name) {
        return Some(key);
    }
    candidates
        .iter()
        .map(|&candidate| (edit_distance(name, candidate), candidate))
        .filter(|&(distance, candidate)| {
            distance <= candidate.len().max(name.len()) / 3 + 1 && distance < candidate.len()
        })
        .min_by_key(|&(distance, _)| distance)
        .map(|(_, candidate)| candidate)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = diagonal + usize::from(ca != cb);
            diagonal = row[j + 1];
            row[j + 1] = substitution.min(row[j] + 1).min(row[j + 1] + 1);
        }
    }
    row[b.len()]
}

fn literal(value: &Expr) -> Option<&Lit> {
    match value {
        Expr::Lit(ExprLit { lit, .. }) => Some(lit),
        Expr::Group(group) => literal(&group.expr),
        _ => None,
    }
}

fn attempts(value: &Expr) -> syn::Result<u32> {
    let help =
        "`max` takes an integer, the number of attempts with the first call included: `max = 4`";
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
    match int.base10_parse::<u32>() {
        Ok(0) => Err(syn::Error::new(
            int.span(),
            "`max = 0` allows no attempt at all: `max` counts every attempt, the first call \
             included; write `max = 1` for a single attempt without retries",
        )),
        Ok(max) => Ok(max),
        Err(_) => Err(syn::Error::new(
            int.span(),
            format!("`max` must be a whole number from 1 to {}", u32::MAX),
        )),
    }
}

fn is_negative(value: &Expr) -> bool {
    matches!(value, Expr::Unary(unary) if matches!(unary.op, syn::UnOp::Neg(_)))
}

fn duration(key: &str, value: &Expr) -> syn::Result<Duration> {
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
fn bare_number(key: &str, span: proc_macro2::Span, digits: &str, unit: &str) -> syn::Error {
    syn::Error::new(
        span,
        format!("`{key}` takes a duration string with a unit, not a bare number: write `{key} = \"{digits}{unit}\"`"),
    )
}

fn positive_duration(key: &str, value: &Expr) -> syn::Result<Duration> {
    let duration = duration(key, value)?;
    if duration.is_zero() {
        let why = match key {
            "base" => "it is the ceiling of the first wait, and every later one grows from it",
            "deadline" => "a zero deadline leaves no time for any attempt; remove `deadline` for no limit",
            _ => "a zero timeout cuts every attempt off before it starts; remove `timeout` for no limit",
        };
        return Err(syn::Error::new_spanned(
            value,
            format!("`{key}` must be above zero: {why}"),
        ));
    }
    Ok(duration)
}

fn multiplier(value: &Expr) -> syn::Result<f64> {
    let help = "`multiplier` takes a number of at least 1, such as `multiplier = 2` (each ceiling doubles)";
    let parsed =
        match literal(value) {
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
        Ok(m) if m.is_finite() && m >= 1.0 => Ok(m),
        Ok(m) if m.is_finite() => Err(syn::Error::new(
            value.span(),
            format!("`multiplier = {m}` must be at least 1: below 1 each wait would be shorter than the last"),
        )),
        _ => Err(syn::Error::new_spanned(value, format!("{help}; this one is not a finite number"))),
    }
}

fn jitter(value: &Expr) -> syn::Result<&'static str> {
    let names = JITTERS.map(|(name, _)| format!("\"{name}\"")).join(", ");
    match literal(value) {
        Some(Lit::Str(s)) => {
            let name = s.value();
            if let Some(&(_, variant)) = JITTERS.iter().find(|(n, _)| *n == name) {
                return Ok(variant);
            }
            let candidates = JITTERS.map(|(n, _)| n);
            let suggestion = closest(&name, &candidates, &[])
                .map(|n| format!("; did you mean \"{n}\"?"))
                .unwrap_or_default();
            Err(syn::Error::new(
                s.span(),
                format!("unknown jitter {name:?}{suggestion} The jitters are {names}"),
            ))
        }
        _ => {
            let written = value.to_token_stream().to_string();
            let example = JITTERS
                .iter()
                .find(|(n, _)| *n == written)
                .map_or("full", |(n, _)| n);
            Err(syn::Error::new(
                value.span(),
                format!("`jitter` takes a string: write `jitter = \"{example}\"` (one of {names})"),
            ))
        }
    }
}

const RULE_ON: &str =
    "a function or closure `Fn(&E) -> bool` saying which errors to retry, such as `on = is_transient` or `on = |e| e.is_timeout()`";
const RULE_ON_OK: &str = "a function or closure `Fn(&T) -> bool` saying which `Ok` values to retry, such as `on_ok = |response| response.status() == 503`";
const RULE_RETRY_AFTER: &str = "a function or closure `Fn(&E) -> Option<Duration>` giving the wait a server asked for, such as `retry_after = |e| e.retry_after()`";
const RULE_ON_RETRY: &str = "a function or closure `Fn(&E, u32, Duration)`, called before each wait with the error, the number of the attempt that failed and the wait, such as `on_retry = |error, attempt, wait| log::warn!(...)`";
const RULE_ON_RETRY_OK: &str = "a function or closure `Fn(&T, u32, Duration)`, called before each wait with the `Ok` value `on_ok` retries, the attempt number and the wait";
const RULE_RETRY_AFTER_OK: &str = "a function or closure `Fn(&T) -> Option<Duration>` giving the wait a server asked for in an `Ok` value, such as `retry_after_ok = retry_runtime::classify::reqwest::retry_after`";

/// `on`, `on_ok`, `retry_after` and `retry_after_ok`: a path or a closure.
fn rule(key: &str, expected: &str, value: &Expr) -> syn::Result<()> {
    match value {
        Expr::Path(_) | Expr::Closure(_) => Ok(()),
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

fn nested(value: &Expr) -> syn::Result<&'static str> {
    match literal(value) {
        Some(Lit::Str(s)) if s.value() == "once" => Ok("Once"),
        Some(Lit::Str(s)) if s.value() == "retry" => Ok("Retry"),
        Some(Lit::Str(s)) => Err(syn::Error::new(
            s.span(),
            format!(
                "unknown `nested` value {:?}: write `nested = \"once\"` (a single attempt when called from \
                 another retried function, the default) or `nested = \"retry\"` (retry here too)",
                s.value()
            ),
        )),
        _ => Err(syn::Error::new_spanned(
            value,
            "`nested` takes a string: `nested = \"once\"` or `nested = \"retry\"`",
        )),
    }
}

/// `policy`: an expression of type `&Policy`, not a literal.
fn policy(value: &Expr) -> syn::Result<()> {
    match value {
        Expr::Lit(_) => Err(syn::Error::new_spanned(
            value,
            "`policy` takes an expression of type `&Policy` built at run time, such as \
             `policy = &CONFIG.retry`; for a fixed policy, write its keys here instead",
        )),
        _ => Ok(()),
    }
}

/// `budget`: an expression of type `&'static RetryBudget`, not a literal.
fn budget(value: &Expr) -> syn::Result<()> {
    match value {
        Expr::Lit(_) => Err(syn::Error::new_spanned(
            value,
            "`budget` takes a reference to a shared `static RetryBudget`, such as `budget = &API_BUDGET`",
        )),
        _ => Ok(()),
    }
}

/// `breaker`: an expression of type `&CircuitBreaker`, not a literal.
fn breaker(value: &Expr) -> syn::Result<()> {
    match value {
        Expr::Lit(_) => Err(syn::Error::new_spanned(
            value,
            "`breaker` takes a reference to a shared `static CircuitBreaker`, such as `breaker = &INVENTORY`",
        )),
        _ => Ok(()),
    }
}

fn crate_path(value: &Expr) -> syn::Result<Path> {
    match literal(value) {
        Some(Lit::Str(s)) => s.parse::<Path>().map_err(|_| {
            syn::Error::new(
                s.span(),
                format!("`crate` must name a path, such as `crate = \"::retry_runtime\"`; {:?} is not one", s.value()),
            )
        }),
        _ => Err(syn::Error::new(
            value.span(),
            "`crate` takes the path of the runtime as a string: `crate = \"::my_retry\"`",
        )),
    }
}

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
