//! Judges the keys: each value against its rules, and the keys against each
//! other. Every mistake becomes one error spanned on the token at fault,
//! saying how to fix it; all mistakes are reported at once.

use quote::ToTokens;
use syn::ext::IdentExt;
use syn::spanned::Spanned;

use crate::parse::{self, Arg, Config, KEYS};

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

    pub fn add(&mut self, tokens: impl ToTokens, message: impl core::fmt::Display) {
        self.push(syn::Error::new_spanned(tokens, message));
    }

    pub fn finish<T>(self, value: T) -> Result<T, syn::Error> {
        self.0.map_or(Ok(value), Err)
    }
}

/// Reads every key through [`parse::KEYS`] and checks the result.
pub fn config(args: Vec<Arg>) -> syn::Result<Config> {
    let mut errors = Errors::default();
    let mut config = Config::default();
    for Arg {
        key: written,
        value,
    } in args
    {
        // `r#crate`, `r#max`: the key itself (the compiler already reports
        // a raw `crate`, once).
        let name = written.unraw().to_string();
        let Some(key) = parse::key(&name) else {
            errors.push(unknown_key(&written, &value));
            continue;
        };
        if config.keys.contains_key(key.name) {
            errors.add(
                &written,
                format!("`{name}` is set more than once; keep one"),
            );
            continue;
        }
        if let Err(error) = config.set(key, &written, &value) {
            errors.push(error);
        }
    }
    values(&config, &mut errors);
    together(&config, &mut errors);
    errors.finish(config)
}

/// The rules about each value on its own.
fn values(config: &Config, errors: &mut Errors) {
    let at = |key: &str| config.values.get(key).copied();
    if let (0, Some(span)) = (config.max, at("max")) {
        errors.push(syn::Error::new(
            span,
            "`max = 0` allows no attempt at all: `max` counts every attempt, the first call \
             included; write `max = 1` for a single attempt without retries",
        ));
    }
    if let (m, Some(span)) = (config.multiplier, at("multiplier")) {
        if m < 1.0 {
            errors.push(syn::Error::new(
                span,
                format!("`multiplier = {m}` must be at least 1: below 1 each wait would be shorter than the last"),
            ));
        }
    }
    let zero = [
        (
            "base",
            config.base.is_zero(),
            "it is the ceiling of the first wait, and every later one grows from it",
        ),
        (
            "deadline",
            config.deadline.is_some_and(|d| d.is_zero()),
            "a zero deadline leaves no time for any attempt; remove `deadline` for no limit",
        ),
        (
            "timeout",
            config.timeout.is_some_and(|d| d.is_zero()),
            "a zero timeout cuts every attempt off before it starts; remove `timeout` for no limit",
        ),
    ];
    for (key, is_zero, why) in zero {
        if let (true, Some(span)) = (is_zero, at(key)) {
            errors.push(syn::Error::new(
                span,
                format!("`{key}` must be above zero: {why}"),
            ));
        }
    }
}

/// The rules about keys that depend on each other.
fn together(config: &Config, errors: &mut Errors) {
    if config.policy.is_some() {
        for key in KEYS.iter().filter(|key| key.in_policy) {
            if let Some(written) = config.keys.get(key.name) {
                errors.add(
                    written,
                    format!(
                        "`{written}` cannot be set next to `policy`, which sets it at run time; set \
                         it in the policy, or remove `policy` to write the policy here"
                    ),
                );
            }
        }
    }
    if let (Some(key), None) = (config.keys.get("retry_after_ok"), &config.on_ok) {
        errors.add(
            key,
            "`retry_after_ok` reads a hint from `Ok` values that `on_ok` retries, and there is no \
             `on_ok`; add `on_ok = ...` to say which `Ok` values to retry",
        );
    }
    if let (Some(key), None) = (config.keys.get("on_retry_ok"), &config.on_ok) {
        errors.add(
            key,
            "`on_retry_ok` is called before a retry of an `Ok` value that `on_ok` retries, and \
             there is no `on_ok`, so it would never be called; add `on_ok = ...` to say which \
             `Ok` values to retry, or remove `on_retry_ok`",
        );
    }
    if let (Some(key), None, None) = (config.keys.get("timed_out"), config.timeout, &config.policy)
    {
        errors.add(
            key,
            "`timed_out` says how an attempt cut off by `timeout` fails, and there is no \
             `timeout`; add `timeout = \"2s\"` (or a `policy` that may carry one), or remove \
             `timed_out`",
        );
    }
    if let (Some(key), None) = (config.keys.get("circuit_open"), &config.breaker) {
        errors.add(
            key,
            "`circuit_open` says how a call the circuit breaker refuses fails, and there is no \
             `breaker`; add `breaker = &MY_BREAKER`, or remove `circuit_open`",
        );
    }
    if config.cap < config.base {
        let (base, cap) = (config.base, config.cap);
        match (config.values.get("cap"), config.values.get("base")) {
            (Some(&span), _) => errors.push(syn::Error::new(
                span,
                format!("`cap` ({cap:?}) is below `base` ({base:?}); make `cap` at least `base`"),
            )),
            (None, Some(&span)) => errors.push(syn::Error::new(
                span,
                format!(
                    "`base` ({base:?}) is above the default `cap` of 10s; lower `base` or set `cap` too"
                ),
            )),
            (None, None) => {}
        }
    }
}

fn unknown_key(key: &syn::Ident, value: &syn::Expr) -> syn::Error {
    let name = key.to_string();
    let is_count = matches!(
        value,
        syn::Expr::Lit(syn::ExprLit {
            lit: syn::Lit::Int(_),
            ..
        })
    );
    let list = KEYS.map(|k| format!("`{}`", k.name)).join(", ");
    let suggestion = crate::suggest::key(&name, KEYS.iter().map(|k| k.name));
    // A count of retries, as other libraries take it, spelt as written or
    // misspelt (`retires`), when no key of ours is closer; or `retry = 3`,
    // a number, which no key that `retry` is close to takes.
    let retries = ["retries", "max_retries", "num_retries"];
    let message = if retries.contains(&name.as_str())
        || (suggestion.is_none() && crate::suggest::closest(&name, retries).is_some())
        || (is_count && name == "retry")
    {
        format!(
            "unknown key `{name}`; use `max`, which counts every attempt including the first: \
             `{name} = 3` is `max = 4`"
        )
    } else if let Some(suggestion) = suggestion {
        format!("unknown key `{name}`; did you mean `{suggestion}`? The keys are {list}")
    } else {
        format!("unknown key `{name}`; the keys are {list}")
    };
    syn::Error::new(key.span(), message)
}

/// Where to report an error type that cannot hold `TimedOut`: the `timeout`
/// value, or a `policy` that may carry a timeout.
pub fn timeout_span(config: &Config) -> Option<proc_macro2::Span> {
    match (&config.timeout, &config.policy) {
        (Some(_), _) => config.values.get("timeout").copied(),
        (None, Some(policy)) => Some(policy.span()),
        (None, None) => None,
    }
}

/// The conversions kept as function pointers for the whole call, which can
/// capture nothing: `timed_out`, and `circuit_open` under `hedge`. A closure
/// that names an argument of the function is one error, on that name, saying
/// what to write instead (the compiler would say "expected fn pointer, found
/// closure"). Only closures whose body binds nothing are judged, so that a
/// name is an argument's exactly when it is not a field, a method or a path.
pub fn captures(config: &Config, function: &parse::Function) -> syn::Result<()> {
    let arguments = argument_names(&function.sig);
    let mut errors = Errors::default();
    let conversions = [
        (
            "timed_out",
            config.timed_out.as_ref(),
            "an attempt cut off by `timeout`",
            "TimedOut",
            "timed_out = |_| Status::deadline_exceeded(\"attempt timed out\")",
        ),
        (
            "circuit_open",
            config
                .circuit_open
                .as_ref()
                .filter(|_| config.hedge.is_some()),
            "a call the breaker refuses, under `hedge`,",
            "CircuitOpen",
            "circuit_open = |_| Status::unavailable(\"circuit open\")",
        ),
    ];
    for (key, value, what, input, example) in conversions {
        let Some(syn::Expr::Closure(closure)) = value else {
            continue;
        };
        let Some(captured) = captured_argument(closure, &arguments) else {
            continue;
        };
        errors.add(
            &captured,
            format!(
                "`{key}` cannot use the argument `{captured}`: the error {what} fails with is \
                 built by a function that captures nothing, from the `{input}` value alone; \
                 build it without `{captured}`, such as `{example}` (a `const` or a `static` \
                 may be named)"
            ),
        );
    }
    errors.finish(())
}

/// The names the function's arguments bind, `self` included.
fn argument_names(sig: &syn::Signature) -> Vec<String> {
    let mut names = Vec::new();
    for input in &sig.inputs {
        match input {
            syn::FnArg::Receiver(_) => names.push("self".to_owned()),
            syn::FnArg::Typed(typed) => idents(typed.pat.to_token_stream(), &mut names),
        }
    }
    names
}

/// Every identifier in `tokens`, a pattern: a superset of the names it binds.
fn idents(tokens: proc_macro2::TokenStream, names: &mut Vec<String>) {
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Ident(ident) => names.push(ident.unraw().to_string()),
            proc_macro2::TokenTree::Group(group) => idents(group.stream(), names),
            _ => {}
        }
    }
}

/// The first name in the closure's body that is one of `arguments`, and not
/// a field, a method, a macro or a path segment; `None` when the closure
/// binds a name of its own in its body, or in its parameters the name.
pub fn captured_argument(closure: &syn::ExprClosure, arguments: &[String]) -> Option<syn::Ident> {
    let mut bound = Vec::new();
    for input in &closure.inputs {
        idents(input.to_token_stream(), &mut bound);
    }
    let body = closure.body.to_token_stream();
    if binds(body.clone()) {
        return None;
    }
    let tokens = flatten(body);
    tokens.iter().enumerate().find_map(|(at, token)| {
        let proc_macro2::TokenTree::Ident(ident) = token else {
            return None;
        };
        let name = ident.unraw().to_string();
        if !arguments.contains(&name) || bound.contains(&name) {
            return None;
        }
        let punct = |at: Option<usize>| match at.and_then(|at| tokens.get(at)) {
            Some(proc_macro2::TokenTree::Punct(punct)) => Some(punct.as_char()),
            _ => None,
        };
        // `x.reason`, `a::reason`: a field, a method, a path's tail.
        let before = punct(at.checked_sub(1));
        // `reason!`, `reason::`, `Error { reason: .. }`.
        let after = punct(Some(at + 1));
        let is_use = !matches!(before, Some('.' | ':')) && !matches!(after, Some('!' | ':'));
        is_use.then(|| ident.clone())
    })
}

/// Whether `tokens` may bind a name: `let`, `match`, `for`, `if let`, a
/// closure's or an or-pattern's `|`.
fn binds(tokens: proc_macro2::TokenStream) -> bool {
    tokens.into_iter().any(|token| match token {
        proc_macro2::TokenTree::Ident(ident) => {
            matches!(
                ident.to_string().as_str(),
                "let" | "match" | "for" | "while"
            )
        }
        proc_macro2::TokenTree::Punct(punct) => punct.as_char() == '|',
        proc_macro2::TokenTree::Group(group) => binds(group.stream()),
        proc_macro2::TokenTree::Literal(_) => false,
    })
}

/// The tokens of `tokens`, the groups' contents in place of the groups,
/// between two `#` that stand for the delimiters (so that in `(reason)`,
/// `reason` follows no `.`).
fn flatten(tokens: proc_macro2::TokenStream) -> Vec<proc_macro2::TokenTree> {
    let mut flat = Vec::new();
    for token in tokens {
        match token {
            proc_macro2::TokenTree::Group(group) => {
                flat.push(proc_macro2::TokenTree::Punct(proc_macro2::Punct::new(
                    '#',
                    proc_macro2::Spacing::Alone,
                )));
                flat.extend(flatten(group.stream()));
                flat.push(proc_macro2::TokenTree::Punct(proc_macro2::Punct::new(
                    '#',
                    proc_macro2::Spacing::Alone,
                )));
            }
            other => flat.push(other),
        }
    }
    flat
}
