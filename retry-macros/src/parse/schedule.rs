//! The schedule keys: `max`, `base`, `cap`, `multiplier`, `jitter`,
//! `deadline`, `timeout` and `hedge`, each a literal read into its type
//! while compiling (`hedge` is read in `hedge.rs` beside this file).

use core::time::Duration;

use proc_macro2::Span;
use quote::ToTokens;
use syn::spanned::Spanned;
use syn::{Expr, Lit};

use retry_core::{parse_duration, DurationError};

use super::{is_negative, literal, Config};

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

const DURATION_HELP: &str =
    "write a number and a unit, such as \"200ms\", \"1.5s\" or \"1m30s\" (units: ns, us, ms, s, m, h)";

impl Config {
    pub(super) fn set_max(&mut self, value: &Expr) -> syn::Result<()> {
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

    pub(super) fn set_base(&mut self, value: &Expr) -> syn::Result<()> {
        self.base = duration("base", value)?;
        Ok(())
    }

    pub(super) fn set_cap(&mut self, value: &Expr) -> syn::Result<()> {
        self.cap = duration("cap", value)?;
        Ok(())
    }

    pub(super) fn set_multiplier(&mut self, value: &Expr) -> syn::Result<()> {
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

    pub(super) fn set_jitter(&mut self, value: &Expr) -> syn::Result<()> {
        let names = Jitter::ALL
            .map(|(name, _)| format!("\"{name}\""))
            .join(", ");
        let Some(Lit::Str(s)) = literal(value) else {
            // The jitter the value names, whatever its case (`equal`, `None`,
            // `Jitter::Equal`); `false` is no jitter.
            let written = match (value, literal(value)) {
                (Expr::Path(path), _) => path
                    .path
                    .segments
                    .last()
                    .map(|segment| segment.ident.to_string()),
                (_, Some(Lit::Bool(b))) if !b.value => Some("none".to_owned()),
                _ => None,
            }
            .unwrap_or_else(|| value.to_token_stream().to_string());
            let example = Jitter::ALL
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(&written))
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
        let suggestion = crate::suggest::closest(&name, Jitter::ALL.map(|(n, _)| n)).map_or_else(
            || "; the jitters are".to_owned(),
            |n| format!("; did you mean \"{n}\"? The jitters are"),
        );
        Err(syn::Error::new(
            s.span(),
            format!("unknown jitter {name:?}{suggestion} {names}"),
        ))
    }

    pub(super) fn set_deadline(&mut self, value: &Expr) -> syn::Result<()> {
        self.deadline = Some(duration("deadline", value)?);
        Ok(())
    }

    pub(super) fn set_timeout(&mut self, value: &Expr) -> syn::Result<()> {
        self.timeout = Some(duration("timeout", value)?);
        Ok(())
    }
}

pub(super) fn duration(key: &str, value: &Expr) -> syn::Result<Duration> {
    let text = match literal(value) {
        Some(Lit::Str(s)) => s,
        // A whole number most likely means milliseconds, a decimal seconds;
        // a unit written as the literal's suffix (`1s`, `1.5h`) is kept.
        Some(Lit::Int(int)) => {
            let unit = unit_or(int.suffix(), "ms");
            return Err(bare_number(
                key,
                int.span(),
                int.base10_digits(),
                unit,
                int.suffix(),
            ));
        }
        Some(Lit::Float(float)) => {
            let unit = unit_or(float.suffix(), "s");
            return Err(bare_number(
                key,
                float.span(),
                float.base10_digits(),
                unit,
                float.suffix(),
            ));
        }
        // On the whole expression (`Duration::from_millis(200)`), not its
        // first token.
        _ => {
            return Err(syn::Error::new_spanned(
                value,
                format!(
                    "`{key}` takes a duration string such as `{key} = \"200ms\"`; {DURATION_HELP}"
                ),
            ))
        }
    };
    let duration = parse_duration(&text.value()).map_err(|error| {
        let hint = match &error {
            DurationError::MissingUnit => format!(
                "; a number needs a unit: write `{key} = \"{}ms\"`",
                text.value()
            ),
            // `"5sec"`: the fix the bare literal `5sec` gets.
            DurationError::UnknownUnit(unit) => match respelt(&text.value(), unit) {
                Some(fix) => {
                    format!(" (the units are ns, us, ms, s, m and h): write `{key} = \"{fix}\"`")
                }
                None => format!("; {DURATION_HELP}"),
            },
            _ => format!("; {DURATION_HELP}"),
        };
        syn::Error::new(
            text.span(),
            format!(
                "invalid duration {:?} for `{key}`: {error}{hint}",
                text.value()
            ),
        )
    })?;
    // `"0.1ns"`: a number that is not zero, below the smallest duration.
    if duration.is_zero() && text.value().chars().any(|c| matches!(c, '1'..='9')) {
        return Err(syn::Error::new(
            text.span(),
            format!(
                "{:?} is below 1ns, the smallest duration `{key}` can hold, and would be zero; \
                 write `{key} = \"1ns\"` or more",
                text.value()
            ),
        ));
    }
    Ok(duration)
}

/// A string whose last number has `unit`, a unit of another spelling
/// (`"5sec"`, `"1m30sec"`), in the grammar's units (`"5s"`, `"1m30s"`).
fn respelt(text: &str, unit: &str) -> Option<String> {
    let rest = text.strip_suffix(unit)?;
    let start = rest
        .rfind(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map_or(0, |at| at + 1);
    let (before, digits) = rest.split_at(start);
    let fix = format!("{before}{}", written_unit(unit, digits)?);
    parse_duration(&fix).is_ok().then_some(fix)
}

/// The suffix of a number literal when it is a unit of the duration
/// grammar, else `default`.
fn unit_or<'a>(suffix: &'a str, default: &'a str) -> &'a str {
    if !suffix.is_empty() && parse_duration(&format!("1{suffix}")).is_ok() {
        suffix
    } else {
        default
    }
}

/// A number where a duration string belongs: suggest it with a unit.
fn bare_number(key: &str, span: Span, digits: &str, unit: &str, suffix: &str) -> syn::Error {
    let is_type = ["u8", "u16", "u32", "u64", "u128", "usize"]
        .iter()
        .chain(&["i8", "i16", "i32", "i64", "i128", "isize", "f32", "f64"])
        .any(|ty| *ty == suffix);
    if !suffix.is_empty() && suffix != unit && !is_type {
        // A suffix meant as a unit that is not one (`5sec`, `2min`, `1d`):
        // not "ms", which would change the duration.
        let fix = match written_unit(suffix, digits) {
            Some(fix) => format!("write `{key} = \"{fix}\"`"),
            None => format!(
                "write the number in quotes with one of them, such as `{key} = \"{digits}s\"`"
            ),
        };
        return syn::Error::new(
            span,
            format!(
                "`{key}` takes a duration string, and `{suffix}` is not a unit (the units are ns, \
                 us, ms, s, m and h): {fix}"
            ),
        );
    }
    let what = if suffix == unit {
        "in quotes"
    } else {
        "with a unit, not a bare number"
    };
    syn::Error::new(
        span,
        format!("`{key}` takes a duration string {what}: write `{key} = \"{digits}{unit}\"`"),
    )
}

/// The duration a number with a unit of another spelling stands for, in the
/// grammar's units: `5sec` is "5s", `2mins` "2m", `1d` "24h".
fn written_unit(suffix: &str, digits: &str) -> Option<String> {
    let unit = match suffix {
        "sec" | "secs" | "second" | "seconds" => "s",
        "min" | "mins" | "minute" | "minutes" => "m",
        "hr" | "hrs" | "hour" | "hours" => "h",
        "msec" | "msecs" | "millis" | "millisecond" | "milliseconds" => "ms",
        "usec" | "usecs" | "micros" | "microsecond" | "microseconds" => "us",
        "nsec" | "nsecs" | "nanos" | "nanosecond" | "nanoseconds" => "ns",
        "d" | "day" | "days" => {
            let hours = digits.parse::<u64>().ok()?.checked_mul(24)?;
            return Some(format!("{hours}h"));
        }
        _ => return None,
    };
    Some(format!("{digits}{unit}"))
}
