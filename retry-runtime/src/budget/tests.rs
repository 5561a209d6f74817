//! The gRPC rule's count: what failures take, successes give back and a
//! hedge takes, within its bounds.

use super::RetryBudget;

/// A hedge's token: taken only while a retry is allowed after taking
/// it, and nothing taken once it is not; a refund gives one back.
#[test]
fn a_hedge_takes_a_token_only_when_allowed() {
    let budget = RetryBudget::new(10, 0.0);
    // 10 -> 9, 8, 7, 6: each leaves more than half.
    for _ in 0..4 {
        assert!(budget.try_take());
    }
    assert!(!budget.try_take(), "6 -> 5 would not be above half");
    assert!((budget.tokens() - 6.0).abs() < 1e-9, "nothing taken");
    budget.refund();
    assert!((budget.tokens() - 7.0).abs() < 1e-9);
    assert!(budget.try_take());
}

#[test]
fn failures_take_a_token_and_retries_stop_at_half() {
    let budget = RetryBudget::new(10, 0.5);
    // 10 -> 9, 8, 7, 6: still above 5.
    for _ in 0..4 {
        assert!(budget.record_failure());
    }
    // 6 -> 5: not above half.
    assert!(!budget.record_failure());
    assert!((budget.tokens() - 5.0).abs() < 1e-9);
    // Two successes give back one token: 6, above half again.
    budget.record_success();
    budget.record_success();
    assert!(!budget.allows_retry());
    assert!((budget.tokens() - 6.0).abs() < 1e-9);
}

#[test]
fn the_count_stays_between_zero_and_the_maximum() {
    let budget = RetryBudget::new(3, 1.0);
    for _ in 0..10 {
        budget.record_failure();
    }
    assert_eq!(budget.tokens(), 0.0);
    for _ in 0..10 {
        budget.record_success();
    }
    assert_eq!(budget.tokens(), 3.0);
}

#[test]
fn odd_ratios_and_sizes_do_not_panic() {
    for ratio in [f32::NAN, -1.0, 0.0, 0.001, 1e30, f32::INFINITY] {
        let budget = RetryBudget::new(u32::MAX, ratio);
        budget.record_success();
        budget.record_failure();
        assert!(budget.tokens() <= budget.max_tokens());
    }
    let empty = RetryBudget::new(0, 1.0);
    assert!(!empty.record_failure());
}
