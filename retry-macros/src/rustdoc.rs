//! The `# Retries` section added to the documentation of a retried function,
//! so that `cargo doc` shows its policy. Only added to a function the user
//! documented: on an undocumented one it would hide the missing docs from
//! `missing_docs`.

use core::fmt::Write;
use core::time::Duration;

use proc_macro2::TokenStream;
use quote::{quote, ToTokens};
use syn::Expr;

use crate::expand::arguments::KeptArgument;
use crate::parse::{Config, Jitter, Nested};
use retry_core::backoff;

/// Rows of the ceiling table before the rest is summarized.
const ROWS: u32 = 8;

/// One line of documentation per element.
/// `kept` names the by-value `mut` arguments, which each attempt gets as the
/// caller passed them.
pub fn retries(config: &Config, is_async: bool, kept: &[KeptArgument]) -> Vec<Line> {
    let mut lines = vec![String::new(), "# Retries".to_owned(), String::new()];
    let errors = match &config.on {
        None => "every error".to_owned(),
        Some(Expr::Path(path)) => format!(
            "errors `{}` accepts",
            path.to_token_stream().to_string().replace(' ', "")
        ),
        Some(_) => "errors the `on` closure accepts".to_owned(),
    };
    if let Some(policy) = &config.policy {
        let policy = policy.to_token_stream().to_string().replace(' ', "");
        lines.push(format!(
            "Retried with `#[retry]` under a policy set at run time by `{policy}`, on {errors}."
        ));
    } else {
        schedule(config, &errors, &mut lines);
    }
    let mut notes = Vec::new();
    if config.on_ok.is_some() {
        notes.push("`Ok` values that `on_ok` accepts are retried too; the last one is returned as it came.".to_owned());
    }
    if config.retry_after.is_some() || config.retry_after_ok.is_some() {
        notes.push(
            "A wait the server asks for is honoured, plus up to a tenth of it; a wait longer than `cap` is not, and the call returns at once.".to_owned(),
        );
    }
    if let Some(budget) = &config.budget {
        let budget = budget.to_token_stream().to_string().replace(' ', "");
        notes.push(format!("Retries draw from the shared budget `{budget}`."));
    }
    if let Some(breaker) = &config.breaker {
        let breaker = breaker.to_token_stream().to_string().replace(' ', "");
        notes.push(format!(
            "Each attempt asks the circuit breaker `{breaker}` first; a call it refuses fails at once and is not retried."
        ));
    }
    // Each under the configuration it holds in.
    let kept_at = notes.len();
    let kept = kept_notes(kept);
    notes.extend(crate::hedge::doc(config));
    // Retry at the layer closest to the failure: a failure an inner retried
    // function gave up on is not retried again around it.
    notes.push(match config.nested {
        Nested::Once => "A failure that a retried function it calls already retried is returned at once, not retried again here.".to_owned(),
        Nested::Retry => "A failure that a retried function it calls already retried is retried here too (`nested = \"retry\"`).".to_owned(),
    });
    if !is_async {
        notes.push("Waits block the calling thread.".to_owned());
        if config.timeout.is_some() {
            notes.push("An attempt that returns after its timeout counts as timed out.".to_owned());
        }
    }
    notes.push("The caller gets the last attempt's result, unchanged.".to_owned());
    lines.push(String::new());
    let mut lines: Vec<Line> = lines.into_iter().map(|text| (text, None)).collect();
    let notes: Vec<Line> = notes.into_iter().map(|note| (note, None)).collect();
    let (before, after) = notes.split_at(kept_at);
    lines.extend(
        before
            .iter()
            .cloned()
            .chain(kept)
            .chain(after.iter().cloned())
            .map(|(note, cfg)| (format!("- {note}"), cfg)),
    );
    lines
}

/// A line of the section, and the configuration it is written in (`None`:
/// always).
pub type Line = (String, Option<TokenStream>);

/// The note on the by-value `mut` arguments, naming those compiled in: one
/// note for each configuration of the arguments a `#[cfg]` leaves out.
fn kept_notes(kept: &[KeptArgument]) -> Vec<Line> {
    let note = |names: &[&KeptArgument]| {
        let names = names
            .iter()
            .map(|kept| format!("`{}`", kept.name))
            .collect::<Vec<_>>()
            .join(", ");
        format!(
            "Each attempt starts from the arguments as the caller passed them: before each retry, each by-value `mut` argument ({names}) is restored from a copy of the caller's value if its type is `Clone`, and is otherwise carried over from the attempt before. No other argument is cloned."
        )
    };
    let conditional: Vec<&KeptArgument> = kept.iter().filter(|kept| kept.cfg.is_some()).collect();
    // Past a few, the configurations are too many to write each: the note
    // names them all.
    if conditional.is_empty() || conditional.len() > 4 {
        let all: Vec<&KeptArgument> = kept.iter().collect();
        return if all.is_empty() {
            Vec::new()
        } else {
            vec![(note(&all), None)]
        };
    }
    (0..1_u32 << conditional.len())
        .filter_map(|set| {
            let included = |at: usize| set & (1 << at) != 0;
            let names: Vec<&KeptArgument> = kept
                .iter()
                .filter(|kept| {
                    conditional
                        .iter()
                        .position(|c| core::ptr::eq(*c, *kept))
                        .is_none_or(included)
                })
                .collect();
            let predicates = conditional.iter().enumerate().map(|(at, kept)| {
                let cfg = &kept.cfg;
                if included(at) {
                    quote!(#cfg)
                } else {
                    quote!(not(#cfg))
                }
            });
            let cfg = quote!(all(#(#predicates),*));
            (!names.is_empty()).then(|| (note(&names), Some(cfg)))
        })
        .collect()
}

fn schedule(config: &Config, errors: &str, lines: &mut Vec<String>) {
    let retries = config.max - 1;
    let base = backoff::nanos(config.base);
    let cap = backoff::nanos(config.cap);
    let decorrelated = config.jitter == Jitter::Decorrelated;
    lines.push(format!(
        "Retried with `#[retry]`: up to {} on {errors}.",
        match retries {
            0 => "1 attempt, never retried".to_owned(),
            1 => "2 attempts (the call and 1 retry)".to_owned(),
            _ => format!("{} attempts (the call and {retries} retries)", config.max),
        }
    ));
    if retries == 0 {
        return;
    }
    lines.push(String::new());
    if decorrelated {
        lines.push(format!(
            "Each wait is drawn between {} and three times the wait before it, never above {} (decorrelated jitter).",
            show(base),
            show(cap)
        ));
    } else {
        lines.push("| retry | ceiling |".to_owned());
        lines.push("|---|---|".to_owned());
        for n in 0..retries.min(ROWS) {
            lines.push(format!(
                "| {} | {} |",
                n + 1,
                show(backoff::ceiling(base, cap, config.multiplier, n))
            ));
        }
        if retries > ROWS {
            let last = backoff::ceiling(base, cap, config.multiplier, ROWS);
            let rest = if last == cap {
                show(cap)
            } else {
                format!("from {} up to {}", show(last), show(cap))
            };
            lines.push(format!("| {} to {retries} | {rest} |", ROWS + 1));
        }
        lines.push(String::new());
        let jitter = match config.jitter {
            Jitter::Full => "full jitter: uniform between zero and the ceiling",
            Jitter::Equal => {
                "equal jitter: half the ceiling plus a uniform share of the other half"
            }
            Jitter::None | Jitter::Decorrelated => "no jitter: exactly the ceiling",
        };
        lines.push(format!("Each wait is drawn by {jitter}."));
    }
    let worst = backoff::worst_case_total(base, cap, config.multiplier, decorrelated, retries);
    let mut summary = format!("Worst-case total wait: {}", show(worst));
    if let Some(deadline) = config.deadline {
        let _ = write!(
            summary,
            "; the whole call is bounded by a deadline of {}",
            show(backoff::nanos(deadline))
        );
    }
    if let Some(timeout) = config.timeout {
        let _ = write!(
            summary,
            "; each attempt is cut off after {}",
            show(backoff::nanos(timeout))
        );
    }
    summary.push('.');
    lines.push(String::new());
    lines.push(summary);
}

/// A duration as `Duration`'s `Debug` writes it: `200ms`, `1.6s`.
fn show(nanos: u64) -> String {
    format!("{:?}", Duration::from_nanos(nanos))
}

#[cfg(test)]
mod tests {
    /// A by-value `mut` argument that a `#[cfg]` leaves out is named only
    /// in the configuration that keeps it.
    #[test]
    fn a_configured_out_argument_is_listed_only_where_compiled() {
        let output = crate::retry_impl(
            quote::quote!(crate = "::retry_runtime"),
            quote::quote! {
                /// Sends.
                async fn send(#[cfg(any())] mut gone: String, mut here: u32) -> Result<(), ()> {
                    Ok(())
                }
            },
        )
        .to_string();
        let notes: Vec<&str> = output
            .split("#")
            .filter(|attr| attr.contains("by-value `mut` argument"))
            .collect();
        assert_eq!(notes.len(), 2, "{output}");
        for note in notes {
            let compact = note.replace(' ', "");
            if compact.contains("(`gone`,`here`)") {
                assert!(compact.starts_with("[cfg_attr(all(all(any()))"), "{note}");
            } else {
                assert!(compact.contains("(`here`)"), "{note}");
                assert!(
                    compact.starts_with("[cfg_attr(all(not(all(any())))"),
                    "{note}"
                );
            }
        }
        // Without a `#[cfg]`, the note is written as before, unconditionally.
        let output = crate::retry_impl(
            quote::quote!(crate = "::retry_runtime"),
            quote::quote! {
                /// Sends.
                async fn send(mut here: u32) -> Result<(), ()> {
                    Ok(())
                }
            },
        )
        .to_string();
        assert!(!output.contains("cfg_attr"), "{output}");
        assert!(output.contains("argument (`here`)"), "{output}");
    }
}
