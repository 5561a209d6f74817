//! The arithmetic of backoff, in nanoseconds, with no allocation, no panic and
//! no overflow.
//!
//! Shared by both crates: `retry-macros` uses it to write the `# Retries`
//! section of a function's docs and `retry-runtime` to wait, so the
//! documented schedule and the one the runtime follows are the same numbers.

use core::time::Duration;

/// `d` in nanoseconds, saturating at `u64::MAX` (about 584 years).
pub fn nanos(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX)
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
    if multiplier.fract() == 0.0 {
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
    let ceiling = base as f64 * multiplier.powf(f64::from(n));
    #[allow(clippy::cast_precision_loss)]
    let below_cap = ceiling < cap as f64;
    if below_cap {
        // Saturating float-to-int conversion, below the cap by the check.
        #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
        let ceiling = ceiling.round() as u64;
        ceiling.min(cap)
    } else {
        cap
    }
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
    use super::ceiling;

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
