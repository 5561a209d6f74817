//! The rule keys: `on`, `on_ok`, `retry_after`, `retry_after_ok`,
//! `on_retry`, `on_retry_ok`, `on_give_up`, and the conversions `timed_out`
//! and `circuit_open`: each a function or closure the expansion calls with
//! the outcome of an attempt.

use syn::{Expr, ExprLit, Lit, Path};

use super::Config;

impl Config {
    pub(super) fn set_timed_out(&mut self, value: &Expr) -> syn::Result<()> {
        self.timed_out = Some(rule("timed_out", RULE_TIMED_OUT, value)?);
        Ok(())
    }

    pub(super) fn set_circuit_open(&mut self, value: &Expr) -> syn::Result<()> {
        self.circuit_open = Some(rule("circuit_open", RULE_CIRCUIT_OPEN, value)?);
        Ok(())
    }

    pub(super) fn set_on(&mut self, value: &Expr) -> syn::Result<()> {
        self.on = Some(rule("on", RULE_ON, value)?);
        Ok(())
    }

    pub(super) fn set_on_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_ok = Some(rule("on_ok", RULE_ON_OK, value)?);
        Ok(())
    }

    pub(super) fn set_retry_after(&mut self, value: &Expr) -> syn::Result<()> {
        self.retry_after = Some(rule("retry_after", RULE_RETRY_AFTER, value)?);
        Ok(())
    }

    pub(super) fn set_retry_after_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.retry_after_ok = Some(rule("retry_after_ok", RULE_RETRY_AFTER_OK, value)?);
        Ok(())
    }

    pub(super) fn set_on_retry(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_retry = Some(rule("on_retry", RULE_ON_RETRY, value)?);
        Ok(())
    }

    pub(super) fn set_on_retry_ok(&mut self, value: &Expr) -> syn::Result<()> {
        self.on_retry_ok = Some(rule("on_retry_ok", RULE_ON_RETRY_OK, value)?);
        Ok(())
    }

    pub(super) fn set_on_give_up(&mut self, value: &Expr) -> syn::Result<()> {
        let hook = rule("on_give_up", RULE_ON_GIVE_UP, value)?;
        // A closure of another arity is one error here, naming the key: the
        // `Fn` bound its arguments are inferred from would report it as an
        // E0593 that names neither. (A function's type is checked where
        // the expansion binds it: see `__private::GiveUpProbe`.)
        if let Expr::Closure(closure) = &hook {
            if closure.inputs.len() != 2 {
                let (open, inputs, close) =
                    (&closure.or1_token, &closure.inputs, &closure.or2_token);
                return Err(syn::Error::new_spanned(
                    quote::quote!(#open #inputs #close),
                    format!(
                        "`on_give_up` takes a closure of two arguments, not {}: the outcome returned and how the call stopped, `|outcome, stopped|` (`Fn(&Result<T, E>, &Stopped)`)",
                        closure.inputs.len()
                    ),
                ));
            }
        }
        self.on_give_up = Some(hook);
        Ok(())
    }
}

const RULE_ON: &str =
    "a function or closure `Fn(&E) -> bool` saying which errors to retry, such as `on = is_transient` or `on = |e| e.is_timeout()`";
const RULE_ON_OK: &str = "a function or closure `Fn(&T) -> bool` saying which `Ok` values to retry, such as `on_ok = |response| response.status() == 503`";
const RULE_RETRY_AFTER: &str = "a function or closure `Fn(&E) -> Option<Duration>` giving the wait a server asked for, such as `retry_after = |e| e.retry_after()`";
const RULE_ON_RETRY: &str = "a function or closure `Fn(&E, u32, Duration)`, called before each wait with the error, the number of the attempt that failed and the wait, such as `on_retry = |error, attempt, wait| log::warn!(...)`";
const RULE_ON_RETRY_OK: &str = "a function or closure `Fn(&T, u32, Duration)`, called before each wait with the `Ok` value `on_ok` retries, the attempt number and the wait";
const RULE_ON_GIVE_UP: &str = "a function or closure `Fn(&Result<T, E>, &Stopped)`, called once when the call returns an error or a retried `Ok` value, with it and how the call stopped, such as `on_give_up = |result, stopped| log::warn!(\"stopped: {stopped}\")`";
const RULE_RETRY_AFTER_OK: &str = "a function or closure `Fn(&T) -> Option<Duration>` giving the wait a server asked for in an `Ok` value, such as `retry_after_ok = retry_runtime::classify::reqwest::retry_after`";

const RULE_TIMED_OUT: &str = "a function or closure `Fn(TimedOut) -> E` building the error an attempt cut off by `timeout` fails with, such as `timed_out = |_| Status::deadline_exceeded(\"attempt timed out\")`";
const RULE_CIRCUIT_OPEN: &str = "a function or closure `Fn(CircuitOpen) -> E` building the error a call refused by the breaker fails with, such as `circuit_open = |_| Status::unavailable(\"circuit open\")`";

/// `on`, `on_ok`, `retry_after`, `retry_after_ok`, `on_retry`,
/// `on_retry_ok`, `on_give_up`, `timed_out` and `circuit_open`: a path or a
/// closure.
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
