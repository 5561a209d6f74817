//! The values of a policy's keys as configuration holds them, each read
//! with the kind of value its key takes, so that a value of the wrong kind
//! (`base = 200`, `max = "3"`, `multiplier = "2"`) is an error that names
//! the key and says what to write, in every serde format: the error's
//! "expected ..." is the key's own.

use core::fmt;
use core::marker::PhantomData;

use serde::de::{Deserializer, Error, Unexpected, Visitor};

/// How one key's value is read: the `deserialize_*` it asks for, and the
/// visitor whose `expecting` names the key.
pub(super) trait Read<'de>: Visitor<'de> + Sized {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error>;
}

/// A key whose value is a string: a duration, a jitter or a `nested` name.
/// `expected` says what to write, after the key's name.
pub(super) struct Text {
    pub key: &'static str,
    pub expected: &'static str,
}

impl Visitor<'_> for Text {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` as {}", self.key, self.expected)
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<String, E> {
        Ok(value.to_owned())
    }
}

impl<'de> Read<'de> for Text {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<String, D::Error> {
        deserializer.deserialize_string(self)
    }
}

/// `max`: a whole number of attempts. Zero reads, for the policy's own
/// rule to reject with its explanation.
pub(super) struct Attempts;

impl Visitor<'_> for Attempts {
    type Value = u32;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`max` as a whole number of attempts from 1 to {}, the first call included, such as 4",
            u32::MAX
        )
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<u32, E> {
        u32::try_from(value).map_err(|_| E::invalid_value(Unexpected::Unsigned(value), &self))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<u32, E> {
        u32::try_from(value).map_err(|_| E::invalid_value(Unexpected::Signed(value), &self))
    }
}

impl<'de> Read<'de> for Attempts {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<u32, D::Error> {
        deserializer.deserialize_u32(self)
    }
}

/// `multiplier`: a number, whole or not. Whether it is at least 1 and
/// finite is the policy's own rule.
pub(super) struct Multiplier;

impl Visitor<'_> for Multiplier {
    type Value = f64;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`multiplier` as a number of at least 1, such as 2 or 1.5")
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<f64, E> {
        Ok(value)
    }

    #[allow(clippy::cast_precision_loss)] // A whole number read as a float.
    fn visit_u64<E: Error>(self, value: u64) -> Result<f64, E> {
        Ok(value as f64)
    }

    #[allow(clippy::cast_precision_loss)] // A whole number read as a float.
    fn visit_i64<E: Error>(self, value: i64) -> Result<f64, E> {
        Ok(value as f64)
    }
}

impl<'de> Read<'de> for Multiplier {
    fn read<D: Deserializer<'de>>(self, deserializer: D) -> Result<f64, D::Error> {
        deserializer.deserialize_f64(self)
    }
}

/// A key that may be left out or `null`: `None` then, the value read by
/// `read` otherwise.
pub(super) fn optional<'de, D, R>(deserializer: D, read: R) -> Result<Option<R::Value>, D::Error>
where
    D: Deserializer<'de>,
    R: Read<'de>,
{
    struct Optional<'de, R>(R, PhantomData<&'de ()>);

    impl<'de, R: Read<'de>> Visitor<'de> for Optional<'de, R> {
        type Value = Option<R::Value>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.expecting(f)
        }

        fn visit_none<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_unit<E: Error>(self) -> Result<Self::Value, E> {
            Ok(None)
        }

        fn visit_some<D: Deserializer<'de>>(
            self,
            deserializer: D,
        ) -> Result<Self::Value, D::Error> {
            self.0.read(deserializer).map(Some)
        }
    }

    deserializer.deserialize_option(Optional(read, PhantomData))
}
