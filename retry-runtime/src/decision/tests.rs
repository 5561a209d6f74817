use super::*;
use crate::Policy;

const POLICY: Policy = Policy::new()
    .with_max_attempts(3)
    .with_base(Duration::from_millis(100))
    .with_jitter(Jitter::None);

/// [`decide_carrying`] without the carry.
fn decide<Timeout>(
    policy: &Policy<Timeout>,
    failure: &Failure,
    random: impl FnMut() -> u64,
) -> Result<Duration, Stop> {
    decide_carrying(&policy.params, failure, random).map(|(wait, _)| wait)
}

fn failure(attempt: u32) -> Failure {
    Failure {
        attempt,
        hint: None,
        carry: 0,
        budget_allows: true,
        inner_gave_up: false,
        time_left: TimeLeft::Unbounded,
        at_once: false,
    }
}

#[test]
fn the_wait_before_retry_n_is_ceiling_n() {
    assert_eq!(
        decide(&POLICY, &failure(1), || 0),
        Ok(Duration::from_millis(100))
    );
    // After retry 0, whose ceiling the call carries.
    let second = Failure {
        carry: 100_000_000,
        ..failure(2)
    };
    assert_eq!(
        decide(&POLICY, &second, || 0),
        Ok(Duration::from_millis(200))
    );
}

#[test]
#[cfg(any(feature = "tower", feature = "reqwest-middleware"))]
fn a_request_never_processed_is_sent_again_a_bounded_number_of_times() {
    let mut resent = Resent::default();
    let left = TimeLeft::Until(Duration::from_secs(1));
    for _ in 0..Resent::MOST_UNSENT {
        assert!(resent.again(&POLICY.params, Classification::Unsent, left));
    }
    assert!(!resent.again(&POLICY.params, Classification::Unsent, left));
    assert!(resent.again(&POLICY.params, Classification::Unprocessed, left));
    assert!(
        !resent.again(&POLICY.params, Classification::Unprocessed, left),
        "once after a refusal"
    );
    let transient = Classification::Transient(None);
    assert!(!Resent::default().again(&POLICY.params, transient, left));
    for late in [TimeLeft::Passed, TimeLeft::Until(Duration::ZERO)] {
        let timed = POLICY.with_timeout(Duration::from_secs(1));
        let policy = if late == TimeLeft::Passed {
            POLICY.params
        } else {
            timed.params
        };
        let unsent = Classification::Unsent;
        assert!(!Resent::default().again(&policy, unsent, late), "{late:?}");
    }
    let unbounded = TimeLeft::Unbounded;
    assert!(Resent::default().again(&POLICY.params, Classification::Unsent, unbounded));
}

#[test]
fn attempt_max_is_the_last() {
    assert_eq!(decide(&POLICY, &failure(3), || 0), Err(Stop::Exhausted));
    assert_eq!(
        decide(&POLICY, &failure(u32::MAX), || 0),
        Err(Stop::Exhausted)
    );
}

#[test]
fn an_inner_layer_that_gave_up_stops_the_outer_unless_it_says_retry() {
    let inner = Failure {
        inner_gave_up: true,
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &inner, || 0), Err(Stop::Nested));
    let stubborn = POLICY.with_nested(Nested::Retry);
    assert_eq!(
        decide(&stubborn, &inner, || 0),
        Ok(Duration::from_millis(100))
    );
}

#[test]
fn a_wait_past_the_time_left_stops() {
    let late = Failure {
        time_left: TimeLeft::Until(Duration::from_millis(99)),
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &late, || 0), Err(Stop::Deadline));
}

#[test]
fn a_hint_above_cap_stops_and_one_below_is_honoured() {
    let long = Failure {
        hint: Some(Duration::from_secs(11)),
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &long, || 0), Err(Stop::HintTooLong));
    let short = Failure {
        hint: Some(Duration::from_secs(1)),
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &short, || 0), Ok(Duration::from_secs(1)));
}

#[test]
fn a_wait_ending_at_the_deadline_is_made_unless_the_attempt_gets_no_time() {
    let edge = Failure {
        time_left: TimeLeft::Until(Duration::from_millis(100)),
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &edge, || 0), Ok(Duration::from_millis(100)));
    let timed = POLICY.with_timeout(Duration::from_secs(1));
    assert_eq!(decide(&timed, &edge, || 0), Err(Stop::Deadline));
}

#[test]
fn a_retry_at_once_after_the_deadline_stops() {
    let at_the_edge = Failure {
        at_once: true,
        time_left: TimeLeft::Until(Duration::ZERO),
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &at_the_edge, || 0), Ok(Duration::ZERO));
    let past = Failure {
        time_left: TimeLeft::Passed,
        ..at_the_edge
    };
    assert_eq!(decide(&POLICY, &past, || 0), Err(Stop::Deadline));
}

#[test]
fn a_retry_at_once_waits_only_for_the_hint() {
    let at_once = Failure {
        at_once: true,
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &at_once, || 0), Ok(Duration::ZERO));
    let hinted = Failure {
        hint: Some(Duration::from_secs(1)),
        ..at_once
    };
    assert_eq!(decide(&POLICY, &hinted, || 0), Ok(Duration::from_secs(1)));
}

#[test]
fn a_spent_budget_stops() {
    let spent = Failure {
        budget_allows: false,
        ..failure(1)
    };
    assert_eq!(decide(&POLICY, &spent, || 0), Err(Stop::Budget));
}

#[test]
fn the_carried_ceiling_is_the_ceiling_computed_afresh() {
    let base = Duration::from_nanos(3);
    for multiplier in [
        0.0,
        0.5,
        1.0,
        1.5,
        2.0,
        3.0,
        7.0,
        1e19,
        18_446_744_073_709_551_616.0,
        1e30,
        f64::INFINITY,
        f64::NAN,
    ] {
        for cap in [
            Duration::ZERO,
            base,
            Duration::from_micros(5),
            Duration::MAX,
        ] {
            for base in [Duration::ZERO, base, Duration::from_millis(1)] {
                let policy = POLICY
                    .with_max_attempts(u32::MAX)
                    .with_base(base)
                    .with_cap(cap)
                    .with_multiplier(multiplier);
                let mut carry = 0;
                for n in 0..80 {
                    let (wait, ceiling) = policy.params.next_wait(n, carry, u64::MAX);
                    assert_eq!(Duration::from_nanos(ceiling), policy.ceiling(n));
                    assert_eq!(
                        Duration::from_nanos(wait),
                        policy.wait_with(n, base, u64::MAX)
                    );
                    carry = ceiling;
                }
            }
        }
    }
}
