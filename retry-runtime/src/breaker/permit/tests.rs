//! Marks of attempts holding permits, nested deeper than the thread keeps.

use super::{held_here, refused_here, CircuitPermit, MarkThread};
use crate::breaker::BreakerSlot;
use crate::CircuitBreaker;

/// Attempts holding permits, one inside another, deeper than the marks
/// keep: each sees its own breaker and the enclosing ones, a refusal
/// deep inside reaches every enclosing attempt, and leaving them all
/// leaves nothing marked.
#[test]
fn nested_marks_are_kept_and_set_back_beyond_their_depth() {
    static OUTER: CircuitBreaker = CircuitBreaker::new();
    static INNER: CircuitBreaker = CircuitBreaker::new();
    static OTHER: CircuitBreaker = CircuitBreaker::new();
    let mut outer = CircuitPermit::new(&OUTER);
    assert!(outer.acquire(true));
    let mut inner: Vec<CircuitPermit<'static>> =
        (0..6).map(|_| CircuitPermit::new(&INNER)).collect();
    for permit in &mut inner {
        assert!(permit.acquire(true), "nested calls run under the permit");
    }
    {
        let mut outer_mark = outer.mark();
        let _outer_hold = outer_mark.hold();
        assert!(held_here(&OUTER));
        assert!(!held_here(&INNER));
        {
            let mut marks: Vec<_> = inner.iter_mut().map(CircuitPermit::mark).collect();
            let mut holds: Vec<_> = marks.iter_mut().map(MarkThread::hold).collect();
            assert!(held_here(&OUTER) && held_here(&INNER));
            assert!(!held_here(&OTHER));
            refused_here();
            // Left innermost first, as the guards of nested polls are.
            while let Some(hold) = holds.pop() {
                drop(hold);
            }
            assert!(held_here(&OUTER), "the outer mark is set back");
            assert!(!held_here(&INNER));
        }
    }
    assert!(!held_here(&OUTER), "nothing is marked outside the attempts");
    assert!(
        outer.refused_inside,
        "a refusal deep inside reaches the outer attempt"
    );
    assert!(inner.iter().all(|permit| permit.refused_inside));
}
