//! A `tracing` layer that records the runtime's events, for the tests that
//! check them.
#![allow(dead_code)]

use std::sync::{Arc, Mutex};

/// A `tracing` layer that keeps every event from the runtime as text.
#[derive(Clone, Default)]
pub struct Events(pub Arc<Mutex<Vec<String>>>);

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Events {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        struct Fields(String);
        impl tracing::field::Visit for Fields {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                self.0.push_str(&format!(" {}={:?}", field.name(), value));
            }
        }
        if event.metadata().target() != "retry_runtime" {
            return;
        }
        let mut fields = Fields(format!("{}", event.metadata().level()));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
}

/// Makes `subscriber` this thread's default, as `set_default` does, after
/// making sure that no callsite of the runtime can be cached as "never" by a
/// test running beside this one on a thread without a subscriber.
///
/// `tracing` caches one interest per callsite for the whole process. While
/// at most one dispatcher exists, a callsite first reached on a thread with
/// no subscriber is judged by that thread alone and cached as `never`, and
/// the capturing thread then misses its events (seen in about a third of
/// parallel runs). A global subscriber that is interested in everything and
/// keeps nothing, installed once per test binary before the first capture,
/// makes every such judgement `always` or `sometimes`.
pub fn capture<S>(subscriber: S) -> tracing::subscriber::DefaultGuard
where
    S: tracing::Subscriber + Send + Sync + 'static,
{
    static ANCHOR: std::sync::Once = std::sync::Once::new();
    ANCHOR.call_once(|| {
        // Another global subscriber, if a test binary set one, is kept.
        let _ = tracing::subscriber::set_global_default(Anchor);
    });
    let guard = tracing::subscriber::set_default(subscriber);
    // Registering the anchor raises the process's maximum level before the
    // anchor becomes the global default: a callsite another thread first
    // reached in between was judged with no subscriber at all, and cached
    // as `never` (seen once in a CI run). Judged again now, with both.
    tracing::callsite::rebuild_interest_cache();
    guard
}

/// Interested in every callsite; records nothing.
struct Anchor;

impl tracing::Subscriber for Anchor {
    fn register_callsite(&self, _: &tracing::Metadata<'_>) -> tracing::subscriber::Interest {
        tracing::subscriber::Interest::always()
    }
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {}
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}
