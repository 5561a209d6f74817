//! `hedge = "50ms"` | `hedge = "p95"`: read, checked against the function,
//! and expanded into one hedged call (DESIGN §4.15). The runtime side is
//! `retry_runtime::hedge`.

use core::time::Duration;

use proc_macro2::{Span, TokenStream};
use quote::{quote, quote_spanned};
use syn::spanned::Spanned;
use syn::{Expr, ExprLit, FnArg, Lit, Pat, Type};

use crate::parse::{Config, Function};

/// When to start another attempt while none has answered.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Hedge {
    /// A fixed delay.
    After(Duration),
    /// A percentile of the function's recent latencies, in thousandths
    /// (`950` is p95).
    Percentile(u64),
}

const HELP: &str = "`hedge` takes a duration such as `hedge = \"50ms\"`, or a percentile of this \
     function's recent latencies from \"p50\" to \"p99.9\", such as `hedge = \"p95\"`";

/// Reads the value of `hedge`; an error is spanned on it.
pub fn parse(value: &Expr) -> syn::Result<Hedge> {
    let text = match value {
        Expr::Lit(ExprLit {
            lit: Lit::Str(text),
            ..
        }) => text,
        _ => return Err(syn::Error::new(value.span(), HELP)),
    };
    let written = text.value();
    match written.strip_prefix('p') {
        Some(percentile) => per_mille(percentile).map(Hedge::Percentile).ok_or_else(|| {
            syn::Error::new(
                text.span(),
                format!(
                    "invalid percentile {written:?} for `hedge`: write `p` and a percentile from \
                     50 to 99.9 with at most one decimal, such as \"p95\" or \"p99.9\""
                ),
            )
        }),
        None => crate::parse::duration("hedge", value).map(Hedge::After),
    }
}

/// `"95"` as 950, `"99.9"` as 999; `None` outside 50 ..= 99.9 or with more
/// than one decimal.
fn per_mille(percentile: &str) -> Option<u64> {
    let (whole, tenths) = match percentile.split_once('.') {
        Some((whole, tenth)) if tenth.len() == 1 => (whole, tenth),
        Some(_) => return None,
        None => (percentile, "0"),
    };
    if whole.is_empty() || whole.len() > 2 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    if !tenths.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let value = whole.parse::<u64>().ok()? * 10 + tenths.parse::<u64>().ok()?;
    (500..=999).contains(&value).then_some(value)
}

/// Attempts of a hedged call run at the same time and share the arguments:
/// one error, naming `hedge`, for an argument they cannot share or a
/// function that cannot run them side by side.
pub fn check(config: &Config, function: &Function, is_async: bool) -> syn::Result<()> {
    if config.hedge.is_none() {
        return Ok(());
    }
    if !is_async {
        return Err(syn::Error::new(
            function.sig.fn_token.span,
            "`hedge` runs attempts at the same time, and a plain `fn` blocks its thread for each \
             one: make the function `async fn`, or remove `hedge`",
        ));
    }
    for input in &function.sig.inputs {
        let why = match input {
            FnArg::Receiver(receiver) if receiver.mutability.is_some() => {
                if receiver.reference.is_some() {
                    "`&mut self`"
                } else {
                    "`mut self`"
                }
            }
            FnArg::Receiver(_) => continue,
            FnArg::Typed(typed) => match (&*typed.pat, &*typed.ty) {
                (_, Type::Reference(reference)) if reference.mutability.is_some() => {
                    "a `&mut` argument"
                }
                (Pat::Ident(pat), _) if pat.mutability.is_some() => "a `mut` argument",
                _ => continue,
            },
        };
        return Err(syn::Error::new_spanned(
            input,
            format!(
                "`hedge` runs attempts at the same time, sharing the arguments, and {why} cannot \
                 be shared: take it by `&` (or by value without `mut`), or remove `hedge`"
            ),
        ));
    }
    Ok(())
}

/// What the expansion of a hedged call is made of.
pub struct Parts<'a> {
    pub hedge: Hedge,
    pub private: &'a TokenStream,
    pub krate: &'a TokenStream,
    /// `&Policy`.
    pub policy: TokenStream,
    /// Set when the policy comes from `policy = ...`, known at run time.
    pub max: Option<u32>,
    /// `Option<&RetryBudget>`.
    pub budget: TokenStream,
    /// The breaker and its conversion, or none.
    pub breaker: TokenStream,
    /// `Limit<Ret>`.
    pub limit: TokenStream,
    /// `&'static str`.
    pub name: TokenStream,
    /// The rules: `hedge::rules::<Ret, ..>(on, ..)`.
    pub rules: TokenStream,
    /// The body, as an `async` block borrowing the arguments.
    pub attempt: TokenStream,
}

/// The statements of a hedged call: the attempts, made by a closure that
/// borrows the arguments, polled in place by one future.
pub fn expand(parts: Parts<'_>) -> TokenStream {
    let Parts {
        hedge,
        private,
        krate,
        policy,
        max,
        budget,
        breaker,
        limit,
        name,
        rules,
        attempt,
    } = parts;
    let span = Span::mixed_site();
    let latencies = syn::Ident::new("LATENCIES", span);
    let (statics, hedge) = match hedge {
        Hedge::After(delay) => {
            let (secs, nanos) = (delay.as_secs(), delay.subsec_nanos());
            (
                TokenStream::new(),
                quote!(#private::hedge::Hedge::after(::core::time::Duration::new(#secs, #nanos))),
            )
        }
        Hedge::Percentile(per_mille) => (
            // One histogram per function, shared by every call of it.
            quote! {
                static #latencies: #private::hedge::Latencies = #private::hedge::Latencies::new();
            },
            quote!(#private::hedge::Hedge::per_mille(#per_mille, &#latencies)),
        ),
    };
    // One slot per attempt that may run at once, inside the caller's
    // future; a policy known only at run time gets them on the heap.
    let slots = match max {
        Some(max) => {
            let count = usize::try_from(max).unwrap_or(usize::MAX).min(16);
            let slots = (0..count).map(|_| quote!(_));
            quote!(#krate::__hedge_slots!(#(#slots)*))
        }
        None => quote!(#private::hedge::Boxed::new((#policy).max_attempts())),
    };
    quote_spanned! {span=>
        #statics
        return #private::hedge::run(
            #policy,
            #hedge,
            #budget,
            #breaker,
            #limit,
            #name,
            #slots,
            #rules,
            || #attempt,
        )
        .await;
    }
}

/// The line of the `# Retries` section that says the call hedges.
pub fn doc(config: &Config) -> Option<String> {
    let attempts = if config.policy.is_some() {
        "up to the policy's `max` attempts in all".to_owned()
    } else {
        format!("up to {} attempts in all", config.max)
    };
    Some(match config.hedge? {
        Hedge::After(delay) => format!(
            "Hedged: while no attempt has answered, another starts each time the newest has run for {delay:?}, {attempts}; the first answer wins and the others are dropped."
        ),
        Hedge::Percentile(per_mille) => {
            let percentile = if per_mille % 10 == 0 {
                format!("{}", per_mille / 10)
            } else {
                format!("{}.{}", per_mille / 10, per_mille % 10)
            };
            let base = if config.policy.is_some() {
                "the policy's `base`".to_owned()
            } else {
                format!("{:?}", config.base)
            };
            format!(
                "Hedged: while no attempt has answered, another starts each time the newest has run for the {percentile}th percentile of this function's recent successful latencies ({base} until it has seen 100 successes), {attempts}; the first answer wins and the others are dropped."
            )
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> syn::Result<Hedge> {
        parse(&syn::parse_str::<Expr>(text).unwrap())
    }

    #[test]
    fn percentiles_from_p50_to_p99_9() {
        assert_eq!(parsed("\"p95\"").unwrap(), Hedge::Percentile(950));
        assert_eq!(parsed("\"p50\"").unwrap(), Hedge::Percentile(500));
        assert_eq!(parsed("\"p99.9\"").unwrap(), Hedge::Percentile(999));
        assert_eq!(parsed("\"p99.5\"").unwrap(), Hedge::Percentile(995));
        for bad in [
            "\"p100\"",
            "\"p49\"",
            "\"p99.99\"",
            "\"p\"",
            "\"p9x\"",
            "\"p.5\"",
            "\"p-95\"",
        ] {
            assert!(parsed(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations_and_other_values() {
        assert_eq!(
            parsed("\"50ms\"").unwrap(),
            Hedge::After(Duration::from_millis(50))
        );
        assert!(parsed("\"50\"").is_err());
        assert!(parsed("50").is_err());
        assert!(parsed("p95").is_err());
    }
}
