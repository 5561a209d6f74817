//! The fields of configuration as it holds them, each read with the kind of
//! value it takes, so that a value of the wrong kind (`base = 200`,
//! `max = "3"`, `"initialBackoff": 5`) is an error that names the field and
//! says what to write, in every serde format: the error's "expected ..." is
//! the field's own. A policy's keys (`config.rs`) and a gRPC service
//! config's fields (`grpc/load/raw.rs`) are read alike.

use core::fmt;
use core::marker::PhantomData;

use serde::de::{DeserializeSeed, Deserializer, Error, Expected, Unexpected, Visitor};

/// A field (`base`, `retryPolicy.maxAttempts`) read as a `T`: a value of
/// another kind is an error that says "expected `{name}` as {expected}".
#[derive(Clone)]
pub(crate) struct Field<T> {
    name: &'static str,
    expected: &'static str,
    kind: PhantomData<T>,
}

impl<T> Field<T> {
    pub(crate) const fn new(name: &'static str, expected: &'static str) -> Self {
        Field {
            name,
            expected,
            kind: PhantomData,
        }
    }
}

/// A scalar as configuration writes it: a number, or a string (which a
/// gRPC service config may write a number as, as protobuf's JSON mapping
/// does); anything else is kept as written, for an error that names the
/// field.
#[derive(Clone)]
pub(crate) enum Number {
    Integer(i128),
    Float(f64),
    Text(String),
    Other(String),
}

impl Number {
    /// A number's value, whole or not; `None` for a string or a boolean.
    #[allow(clippy::cast_precision_loss)] // A whole number read as a float.
    pub(crate) fn as_f64(&self) -> Option<f64> {
        match *self {
            Number::Integer(integer) => Some(integer as f64),
            Number::Float(float) => Some(float),
            Number::Text(_) | Number::Other(_) => None,
        }
    }
}

/// As written, for an error that names the field and the value.
impl fmt::Display for Number {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Number::Integer(number) => write!(f, "{number}"),
            Number::Float(number) => write!(f, "{number}"),
            Number::Text(text) => write!(f, "{text:?}"),
            Number::Other(value) => f.write_str(value),
        }
    }
}

/// Serde's error for a value a field does not take, given the value and
/// what the field expects.
pub(crate) type Unfit<E> = fn(Unexpected<'_>, &dyn Expected) -> E;

/// A kind of value a field takes.
pub(crate) trait Kind: Sized {
    /// Asks for this kind (`deserialize_u32` for a `u32`, any value for a
    /// [`Number`]), which matters to formats that say a value's kind only
    /// when asked, such as environment variables.
    fn ask<'de, D: Deserializer<'de>>(d: D, field: Field<Self>) -> Result<Self, D::Error>;

    /// `scalar` as this kind, or the error for it: `invalid_value` if it is
    /// of this kind but out of range (a `u32` of -1), `invalid_type` if it
    /// is of another kind.
    fn take<E: Error>(scalar: Number) -> Result<Self, Unfit<E>>;
}

/// The kinds asked for by name (`Type: deserialize_type, |scalar| take`):
/// `take` is [`Kind::take`].
macro_rules! kinds {
    ($($(#[$doc:meta])* $kind:ty: $ask:ident, |$scalar:ident| $take:expr;)*) => {$(
        $(#[$doc])*
        impl Kind for $kind {
            fn ask<'de, D: Deserializer<'de>>(d: D, field: Field<Self>) -> Result<Self, D::Error> {
                d.$ask(field)
            }

            fn take<E: Error>($scalar: Number) -> Result<Self, Unfit<E>> {
                $take
            }
        }
    )*};
}

kinds! {
    /// A string: a duration, a jitter or a `nested` name, a service's name.
    String: deserialize_string, |scalar| match scalar {
        Number::Text(text) => Ok(text),
        _ => Err(E::invalid_type),
    };
    /// A whole number, such as a policy's `max`: zero reads, for the policy's
    /// own rule to reject with its explanation.
    u32: deserialize_u32, |scalar| match scalar {
        Number::Integer(integer) => u32::try_from(integer).or(Err(E::invalid_value)),
        _ => Err(E::invalid_type),
    };
    /// A number, whole or not, such as a policy's `multiplier`: whether it is
    /// at least 1 and finite is the policy's own rule.
    f64: deserialize_f64, |scalar| scalar.as_f64().ok_or(E::invalid_type);
    /// Any scalar, as a gRPC service config's numbers and status codes are
    /// written (`3`, `"3"`, `"UNAVAILABLE"`), which its rules read.
    Number: deserialize_any, |scalar| Ok(scalar);
}

impl<T: Kind> Visitor<'_> for Field<T> {
    type Value = T;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "`{}` as {}", self.name, self.expected)
    }

    fn visit_u64<E: Error>(self, value: u64) -> Result<T, E> {
        self.take(Number::Integer(value.into()), Unexpected::Unsigned(value))
    }

    fn visit_i64<E: Error>(self, value: i64) -> Result<T, E> {
        self.take(Number::Integer(value.into()), Unexpected::Signed(value))
    }

    fn visit_f64<E: Error>(self, value: f64) -> Result<T, E> {
        self.take(Number::Float(value), Unexpected::Float(value))
    }

    fn visit_bool<E: Error>(self, value: bool) -> Result<T, E> {
        self.take(Number::Other(value.to_string()), Unexpected::Bool(value))
    }

    fn visit_str<E: Error>(self, value: &str) -> Result<T, E> {
        self.take(Number::Text(value.to_owned()), Unexpected::Str(value))
    }
}

impl<T: Kind> Field<T> {
    /// The value of `scalar` (`unexpected` to serde), or serde's error for
    /// a value out of range or of another kind, expecting this field.
    fn take<E: Error>(self, scalar: Number, unexpected: Unexpected<'_>) -> Result<T, E> {
        T::take(scalar).map_err(|error| error(unexpected, &self))
    }
}

impl<'de, T: Kind> DeserializeSeed<'de> for Field<T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<T, D::Error> {
        T::ask(deserializer, self)
    }
}

/// A field that may be left out or `null`: `None` then, the value read by
/// `read` otherwise.
pub(crate) fn optional<'de, D, S>(deserializer: D, read: S) -> Result<Option<S::Value>, D::Error>
where
    D: Deserializer<'de>,
    S: DeserializeSeed<'de> + Expected,
{
    struct Optional<S>(S);

    impl<'de, S: DeserializeSeed<'de> + Expected> Visitor<'de> for Optional<S> {
        type Value = Option<S::Value>;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            Expected::fmt(&self.0, f)
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
            self.0.deserialize(deserializer).map(Some)
        }
    }

    deserializer.deserialize_option(Optional(read))
}

/// The readers of a struct's fields, for serde's `deserialize_with`: `name:
/// Type = read`, each reading a field that may be left out or `null`.
macro_rules! readers {
    ($($name:ident: $value:ty = $read:expr,)*) => {$(
        pub(super) fn $name<'de, D: serde::Deserializer<'de>>(
            d: D,
        ) -> Result<Option<$value>, D::Error> {
            $crate::config::fields::optional(d, $read)
        }
    )*};
}
pub(crate) use readers;
