//! A `tracing` layer that records the runtime's events, for the tests that
//! check them.

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
