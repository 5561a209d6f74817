//! The arithmetic of backoff, in nanoseconds, with no allocation, no panic and
//! no overflow.
//!
//! Shared by both crates: `retry-macros` uses it to write the `# Retries`
//! section of a function's docs and `retry-runtime` to wait, so the
//! documented schedule and the one the runtime follows are the same numbers.

use core::time::Duration;

/// `d` in nanoseconds, saturating at `u64::MAX` (about 584 years). A
/// `const fn`, so that a policy built in a `const` keeps it.
#[must_use]
#[allow(clippy::cast_possible_truncation)] // Checked to fit first.
pub const fn nanos(d: Duration) -> u64 {
    let nanos = d.as_nanos();
    if nanos > u64::MAX as u128 {
        u64::MAX
    } else {
        nanos as u64
    }
}

/// `min(cap, base * multiplier^n)`.
///
/// Exact for every whole multiplier, however large, and so never decreasing
/// in `n`. Other multipliers go through `f64` (`base * multiplier.powf(n)`,
/// rounded to the nearest nanosecond): exact to about one part in 2^52, and
/// non-decreasing as far as `powf` is monotonic, which the property tests
/// check near 1 and up to 4. A multiplier below 1, or NaN, acts as 1; a
/// `cap` below `base` gives `cap`.
pub fn ceiling(base: u64, cap: u64, multiplier: f64, n: u32) -> u64 {
    if base >= cap {
        return cap;
    }
    if base == 0 || multiplier.is_nan() || multiplier <= 1.0 || n == 0 {
        return base;
    }
    if is_whole(multiplier) {
        // A whole multiplier of 2^64 or more passes any cap in one step.
        if multiplier >= 18_446_744_073_709_551_616.0 {
            return cap;
        }
        // Every whole `f64` below 2^64 converts exactly; a factor of at
        // least 2 passes the cap within 64 steps.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let factor = multiplier as u64;
        let mut ceiling = base;
        for _ in 0..n {
            ceiling = ceiling.saturating_mul(factor);
            if ceiling >= cap {
                return cap;
            }
        }
        return ceiling;
    }
    #[allow(clippy::cast_precision_loss)]
    let ceiling = base as f64 * power(multiplier, n);
    #[allow(clippy::cast_precision_loss)]
    let below_cap = ceiling < cap as f64;
    if below_cap {
        // Saturating float-to-int conversion, below the cap by the check.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ceiling = round(ceiling);
        ceiling.min(cap)
    } else {
        cap
    }
}

/// Whether `x` (above 1) is a whole number, as `x.fract() == 0.0` says.
fn is_whole(x: f64) -> bool {
    // From 2^53 up every `f64` is whole (the infinite one goes on to the
    // float path either way: it passes any cap).
    if x >= 9_007_199_254_740_992.0 {
        return x.is_finite();
    }
    // Below 2^53 the conversion truncates and converts back exactly.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    let truncated = x as u64;
    #[allow(clippy::cast_precision_loss)]
    let back = truncated as f64;
    back == x
}

/// `x` (non-negative, below 2^64) rounded half away from zero, as
/// `x.round() as u64` gives it.
#[allow(
    clippy::cast_possible_truncation,
    clippy::cast_sign_loss,
    clippy::cast_precision_loss
)]
fn round(x: f64) -> u64 {
    let truncated = x as u64;
    // Exact: below 2^53 `truncated` converts back exactly, and from 2^53 up
    // `x` is whole, so the fraction is zero.
    if x - truncated as f64 >= 0.5 {
        truncated.saturating_add(1)
    } else {
        truncated
    }
}

/// `x^n`: the standard library's `powf`.
#[cfg(feature = "std")]
fn power(x: f64, n: u32) -> f64 {
    x.powf(f64::from(n))
}

/// `x^n` by repeated squaring, for want of `powf` without the standard
/// library.
#[cfg(not(feature = "std"))]
fn power(x: f64, n: u32) -> f64 {
    power_by_squaring(x, n)
}

#[cfg_attr(all(feature = "std", not(test)), allow(dead_code))]
fn power_by_squaring(x: f64, n: u32) -> f64 {
    let (mut result, mut base, mut n) = (1.0, x, n);
    while n > 0 {
        if n & 1 == 1 {
            result *= base;
        }
        base *= base;
        n >>= 1;
    }
    result
}

/// Uniform in `[low, high]` (both included), from a uniform `sample`: 0 gives
/// `low`, `u64::MAX` gives `high`.
pub fn uniform(low: u64, high: u64, sample: u64) -> u64 {
    let span = u128::from(high.saturating_sub(low)) + 1;
    let offset = (span * u128::from(sample)) >> 64;
    // `offset <= high - low`, so it fits and the sum does not overflow.
    low.saturating_add(u64::try_from(offset).unwrap_or(u64::MAX))
}

/// The longest the waits of `retries` retries can add up to (saturating):
/// the sum of the ceilings, or for decorrelated jitter the chain
/// `min(cap, 3 * previous)`. Once the waits stop growing (at `cap`, or for
/// ever at `base` with a multiplier of 1), the rest are counted at that
/// value; past 10,000 retries, at `cap`, which bounds them.
pub fn worst_case_total(
    base: u64,
    cap: u64,
    multiplier: f64,
    decorrelated: bool,
    retries: u32,
) -> u64 {
    let constant =
        !decorrelated && (base == 0 || base >= cap || multiplier.is_nan() || multiplier <= 1.0);
    let mut total: u64 = 0;
    let mut previous = base;
    for n in 0..retries {
        let wait = if decorrelated {
            previous.saturating_mul(3).max(base).min(cap)
        } else {
            ceiling(base, cap, multiplier, n)
        };
        let left = u64::from(retries - n);
        // The decorrelated chain is deterministic, so a repeat means a fixed
        // point; the ceilings, with rounding, only stop growing at `cap`.
        let settled = wait == cap || constant || (decorrelated && n > 0 && wait == previous);
        if settled || n == 10_000 {
            let rest = if settled { wait } else { cap };
            return total.saturating_add(rest.saturating_mul(left));
        }
        total = total.saturating_add(wait);
        previous = wait;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::{ceiling, is_whole, power_by_squaring, round};

    /// The `no_std` stand-ins for `fract` and `round` give the standard
    /// library's answers, and the one for `powf` its answer to a few parts
    /// in 10^15.
    #[test]
    fn the_no_std_arithmetic_agrees_with_the_standard_library() {
        for x in [
            1.0_f64,
            1.5,
            2.0,
            2.5,
            3.0,
            1e15,
            9_007_199_254_740_993.0,
            1e300,
        ] {
            assert_eq!(is_whole(x), x.fract() == 0.0, "{x}");
        }
        assert!(!is_whole(f64::INFINITY));
        for x in [
            0.0_f64,
            0.49,
            0.5,
            1.5,
            2.5,
            1e6 + 0.4999,
            4_503_599_627_370_495.5,
            1.8e19,
        ] {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
            let expected = x.round() as u64;
            assert_eq!(round(x), expected, "{x}");
        }
        for multiplier in [1.1_f64, 1.5, 1.618, 2.5, 3.7] {
            for n in 0..60 {
                let by_squaring = power_by_squaring(multiplier, n);
                let by_powf = multiplier.powf(f64::from(n));
                let error = (by_squaring - by_powf).abs() / by_powf;
                assert!(error < 1e-14, "{multiplier}^{n}: {error:e}");
            }
        }
    }

    #[test]
    fn whole_multipliers_of_two_to_the_32_and_above_are_exact() {
        // 3 * (2^53 + 2) needs 56 bits; `f64` keeps 53 and would round it.
        let multiplier = 9_007_199_254_740_994_u64;
        #[allow(clippy::cast_precision_loss)]
        let whole = multiplier as f64;
        assert_eq!(ceiling(3, u64::MAX - 1, whole, 1), 3 * multiplier);
        assert_eq!(ceiling(3, u64::MAX - 1, whole, 2), u64::MAX - 1);
        assert_eq!(ceiling(1, u64::MAX, 4_294_967_297.0, 1), 4_294_967_297);
        // 2^64 and beyond: past any cap in one step, never a wrapped product.
        assert_eq!(
            ceiling(3, u64::MAX - 1, 1.844_674_407_370_955_2e19, 1),
            u64::MAX - 1
        );
        assert_eq!(ceiling(3, 1000, 1e300, u32::MAX), 1000);
    }
}
