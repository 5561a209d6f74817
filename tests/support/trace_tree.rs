//! A `tracing` layer that records every span (with its parent and whether it
//! closed) and every event (with the spans it was emitted in), for the tests
//! that check how the runtime's spans and events nest.
#![allow(dead_code)]

use std::fmt::Debug;
use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;
use tracing_subscriber::Layer;

/// One span: its name, its fields as text, the index of its parent in
/// [`Recorded::spans`], and whether it closed.
#[derive(Clone, Debug, Default)]
pub struct SpanRecord {
    pub name: String,
    pub fields: String,
    pub parent: Option<usize>,
    pub closed: bool,
}

/// One event: level, fields as text, and the indices of the spans it was in,
/// innermost first.
#[derive(Clone, Debug)]
pub struct EventRecord {
    pub level: tracing::Level,
    pub target: String,
    pub fields: String,
    pub scope: Vec<usize>,
    /// When it was emitted, on tokio's clock (paused in the tests).
    pub at: tokio::time::Instant,
}

impl EventRecord {
    pub fn is_runtime(&self) -> bool {
        self.target == "retry_runtime"
    }
}

#[derive(Default, Debug)]
pub struct Recorded {
    pub spans: Vec<SpanRecord>,
    pub events: Vec<EventRecord>,
}

impl Recorded {
    /// The runtime's events, as `LEVEL fields`.
    pub fn runtime_events(&self) -> Vec<String> {
        self.events
            .iter()
            .filter(|event| event.is_runtime())
            .map(|event| format!("{}{}", event.level, event.fields))
            .collect()
    }

    /// The span at `index` as `name fields`.
    pub fn describe(&self, index: usize) -> String {
        let span = &self.spans[index];
        format!("{}{}", span.name, span.fields)
    }
}

#[derive(Clone, Default)]
pub struct Tree(pub Arc<Mutex<Recorded>>);

impl Tree {
    pub fn take(&self) -> Recorded {
        std::mem::take(&mut *self.0.lock().unwrap())
    }
}

struct Index(usize);

struct Fields(String);

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.0.push_str(&format!(" {}={:?}", field.name(), value));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Tree {
    fn on_new_span(&self, attributes: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let parent = if let Some(parent) = attributes.parent() {
            Some(parent.clone())
        } else if attributes.is_contextual() {
            ctx.current_span().id().cloned()
        } else {
            None
        };
        let parent = parent.and_then(|parent| {
            ctx.span(&parent)
                .and_then(|span| span.extensions().get::<Index>().map(|index| index.0))
        });
        let mut fields = Fields(String::new());
        attributes.record(&mut fields);
        let mut recorded = self.0.lock().unwrap();
        let index = recorded.spans.len();
        recorded.spans.push(SpanRecord {
            name: attributes.metadata().name().to_owned(),
            fields: fields.0,
            parent,
            closed: false,
        });
        drop(recorded);
        ctx.span(id).unwrap().extensions_mut().insert(Index(index));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(index) = ctx
            .span(id)
            .and_then(|span| span.extensions().get::<Index>().map(|index| index.0))
        else {
            return;
        };
        let mut fields = Fields(String::new());
        values.record(&mut fields);
        self.0.lock().unwrap().spans[index]
            .fields
            .push_str(&fields.0);
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let scope = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .filter_map(|span| span.extensions().get::<Index>().map(|index| index.0))
                    .collect()
            })
            .unwrap_or_default();
        let mut fields = Fields(String::new());
        event.record(&mut fields);
        self.0.lock().unwrap().events.push(EventRecord {
            level: *event.metadata().level(),
            target: event.metadata().target().to_owned(),
            fields: fields.0,
            scope,
            at: tokio::time::Instant::now(),
        });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(index) = ctx
            .span(&id)
            .and_then(|span| span.extensions().get::<Index>().map(|index| index.0))
        {
            self.0.lock().unwrap().spans[index].closed = true;
        }
    }
}

/// Installs a [`Tree`] as this thread's subscriber.
pub fn install() -> (Tree, tracing::subscriber::DefaultGuard) {
    use tracing_subscriber::layer::SubscriberExt;
    let tree = Tree::default();
    let guard = crate::events::capture(tracing_subscriber::registry().with(tree.clone()));
    (tree, guard)
}
