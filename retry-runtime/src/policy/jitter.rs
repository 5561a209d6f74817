//! How a wait is drawn from its ceiling: the four jitters and their names.

use core::fmt;
use core::str::FromStr;

/// How a wait is drawn from the ceiling for that retry.
///
/// With `ceiling(n) = min(cap, base * multiplier^n)` for the retry numbered
/// `n` (`n = 0` before the first retry):
///
/// | jitter | wait before retry `n` |
/// |---|---|
/// | [`Full`](Jitter::Full) | uniform in `[0, ceiling(n)]` |
/// | [`Equal`](Jitter::Equal) | `ceiling(n)/2` + uniform in `[0, ceiling(n)/2]` |
/// | [`Decorrelated`](Jitter::Decorrelated) | `min(cap, uniform in [base, 3 * previous wait])`, the previous wait starting at `base` |
/// | [`None`](Jitter::None) | `ceiling(n)` |
///
/// Waits are whole nanoseconds and `ceiling(n)/2` is rounded down, so for an
/// odd ceiling an equal-jitter wait lies in `[(ceiling - 1)/2, ceiling - 1]`.
/// No backoff wait is ever longer than `cap`; a server's hint may make a wait
/// up to 1.1 x `cap` (see [`Policy::hinted_wait`](crate::Policy::hinted_wait)).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Jitter {
    /// Uniform between zero and the ceiling: the widest spread and, in the
    /// published simulations, the least total work for the server. The default.
    #[default]
    Full,
    /// At least half the ceiling, plus a uniform share of the other half.
    Equal,
    /// Each wait drawn from `[base, 3 * previous]`, capped: it grows with the
    /// waits actually taken rather than with the attempt number.
    Decorrelated,
    /// Exactly the ceiling. Clients that failed together retry together: use
    /// it only where a single client retries alone, or in tests.
    None,
    /// gRFC A6 as amended (grpc/proposal#452): `ceiling(n) * uniform(0.8,
    /// 1.2)`, so a wait may reach 1.2 x `cap`, with `ceiling(n) =
    /// min(base * multiplier^n, cap)` for any multiplier above zero and any
    /// `base`, and A6's rules for hints and hedges (see
    /// `config::grpc`). Only a gRPC service config
    /// selects it; the attribute's `jitter` key has no name for it, and
    /// setting another jitter leaves A6's rules.
    #[doc(hidden)]
    Grpc,
}

impl Jitter {
    /// Every jitter the attribute's `jitter` key names, in the order the
    /// documentation lists them.
    pub const ALL: [Jitter; 4] = [
        Jitter::Full,
        Jitter::Equal,
        Jitter::Decorrelated,
        Jitter::None,
    ];

    /// The name the attribute and configuration use: `"full"`, `"equal"`,
    /// `"decorrelated"` or `"none"`.
    #[must_use]
    pub const fn name(self) -> &'static str {
        match self {
            Jitter::Full => "full",
            Jitter::Equal => "equal",
            Jitter::Decorrelated => "decorrelated",
            Jitter::None => "none",
            Jitter::Grpc => "grpc",
        }
    }
}

impl fmt::Display for Jitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(self.name())
    }
}

/// A jitter name that is not `"full"`, `"equal"`, `"decorrelated"` or `"none"`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownJitter(pub String);

impl fmt::Display for UnknownJitter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown jitter `{}`: expected \"full\", \"equal\", \"decorrelated\" or \"none\"",
            self.0
        )
    }
}

impl std::error::Error for UnknownJitter {}

impl FromStr for Jitter {
    type Err = UnknownJitter;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        Jitter::ALL
            .into_iter()
            .find(|jitter| jitter.name() == name)
            .ok_or_else(|| UnknownJitter(name.to_owned()))
    }
}
