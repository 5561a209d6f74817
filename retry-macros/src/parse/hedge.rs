//! `hedge = "50ms"` | `hedge = "p95"`: a delay, or a percentile of the
//! function's recent latencies, read while compiling. What the key asks of
//! the function, and its expansion, are in `crate::hedge`.

use core::time::Duration;

use syn::spanned::Spanned;
use syn::{Expr, ExprLit, Lit};

use super::Config;

impl Config {
    pub(super) fn set_hedge(&mut self, value: &Expr) -> syn::Result<()> {
        self.hedge = Some(parse(value)?);
        Ok(())
    }
}

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
        None => match other_percentile(&written) {
            // `"P95"`, `"95%"`, `"95th"`: a percentile, written otherwise.
            Some(percentile) => Err(syn::Error::new(
                text.span(),
                format!(
                    "invalid value {written:?} for `hedge`: a percentile is written as a \
                     lowercase `p` and its number: write `hedge = \"p{percentile}\"`"
                ),
            )),
            None => super::schedule::duration("hedge", value).map(Hedge::After),
        },
    }
}

/// The percentile in `written` when it is one written another way than
/// `p95`: `P95`, `95%`, `95th`, `95p`.
fn other_percentile(written: &str) -> Option<&str> {
    let percentile = written
        .strip_prefix('P')
        .or_else(|| written.strip_suffix('%'))
        .or_else(|| written.strip_suffix("th"))
        .or_else(|| written.strip_suffix('p'))?
        .trim();
    per_mille(percentile).map(|_| percentile)
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

    /// A percentile written another way is told the spelling, not "a unit
    /// has no number before it".
    #[test]
    fn percentiles_written_otherwise_are_spelt_out() {
        for written in ["\"P95\"", "\"95%\"", "\"95th\"", "\"95p\""] {
            let message = parsed(written).unwrap_err().to_string();
            assert!(
                message.contains("`hedge = \"p95\"`"),
                "{written}: {message}"
            );
        }
        assert!(parsed("\"5ms\"").is_ok());
        let message = parsed("\"100%\"").unwrap_err().to_string();
        assert!(message.contains("invalid duration"), "{message}");
    }
}
