//! What every adapter shares: JSON payloads, failures on the wire, transport errors as
//! service errors.

use asp_core::FailureKind;
use asp_ros::RosError;
use asp_ros::msg::asp_interfaces::Failure;
use asp_system::ServiceError;
use serde::Serialize;
use serde::de::DeserializeOwned;

/// `value` as JSON; a value JSON cannot hold (never for the port types) is an internal
/// error naming `what`.
pub fn to_json<T: Serialize>(value: &T, what: &str) -> Result<String, ServiceError> {
    serde_json::to_string(value)
        .map_err(|e| ServiceError::internal(format!("cannot encode {what} as JSON: {e}")))
}

/// A JSON payload read back; a bad one is an error naming `what`.
pub fn from_json<T: DeserializeOwned>(text: &str, what: &str) -> Result<T, ServiceError> {
    serde_json::from_str(text).map_err(|e| {
        ServiceError::new(
            FailureKind::InvalidArgument,
            format!("{what} is not valid: {e}"),
        )
    })
}

/// The wire failure of a service error.
pub fn failure_of(e: &ServiceError) -> Failure {
    Failure::from_core(&e.failure, e.message.clone())
}

/// The service error a wire failure stands for; `None` when it says "no failure".
pub fn service_error(f: &Failure) -> Option<ServiceError> {
    f.to_core()
        .map(|failure| ServiceError::with_failure(failure, f.error_msg.clone()))
}

/// A response's failure when it did not succeed (an internal error if the server said
/// "failed" without saying why).
pub fn failed_response(success: bool, f: &Failure, what: &str) -> Option<ServiceError> {
    if success {
        return None;
    }
    Some(
        service_error(f)
            .unwrap_or_else(|| ServiceError::internal(format!("{what} failed without a reason"))),
    )
}

/// A transport failure calling `what`: the service could not be reached or did not
/// answer. Retryable: the node may come back.
pub fn transport_error(e: &RosError, what: &str) -> ServiceError {
    let mut err = ServiceError::internal(format!("{what}: {e}"));
    err.failure.retryable = matches!(
        e,
        RosError::Timeout { .. } | RosError::NotDiscovered { .. } | RosError::Closed(_)
    );
    err
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_cross_the_wire_unchanged() {
        let e = ServiceError::with_failure(
            asp_core::Failure::new(FailureKind::Grounding)
                .with_code(7)
                .retryable(),
            "no handle found",
        );
        let f = failure_of(&e);
        assert_eq!(service_error(&f), Some(e.clone()));
        assert_eq!(failed_response(false, &f, "x"), Some(e));
        assert_eq!(failed_response(true, &f, "x"), None);
        let silent = failed_response(false, &Failure::default(), "detect").unwrap();
        assert_eq!(silent.failure.kind, FailureKind::Internal);
        assert!(silent.message.contains("detect"), "{}", silent.message);
    }

    #[test]
    fn bad_payloads_name_what_they_were() {
        let e = from_json::<asp_system::GoToGoal>("{\"key\": 3}", "the go_to goal").unwrap_err();
        assert_eq!(e.failure.kind, FailureKind::InvalidArgument);
        assert!(e.message.starts_with("the go_to goal"), "{}", e.message);
        let t = transport_error(
            &RosError::Timeout {
                what: "x".into(),
                timeout_s: 1.0,
            },
            "/asp/go_to",
        );
        assert!(t.failure.retryable && t.message.starts_with("/asp/go_to"));
    }
}
