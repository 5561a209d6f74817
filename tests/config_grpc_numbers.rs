//! Numbers in a gRPC service config as protobuf's JSON mapping writes them:
//! an integer or a float field takes a JSON number or a string holding one
//! (`"maxAttempts": "3"`, `"tokenRatio": "0.1"`), and an integer may be
//! written with an exponent or a zero fraction (`3.0`, `"1e1"`). gRPC
//! clients load such files; so must this library. Anything else is still an
//! error that names the field.

use std::time::Duration;

use retry_runtime::config::grpc::ServiceConfig;

fn load(text: &str) -> Result<ServiceConfig, String> {
    serde_json::from_str::<ServiceConfig>(text).map_err(|error| error.to_string())
}

fn retry_policy(fields: &str) -> Result<ServiceConfig, String> {
    load(&format!(
        r#"{{ "methodConfig": [{{ "name": [{{ "service": "s" }}], "retryPolicy": {{ {fields}, "initialBackoff": "0.1s", "maxBackoff": "1s", "retryableStatusCodes": ["UNAVAILABLE"] }} }}] }}"#
    ))
}

#[test]
fn integers_and_floats_written_as_strings_load_as_numbers() {
    for (attempts, multiplier) in [
        (r#""3""#, r#""2""#),
        (r#""3""#, r#""2.0""#),
        ("3.0", "2"),
        (r#""3e0""#, r#""2e0""#),
    ] {
        let config = retry_policy(&format!(
            r#""maxAttempts": {attempts}, "backoffMultiplier": {multiplier}"#
        ))
        .unwrap_or_else(|error| panic!("maxAttempts {attempts}, multiplier {multiplier}: {error}"));
        let policy = config.method("s", "m").unwrap().policy();
        assert_eq!(policy.max_attempts(), 3);
        assert_eq!(policy.multiplier(), 2.0);
        assert_eq!(policy.base(), Duration::from_millis(100));
    }
    // Above 5, as a number or a string, is 5, as gRPC has it.
    let config = retry_policy(r#""maxAttempts": "7", "backoffMultiplier": 2"#).unwrap();
    assert_eq!(config.method("s", "m").unwrap().policy().max_attempts(), 5);

    let hedged = load(
        r#"{ "methodConfig": [{ "name": [{ "service": "h" }], "hedgingPolicy": {
            "maxAttempts": "4", "hedgingDelay": "0.05s", "nonFatalStatusCodes": ["UNAVAILABLE"] } }] }"#,
    )
    .unwrap();
    let hedging = hedged.method("h", "m").unwrap().hedging_policy().unwrap();
    assert_eq!(hedging.max_attempts(), 4);

    let throttled = load(r#"{ "retryThrottling": { "maxTokens": "10", "tokenRatio": "0.1" } }"#)
        .unwrap()
        .budget()
        .unwrap();
    assert_eq!(throttled.max_tokens(), 10.0);
    assert!((throttled.token_ratio() - 0.1).abs() < 1e-6);
}

#[test]
fn numbers_that_are_not_numbers_are_errors_that_name_the_field() {
    for (attempts, wanted) in [
        (r#""three""#, "`retryPolicy.maxAttempts`"),
        (r#""""#, "`retryPolicy.maxAttempts`"),
        ("2.5", "`retryPolicy.maxAttempts`"),
        (r#""2.5""#, "`retryPolicy.maxAttempts`"),
        ("-3", "`retryPolicy.maxAttempts`"),
        ("true", "`retryPolicy.maxAttempts`"),
        ("1e20", "`retryPolicy.maxAttempts`"),
        (r#""1""#, "`retryPolicy.maxAttempts`: must be 2 or more"),
    ] {
        let error = retry_policy(&format!(
            r#""maxAttempts": {attempts}, "backoffMultiplier": 2"#
        ))
        .unwrap_err();
        assert!(error.contains(wanted), "maxAttempts {attempts}: {error}");
    }
    // gRFC A6: "must be greater than zero" (0.5 and "Infinity" load:
    // tests/grpc_config_a6.rs).
    for multiplier in [r#""NaN""#, r#""two""#, "0", "-1", r#""-Infinity""#] {
        let error = retry_policy(&format!(
            r#""maxAttempts": 3, "backoffMultiplier": {multiplier}"#
        ))
        .unwrap_err();
        assert!(
            error.contains("`retryPolicy.backoffMultiplier`"),
            "backoffMultiplier {multiplier}: {error}"
        );
    }
    let error =
        load(r#"{ "retryThrottling": { "maxTokens": "ten", "tokenRatio": 0.1 } }"#).unwrap_err();
    assert!(error.contains("`retryThrottling.maxTokens`"), "{error}");
    let error =
        load(r#"{ "retryThrottling": { "maxTokens": 10, "tokenRatio": "1e39" } }"#).unwrap_err();
    assert!(error.contains("`retryThrottling.tokenRatio`"), "{error}");
}
