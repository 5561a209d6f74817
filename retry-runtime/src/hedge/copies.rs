//! One request's copies under the hedge layer: how each is made (the first
//! sent by the service polled ready, the others by its clones once ready)
//! and how their answers are judged.

use core::future::Future;
use core::pin::Pin;
use core::task::{Context, Poll};
use core::time::Duration;

use ::tower::Service;

use super::parts::MakeAttempt;
use crate::rules::RulesFor;
use crate::tower::Classify;
use crate::Classification;

/// Makes each copy of the request: the first is sent by the service polled
/// ready, the others by its clones, once ready.
pub(super) struct Copies<S, Req, F, K> {
    pub(super) service: S,
    pub(super) first: Option<Req>,
    pub(super) copy: F,
    pub(super) can_copy: K,
}

impl<S, Req, F, K> MakeAttempt for Copies<S, Req, F, K>
where
    S: Service<Req> + Clone,
    F: Fn() -> Option<Req>,
    K: Fn() -> bool,
{
    type Attempt = RequestCopy<S, Req>;

    fn make(&mut self) -> RequestCopy<S, Req> {
        // The hedged call makes its first attempt with `make`, when `first`
        // is always there, and the others with `try_make`; a copy that
        // cannot be made fails no request here, it just never becomes ready.
        // Lazily: the fallback's clone of the service is made only when it
        // is used, never for the first copy.
        match self.try_make() {
            Some(copy) => copy,
            None => RequestCopy::Waiting {
                service: self.service.clone(),
                request: None,
            },
        }
    }

    fn can_make(&self) -> bool {
        self.first.is_some() || (self.can_copy)()
    }

    fn sends_http(&self) -> bool {
        true
    }

    fn try_make(&mut self) -> Option<RequestCopy<S, Req>> {
        if let Some(first) = self.first.take() {
            return Some(RequestCopy::Sent {
                future: self.service.call(first),
            });
        }
        Some(RequestCopy::Waiting {
            service: self.service.clone(),
            request: Some((self.copy)()?),
        })
    }
}

pin_project_lite::pin_project! {
    /// One copy of the request: its service made ready, then called.
    #[project = RequestCopyProjection]
    pub(super) enum RequestCopy<S, Req>
    where
        S: Service<Req>,
    {
        // Waiting for its service to be ready.
        Waiting { service: S, request: Option<Req> },
        // Sent.
        Sent { #[pin] future: S::Future },
    }
}

impl<S, Req> Future for RequestCopy<S, Req>
where
    S: Service<Req>,
{
    type Output = Result<S::Response, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let future = match self.as_mut().project() {
                RequestCopyProjection::Sent { future } => return future.poll(cx),
                RequestCopyProjection::Waiting { service, request } => {
                    if let Err(error) = core::task::ready!(service.poll_ready(cx)) {
                        return Poll::Ready(Err(error));
                    }
                    let Some(request) = request.take() else {
                        return Poll::Pending;
                    };
                    service.call(request)
                }
            };
            self.set(RequestCopy::Sent { future });
        }
    }
}

/// The classifier, with the request it judges outcomes of (for a replayed
/// body, its head and an empty body: the copies sent theirs).
pub(super) struct Judged<'a, C, Req, K> {
    pub(super) classifier: &'a C,
    pub(super) request: Req,
    pub(super) can_copy: K,
}

impl<C, Req, Res, E, K> RulesFor<Result<Res, E>> for Judged<'_, C, Req, K>
where
    C: Classify<Req, Res, E>,
    K: Fn() -> bool,
{
    fn verdict(&self, outcome: &Result<Res, E>) -> Classification {
        match self.classifier.classify(&self.request, outcome) {
            // The request cannot be sent again (its body was over the bound,
            // or not sent to its end): a failure for the budget and the
            // breaker, returned as it came, as the retry layer does.
            Classification::Transient(_) if !(self.can_copy)() => Classification::Unrepeatable,
            verdict => verdict,
        }
    }

    fn before_wait(&self, _: &Result<Res, E>, _: u32, _: Duration) {}

    fn error_type(&self, outcome: &Result<Res, E>) -> Option<&'static str> {
        outcome.as_ref().err().map(|_| core::any::type_name::<E>())
    }
}
