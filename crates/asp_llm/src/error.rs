//! Errors of the LLM client. Messages name the URL, the status and the server's own
//! message; they never contain the API key (every message passes through
//! [`crate::client::ApiKey::redact`]).

/// A failed chat request.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum LlmError {
    /// The environment variable that should hold the key is unset or empty.
    #[error(
        "the API key environment variable {var} (named by agent_node.llm.api_key_env) is not set or empty; set it, or set api_key_env to \"\" for a server without keys"
    )]
    MissingApiKey { var: String },
    /// A setting cannot be used.
    #[error("agent_node.llm.{key} = {value}: {problem}")]
    Config {
        key: String,
        value: String,
        problem: String,
    },
    /// The server answered with an error status.
    #[error("{url}: HTTP {status} after {attempts} attempt(s): {message}")]
    Http {
        url: String,
        status: u16,
        message: String,
        attempts: u32,
    },
    /// No answer in time.
    #[error("{url}: no answer within {timeout_s} s, after {attempts} attempt(s)")]
    Timeout {
        url: String,
        timeout_s: f64,
        attempts: u32,
    },
    /// The connection could not be made or broke.
    #[error("{url}: connection failed after {attempts} attempt(s): {message}")]
    Connection {
        url: String,
        message: String,
        attempts: u32,
    },
    /// The server asked to wait longer than we allow.
    #[error(
        "{url}: HTTP {status}: the server asks to retry after {retry_after_s} s, more than agent_node.llm.retry_after_max_s = {max_s} s"
    )]
    RetryAfterTooLong {
        url: String,
        status: u16,
        retry_after_s: f64,
        max_s: f64,
    },
    /// HTTP 200, but the body is not a usable chat completion (garbage, truncated JSON,
    /// an error object, another shape).
    #[error("{url}: the answer is not a usable chat completion: {problem}; body: {excerpt}")]
    BadResponse {
        url: String,
        problem: String,
        excerpt: String,
    },
}

impl LlmError {
    /// Whether the request failed for a reason a retry may fix (used by the retry loop;
    /// after the retries are spent the error is returned as is).
    pub fn is_transient(&self) -> bool {
        match self {
            LlmError::Http { status, .. } => is_retryable_status(*status),
            LlmError::Timeout { .. } | LlmError::Connection { .. } => true,
            _ => false,
        }
    }

    /// Whether the server answered but the answer was unusable: the caller may ask again.
    pub fn is_bad_response(&self) -> bool {
        matches!(self, LlmError::BadResponse { .. })
    }

    pub(crate) fn with_attempts(mut self, n: u32) -> Self {
        match &mut self {
            LlmError::Http { attempts, .. }
            | LlmError::Timeout { attempts, .. }
            | LlmError::Connection { attempts, .. } => *attempts = n,
            _ => {}
        }
        self
    }
}

/// 429 and every 5xx; no other 4xx (the request itself is wrong and would fail again).
pub fn is_retryable_status(status: u16) -> bool {
    status == 429 || (500..=599).contains(&status)
}
