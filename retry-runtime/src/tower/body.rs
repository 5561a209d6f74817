//! Request bodies that later attempts can send again: [`ReplayBody`], and
//! the [`Tape`] a streaming body is recorded on.

use core::marker::PhantomData;
use core::pin::Pin;
use core::task::{ready, Context, Poll};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;
use http::HeaderMap;
use http_body::{Body, Frame, SizeHint};

/// A request body that the layers ([`RetryLayer`](super::RetryLayer),
/// [`HedgeLayer`](crate::hedge::HedgeLayer)) can send again on a later
/// attempt: the one way a request is copied. The
/// [`CircuitBreakerLayer`](super::CircuitBreakerLayer) keeps the request's
/// head with an [`empty`](Self::empty) body for its classifier.
///
/// A body that is `Clone` (`Full`, `Empty`, `String`, `()`) is cloned for
/// each attempt. A streaming body (tonic's, a `BoxBody`) is recorded as the first
/// attempt sends it, up to a bound
/// ([`RetryLayer::with_max_body`](super::RetryLayer::with_max_body), 64 KiB
/// by default); a later attempt plays the recording back. A body no attempt
/// read anything from (the connection was refused, so nothing was sent) is
/// handed back whole, and the next attempt sends it as the first would
/// have. A body over the bound (the call's, or what all the calls of the
/// layer may hold at once,
/// [`with_max_buffered`](super::RetryLayer::with_max_buffered), 16 MiB by
/// default), or one the first attempt sent only part of (the server
/// answered first), is not recorded whole: the request is then
/// sent once (the hedge layer starts no hedge), and its transient failure is
/// returned as
/// [`Classification::Unrepeatable`](crate::Classification::Unrepeatable):
/// the call stops with [`Stop::NotRetryable`](crate::Stop::NotRetryable).
/// The first attempt streams as it would without the layer: nothing waits
/// for the body to be read first, so client and bidirectional streams work.
///
/// Implemented for `http_body_util::{Full, Empty}`, `String`, `()`, the boxed
/// bodies `http_body_util::combinators::{BoxBody, UnsyncBoxBody}` of
/// `Bytes`, and `tonic::body::Body` (feature `grpc`). For a body type of
/// your own, implement it by cloning (`type Source = Self`, as `Full` does)
/// if the body is cheap to clone, or box the body
/// (`http_body_util::BodyExt::boxed`) into a `BoxBody`, which is recorded.
pub trait ReplayBody: Sized + Send + 'static {
    /// What the later attempts' bodies are made from.
    type Source: Send + 'static;

    /// The first attempt's body, and the source of the later ones;
    /// recording keeps at most `limit` bytes.
    fn record(self, limit: usize) -> (Self, Self::Source);

    /// [`record`](Self::record), what is recorded also counted against
    /// what all the calls of a layer may keep at once (`buffer`). A body
    /// that is cloned keeps nothing of its own: its source is the caller's
    /// body.
    #[doc(hidden)]
    fn record_in(self, limit: usize, _buffer: &Arc<Buffer>) -> (Self, Self::Source) {
        self.record(limit)
    }

    /// The next attempt's body, or `None` when the body cannot be sent
    /// again (over the bound, or not sent to its end).
    fn replay(source: &Self::Source) -> Option<Self>;

    /// Whether [`replay`](Self::replay) would give a body now, without
    /// making one. The hedge layer asks before it sends another copy.
    fn can_replay(source: &Self::Source) -> bool {
        Self::replay(source).is_some()
    }

    /// An empty body: the request the classifier reads has the attempt's
    /// head and no body (the attempt's own was sent).
    fn empty() -> Self;
}

macro_rules! replay_by_clone {
    ($($body:ty => [$($generics:tt)*] $empty:expr;)*) => {$(
        impl<$($generics)*> ReplayBody for $body {
            type Source = Self;

            fn record(self, _limit: usize) -> (Self, Self) {
                (self.clone(), self)
            }

            fn replay(source: &Self) -> Option<Self> {
                Some(source.clone())
            }

            fn can_replay(_: &Self) -> bool {
                true
            }

            fn empty() -> Self {
                $empty
            }
        }
    )*};
}

replay_by_clone! {
    () => [] ();
    String => [] String::new();
    http_body_util::Full<D> => [D: bytes::Buf + Clone + Send + 'static] http_body_util::Full::default();
    http_body_util::Empty<D> => [D: bytes::Buf + Send + 'static] http_body_util::Empty::new();
}

/// `ReplayBody` for bodies recorded on a [`Tape`]: the next attempt gets the
/// body itself when the one before dropped it unread (a refused
/// connection), and the recording otherwise.
macro_rules! replay_by_tape {
    ($($(#[$attr:meta])* $ty:ty => [$($generics:tt)*] error $error:ty, empty $empty:expr;)*) => {$(
        $(#[$attr])*
        impl<$($generics)*> ReplayBody for $ty {
            type Source = Tape;

            fn record(self, limit: usize) -> (Self, Tape) {
                let tape = Tape::new(limit, None);
                (Self::new(tape.record(self)), tape)
            }

            fn record_in(self, limit: usize, buffer: &Arc<Buffer>) -> (Self, Tape) {
                let tape = Tape::new(limit, Some(Arc::clone(buffer)));
                (Self::new(tape.record(self)), tape)
            }

            fn replay(tape: &Tape) -> Option<Self> {
                // Only one attempt at a time can send the unread body.
                let unread = tape.lock().unread.take().and_then(|body| body.downcast::<Self>().ok());
                match unread {
                    Some(unread) => Some(Self::new(tape.record(*unread))),
                    None => tape.playback::<$error>().map(Self::new),
                }
            }

            fn can_replay(tape: &Tape) -> bool {
                let recorded = tape.lock();
                recorded.is_whole() || recorded.unread.is_some()
            }

            fn empty() -> Self {
                $empty
            }
        }
    )*};
}

replay_by_tape! {
    http_body_util::combinators::BoxBody<Bytes, E> => [E: Send + 'static] error E, empty Self::default();
    http_body_util::combinators::UnsyncBoxBody<Bytes, E> => [E: Send + 'static] error E, empty Self::default();
    #[cfg(feature = "grpc")]
    tonic::body::Body => [] error tonic::Status, empty Self::empty();
}

/// What the first attempt's body sent, for the later attempts.
#[derive(Clone)]
pub struct Tape(Arc<Mutex<Recorded>>);

#[derive(Default)]
struct Recorded {
    chunks: Vec<Bytes>,
    len: usize,
    limit: usize,
    trailers: Option<HeaderMap>,
    /// The body was sent to its end.
    ended: bool,
    /// More than `limit` bytes, or a failed body: nothing to replay.
    spoilt: bool,
    /// The body itself, given back by an attempt that dropped it before it
    /// gave up a frame (a refused connection sends nothing): the next
    /// attempt sends it as the first would have.
    unread: Option<Box<dyn core::any::Any + Send>>,
    /// What the layer's calls keep at once, of which this recording holds
    /// `len` bytes until it is spoilt or goes with its call.
    buffer: Option<Arc<Buffer>>,
}

/// What the recordings of all the calls of one layer hold at once, and the
/// most they may (gRFC A6's per-channel limit on what is kept for replay;
/// `with_max_body` is its per-call one). A recording that would take it past
/// the most is spoilt: that call is sent once, not retried. Shared by the
/// services a layer makes, and by the layer's clones.
#[derive(Debug)]
pub struct Buffer {
    held: AtomicUsize,
    most: usize,
}

impl Buffer {
    pub(crate) fn new(most: usize) -> Arc<Self> {
        Arc::new(Buffer {
            held: AtomicUsize::new(0),
            most,
        })
    }

    /// Takes `bytes` if they fit under the most.
    fn take(&self, bytes: usize) -> bool {
        self.held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes).filter(|&held| held <= self.most)
            })
            .is_ok()
    }

    /// Gives back `bytes` that [`take`](Self::take) took.
    fn give_back(&self, bytes: usize) {
        self.held.fetch_sub(bytes, Ordering::AcqRel);
    }
}

impl Tape {
    fn new(limit: usize, buffer: Option<Arc<Buffer>>) -> Self {
        let mut recorded = Recorded::default();
        recorded.limit = limit;
        recorded.buffer = buffer;
        Tape(Arc::new(Mutex::new(recorded)))
    }

    fn lock(&self) -> MutexGuard<'_, Recorded> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `body`, recorded on this tape as an attempt sends it.
    fn record<B: Send + 'static>(&self, body: B) -> Recording<B> {
        Recording {
            body: Some(body),
            read: false,
            tape: self.clone(),
        }
    }

    /// A body that plays the recording back, or `None` when the first
    /// attempt did not send its whole body, or it was over the bound.
    fn playback<E>(&self) -> Option<Playback<E>> {
        let recorded = self.lock();
        recorded.is_whole().then(|| Playback {
            chunks: recorded.chunks.iter().cloned().collect(),
            trailers: recorded.trailers.clone(),
            error: PhantomData,
        })
    }
}

/// An attempt's body, recorded on a [`Tape`] as it is sent. Until it gives
/// up a frame it is whole, and when dropped so (its request was never
/// sent) it goes back to the tape for the next attempt.
struct Recording<B: Send + 'static> {
    body: Option<B>,
    read: bool,
    tape: Tape,
}

impl<B: Body<Data = Bytes> + Unpin + Send + 'static> Body for Recording<B> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = &mut *self;
        let Some(body) = this.body.as_mut() else {
            return Poll::Ready(None);
        };
        let frame = ready!(Pin::new(body).poll_frame(cx));
        this.read = true;
        let mut recorded = this.tape.lock();
        match &frame {
            Some(Ok(frame)) => {
                if let Some(data) = frame.data_ref() {
                    recorded.keep(data);
                } else if let Some(trailers) = frame.trailers_ref() {
                    recorded.trailers = Some(trailers.clone());
                }
            }
            Some(Err(_)) => recorded.spoil(),
            None => recorded.ended = true,
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        let end = self.body.as_ref().is_none_or(Body::is_end_stream);
        if end {
            // A sender that sees the end here does not poll again.
            self.tape.lock().ended = true;
        }
        end
    }

    fn size_hint(&self) -> SizeHint {
        self.body
            .as_ref()
            .map_or_else(|| SizeHint::with_exact(0), Body::size_hint)
    }
}

impl<B: Send + 'static> Drop for Recording<B> {
    fn drop(&mut self) {
        let Some(body) = self.body.take().filter(|_| !self.read) else {
            return;
        };
        let mut recorded = self.tape.lock();
        if !recorded.ended && !recorded.spoilt {
            recorded.unread = Some(Box::new(body));
        }
    }
}

impl Recorded {
    /// The first attempt sent its whole body, within the bound: there is a
    /// recording to play back.
    fn is_whole(&self) -> bool {
        self.ended && !self.spoilt
    }

    fn keep(&mut self, data: &Bytes) {
        if self.spoilt {
            return;
        }
        let len = self.len.checked_add(data.len());
        let fits = |buffer: &Arc<Buffer>| buffer.take(data.len());
        match len.filter(|&len| len <= self.limit) {
            Some(len) if self.buffer.as_ref().is_none_or(fits) => {
                self.len = len;
                self.chunks.push(data.clone());
            }
            _ => self.spoil(),
        }
    }

    fn spoil(&mut self) {
        self.spoilt = true;
        self.chunks = Vec::new();
        if let Some(buffer) = &self.buffer {
            buffer.give_back(core::mem::take(&mut self.len));
        }
    }
}

impl Drop for Recorded {
    /// What the recording holds of its layer's buffer goes with its call.
    fn drop(&mut self) {
        self.spoil();
    }
}

/// A later attempt's body: the first attempt's, played back.
struct Playback<E> {
    chunks: VecDeque<Bytes>,
    trailers: Option<HeaderMap>,
    error: PhantomData<fn() -> E>,
}

impl<E> Body for Playback<E> {
    type Data = Bytes;
    type Error = E;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, E>>> {
        let this = &mut *self;
        let frame = this.chunks.pop_front().map(Frame::data);
        Poll::Ready(
            frame
                .or_else(|| this.trailers.take().map(Frame::trailers))
                .map(Ok),
        )
    }

    fn is_end_stream(&self) -> bool {
        self.chunks.is_empty() && self.trailers.is_none()
    }

    fn size_hint(&self) -> SizeHint {
        let len = self.chunks.iter().map(Bytes::len).sum::<usize>();
        SizeHint::with_exact(u64::try_from(len).unwrap_or(u64::MAX))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    /// A body of a few frames, then trailers.
    struct Frames(VecDeque<Frame<Bytes>>);

    impl Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }
    }

    fn frames() -> Frames {
        let mut trailers = HeaderMap::new();
        trailers.insert("x-sum", "6".parse().unwrap());
        Frames(VecDeque::from([
            Frame::data(Bytes::from_static(b"ab")),
            Frame::data(Bytes::from_static(b"cd")),
            Frame::data(Bytes::from_static(b"ef")),
            Frame::trailers(trailers),
        ]))
    }

    /// `body`, recorded on a tape that keeps at most `limit` bytes.
    fn record<B: Send + 'static>(body: B, limit: usize) -> (Recording<B>, Tape) {
        let tape = Tape::new(limit, None);
        (tape.record(body), tape)
    }

    #[tokio::test]
    async fn a_recorded_body_plays_back_the_same_bytes_and_trailers() {
        let (recording, tape) = record(frames(), 6);
        assert!(
            tape.playback::<()>().is_none(),
            "nothing to replay before it is sent"
        );
        let sent = recording.collect().await.unwrap();
        let replayed = tape.playback::<()>().unwrap().collect().await.unwrap();
        assert_eq!(replayed.trailers().unwrap()["x-sum"], "6");
        assert_eq!(replayed.to_bytes(), "abcdef");
        assert_eq!(sent.to_bytes(), "abcdef");
        let again = tape.playback::<()>().unwrap().collect().await.unwrap();
        assert_eq!(again.to_bytes(), "abcdef", "as many times as asked");
    }

    #[tokio::test]
    async fn a_body_over_the_bound_or_not_sent_to_its_end_is_not_replayed() {
        let (recording, tape) = record(frames(), 5);
        let sent = recording.collect().await.unwrap();
        assert_eq!(sent.to_bytes(), "abcdef", "the first attempt sends it all");
        assert!(tape.playback::<()>().is_none());

        let (mut recording, tape) = record(frames(), 64);
        let first = recording.frame().await.unwrap().unwrap();
        assert_eq!(first.into_data().unwrap(), "ab");
        drop(recording);
        assert!(tape.playback::<()>().is_none());
    }
}
