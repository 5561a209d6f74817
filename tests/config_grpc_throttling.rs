//! `retryThrottling` from a gRPC service config: a `tokenRatio` the budget
//! cannot keep (it keeps three decimals, as gRPC does) is an error that
//! names the field, not a budget that never refills; a missing or
//! overflowing ratio says so.

use retry_runtime::config::grpc::ServiceConfig;

fn load(throttling: &str) -> Result<ServiceConfig, String> {
    serde_json::from_str::<ServiceConfig>(&format!(r#"{{ "retryThrottling": {throttling} }}"#))
        .map_err(|error| error.to_string())
}

#[test]
fn a_ratio_that_rounds_to_zero_is_an_error_not_a_budget_that_never_refills() {
    for ratio in ["0.0001", "0.0004"] {
        let loaded = load(&format!(r#"{{ "maxTokens": 10, "tokenRatio": {ratio} }}"#));
        match loaded {
            Ok(config) => {
                // Accepted: then successes must refill the budget.
                let budget = config.budget().unwrap();
                for _ in 0..10 {
                    budget.record_failure();
                }
                let drained = budget.tokens();
                for _ in 0..100_000 {
                    budget.record_success();
                }
                assert!(
                    budget.tokens() > drained,
                    "tokenRatio {ratio} loaded, but successes never refill the budget"
                );
            }
            Err(error) => {
                assert!(error.contains("`retryThrottling.tokenRatio`"), "{error}");
                assert!(error.contains("0.001"), "{error}");
            }
        }
    }
    // The smallest ratio that rounds to a thousandth still loads and refills.
    let budget = load(r#"{ "maxTokens": 10, "tokenRatio": 0.001 }"#)
        .unwrap()
        .budget()
        .unwrap();
    budget.record_failure();
    budget.record_success();
    assert!((budget.tokens() - 9.001).abs() < 1e-9);
}

#[test]
fn a_missing_or_overflowing_ratio_says_what_is_wrong() {
    let missing = load(r#"{ "maxTokens": 10 }"#).unwrap_err();
    assert!(missing.contains("`tokenRatio` is required"), "{missing}");
    let huge = load(r#"{ "maxTokens": 10, "tokenRatio": 1e39 }"#).unwrap_err();
    assert!(huge.contains("`retryThrottling.tokenRatio`"), "{huge}");
    assert!(!huge.contains("above zero"), "{huge}");
    for ratio in ["0", "-1"] {
        let error = load(&format!(r#"{{ "maxTokens": 10, "tokenRatio": {ratio} }}"#)).unwrap_err();
        assert!(error.contains("`retryThrottling.tokenRatio`"), "{error}");
    }
}
