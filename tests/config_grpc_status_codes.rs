//! `retryableStatusCodes` and `nonFatalStatusCodes` of a gRPC service
//! config: a code of the wrong type or out of range is an error that names
//! the field and the value, as an unknown name is.

use retry_runtime::config::grpc::ServiceConfig;
use tonic::Code;

fn load(codes: &str) -> Result<ServiceConfig, String> {
    serde_json::from_str::<ServiceConfig>(&format!(
        r#"{{ "methodConfig": [{{ "name": [{{}}], "retryPolicy": {{ "maxAttempts": 3,
            "initialBackoff": "0.1s", "maxBackoff": "1s", "backoffMultiplier": 2,
            "retryableStatusCodes": {codes} }} }}] }}"#
    ))
    .map_err(|error| error.to_string())
}

#[test]
fn names_and_numbers_load_alike() {
    for codes in [r#"["UNAVAILABLE", 4]"#, r#"[14, "DEADLINE_EXCEEDED"]"#] {
        let config = load(codes).unwrap();
        let retryable = config.methods()[0].retryable();
        assert!(retryable.contains(Code::Unavailable));
        assert!(retryable.contains(Code::DeadlineExceeded));
        assert!(!retryable.contains(Code::Internal));
    }
}

#[test]
fn codes_of_the_wrong_type_or_range_are_errors_that_name_the_field() {
    for (codes, shown) in [
        ("[-1]", "-1"),
        ("[17]", "17"),
        ("[18446744073709551615]", "18446744073709551615"),
        ("[14.5]", "14.5"),
        ("[true]", "true"),
        (r#"["SOMETIMES"]"#, "\"SOMETIMES\""),
    ] {
        let error = load(codes).unwrap_err();
        assert!(
            error.contains("`retryPolicy.retryableStatusCodes`: unknown status code"),
            "{codes}: {error}"
        );
        assert!(error.contains(shown), "{codes}: {error}");
        assert!(!error.contains("untagged"), "{codes}: {error}");
    }
    let error = load("[null]").unwrap_err();
    assert!(error.contains("a gRPC status code"), "{error}");
}
