//! The chat-completions client: one `reqwest` client (rustls), retries with exponential
//! backoff on 429/5xx/timeouts/connection errors honouring `Retry-After`, no retry on
//! other 4xx, usage and cost totals.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant, SystemTime};

use asp_config::sections::agent::LlmConfig;
use reqwest::header::{HeaderMap, RETRY_AFTER};
use tracing::{debug, warn};

use crate::error::LlmError;
use crate::types::{ChatRequest, ChatResponse, Pricing, UsageTotals};
use crate::wire::{self, BodySettings, ParseProblem};

/// An API key. It is never printed: `Debug` shows `ApiKey(<redacted>)`, and every error
/// message the client builds passes through [`ApiKey::redact`].
#[derive(Clone)]
pub struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey(<redacted>)")
    }
}

impl ApiKey {
    pub fn new(key: impl Into<String>) -> Self {
        ApiKey(key.into())
    }

    /// Reads the key from the environment variable named `var`. An empty `var` means the
    /// server needs no key (`Ok(None)`); a named variable that is unset or empty is an
    /// error naming the variable (not its value).
    pub fn from_env(var: &str) -> Result<Option<Self>, LlmError> {
        if var.is_empty() {
            return Ok(None);
        }
        match std::env::var(var) {
            Ok(v) if !v.trim().is_empty() => Ok(Some(ApiKey(v.trim().to_owned()))),
            _ => Err(LlmError::MissingApiKey {
                var: var.to_owned(),
            }),
        }
    }

    /// `text` with every occurrence of the key replaced by `<redacted>`.
    pub fn redact(&self, text: &str) -> String {
        if self.0.len() < 4 {
            // too short to search for without mangling ordinary text; such keys are
            // not real keys
            return text.to_owned();
        }
        text.replace(&self.0, "<redacted>")
    }

    fn expose(&self) -> &str {
        &self.0
    }
}

/// Everything the client needs besides the key, in typed units.
#[derive(Debug, Clone, PartialEq)]
pub struct ClientSettings {
    /// Up to and including `/v1` (or the server's equivalent).
    pub base_url: String,
    pub model: String,
    pub timeout: Duration,
    pub connect_timeout: Duration,
    pub max_retries: u32,
    pub retry_after_max: Duration,
    pub backoff_initial: Duration,
    pub backoff_max: Duration,
    pub temperature: f64,
    pub max_tokens: Option<u32>,
    pub strict_tools: bool,
    pub pricing: Pricing,
}

impl ClientSettings {
    pub fn from_config(cfg: &LlmConfig) -> Self {
        let secs = |s: f64| Duration::from_secs_f64(s.max(0.0));
        Self {
            base_url: cfg.base_url.clone(),
            model: cfg.model.clone(),
            timeout: secs(cfg.timeout_s),
            connect_timeout: secs(cfg.connect_timeout_s),
            max_retries: cfg.max_retries,
            retry_after_max: secs(cfg.retry_after_max_s),
            backoff_initial: secs(cfg.backoff_initial_s),
            backoff_max: secs(cfg.backoff_max_s),
            temperature: cfg.temperature,
            max_tokens: cfg.max_tokens,
            strict_tools: cfg.strict_tools,
            pricing: Pricing {
                usd_per_million_prompt_tokens: cfg.usd_per_million_prompt_tokens,
                usd_per_million_completion_tokens: cfg.usd_per_million_completion_tokens,
            },
        }
    }

    /// The delay before retry number `retry` (0-based): `backoff_initial · 2^retry`,
    /// capped at `backoff_max`. No jitter, so runs are reproducible.
    pub fn backoff(&self, retry: u32) -> Duration {
        let factor = 2f64.powi(retry.min(30) as i32);
        Duration::from_secs_f64(
            (self.backoff_initial.as_secs_f64() * factor).min(self.backoff_max.as_secs_f64()),
        )
    }
}

/// `Retry-After` as a delay: delta-seconds (fractions accepted) or an HTTP date.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let v = value.trim();
    if let Ok(secs) = v.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| Duration::from_secs_f64(secs));
    }
    let when = httpdate::parse_http_date(v).ok()?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An OpenAI-compatible chat-completions client.
pub struct LlmClient {
    http: reqwest::Client,
    settings: ClientSettings,
    key: Option<ApiKey>,
    url: String,
    totals: Mutex<UsageTotals>,
    /// Set when the server refused `temperature` (models that take only the default).
    omit_temperature: AtomicBool,
    /// Set when the server asked for `max_completion_tokens` instead of `max_tokens`.
    max_completion_tokens: AtomicBool,
}

impl fmt::Debug for LlmClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LlmClient")
            .field("url", &self.url)
            .field("model", &self.settings.model)
            .field("key", &self.key)
            .finish_non_exhaustive()
    }
}

static CRYPTO: Once = Once::new();

/// Installs the ring provider as the process's rustls provider unless one is installed.
fn ensure_crypto_provider() {
    CRYPTO.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // another thread may win the race; either provider is fine
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// One failed attempt and, for retryable statuses, the server's `Retry-After`.
struct AttemptError {
    error: LlmError,
    retry_after: Option<Duration>,
}

impl LlmClient {
    /// The client `agent_node.llm` describes; the key comes from the environment
    /// variable named by `api_key_env`.
    pub fn from_config(cfg: &LlmConfig) -> Result<Self, LlmError> {
        let key = ApiKey::from_env(&cfg.api_key_env)?;
        Self::new(ClientSettings::from_config(cfg), key)
    }

    pub fn new(settings: ClientSettings, key: Option<ApiKey>) -> Result<Self, LlmError> {
        let base = settings.base_url.trim_end_matches('/');
        let parsed = reqwest::Url::parse(base).map_err(|e| LlmError::Config {
            key: "base_url".into(),
            value: settings.base_url.clone(),
            problem: e.to_string(),
        })?;
        if !matches!(parsed.scheme(), "http" | "https") {
            return Err(LlmError::Config {
                key: "base_url".into(),
                value: settings.base_url.clone(),
                problem: "must be an http:// or https:// URL".into(),
            });
        }
        if settings.model.trim().is_empty() {
            return Err(LlmError::Config {
                key: "model".into(),
                value: "\"\"".into(),
                problem: "name the model to use".into(),
            });
        }
        ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(settings.timeout)
            .connect_timeout(settings.connect_timeout)
            .user_agent(concat!("asp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| LlmError::Config {
                key: "base_url".into(),
                value: settings.base_url.clone(),
                problem: format!("cannot build the HTTP client: {e}"),
            })?;
        let url = format!("{base}/chat/completions");
        Ok(Self {
            http,
            settings,
            key,
            url,
            totals: Mutex::new(UsageTotals::default()),
            omit_temperature: AtomicBool::new(false),
            max_completion_tokens: AtomicBool::new(false),
        })
    }

    pub fn settings(&self) -> &ClientSettings {
        &self.settings
    }

    pub fn model(&self) -> &str {
        &self.settings.model
    }

    pub fn pricing(&self) -> Pricing {
        self.settings.pricing
    }

    /// Usage of every answer this client received so far.
    pub fn totals(&self) -> UsageTotals {
        *self
            .totals
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Sends `req`, retrying transient failures. Dropping the future cancels the request
    /// and any backoff wait.
    pub async fn chat(&self, req: &ChatRequest) -> Result<ChatResponse, LlmError> {
        let mut body = self.body(req);
        let mut attempt: u32 = 0;
        let mut http_time = Duration::ZERO;
        loop {
            attempt += 1;
            let started = Instant::now();
            let result = self.send_once(&body, &mut http_time).await;
            match result {
                Ok(mut resp) => {
                    resp.attempts = attempt;
                    resp.http_time = http_time;
                    debug!(
                        url = %self.url,
                        attempt,
                        elapsed_ms = started.elapsed().as_secs_f64() * 1e3,
                        tool_calls = resp.tool_calls.len(),
                        "chat completion"
                    );
                    self.totals
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .record(resp.usage, &self.settings.pricing);
                    return Ok(resp);
                }
                Err(AttemptError { error, retry_after }) => {
                    if self.adapt_to(&error) {
                        // the same request in the form this server takes; not a retry
                        body = self.body(req);
                        attempt -= 1;
                        continue;
                    }
                    let error = error.with_attempts(attempt);
                    if !error.is_transient() || attempt > self.settings.max_retries {
                        return Err(error);
                    }
                    let delay = match retry_after {
                        Some(d) if d > self.settings.retry_after_max => {
                            let status = match &error {
                                LlmError::Http { status, .. } => *status,
                                _ => 0,
                            };
                            return Err(LlmError::RetryAfterTooLong {
                                url: self.url.clone(),
                                status,
                                retry_after_s: d.as_secs_f64(),
                                max_s: self.settings.retry_after_max.as_secs_f64(),
                            });
                        }
                        Some(d) => d,
                        None => self.settings.backoff(attempt - 1),
                    };
                    warn!(
                        url = %self.url,
                        attempt,
                        retry_in_s = delay.as_secs_f64(),
                        error = %error,
                        "chat request failed; retrying"
                    );
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    fn body(&self, req: &ChatRequest) -> serde_json::Value {
        wire::request_body(
            req,
            &BodySettings {
                model: &self.settings.model,
                temperature: (!self.omit_temperature.load(Ordering::Relaxed))
                    .then_some(self.settings.temperature),
                max_tokens: self.settings.max_tokens,
                max_completion_tokens: self.max_completion_tokens.load(Ordering::Relaxed),
                strict_tools: self.settings.strict_tools,
            },
        )
    }

    /// Learns from a 400 that names a parameter this server (model) does not take:
    /// `temperature` (OpenAI reasoning models accept only the default) or `max_tokens`
    /// (they want `max_completion_tokens`). Returns whether the request should be sent
    /// again in the adapted form; each adaptation happens once per client.
    fn adapt_to(&self, error: &LlmError) -> bool {
        let LlmError::Http {
            status: 400,
            message,
            ..
        } = error
        else {
            return false;
        };
        let m = message.to_ascii_lowercase();
        if m.contains("max_completion_tokens")
            && self.settings.max_tokens.is_some()
            && !self.max_completion_tokens.swap(true, Ordering::Relaxed)
        {
            warn!(url = %self.url, "server wants max_completion_tokens; adapting");
            return true;
        }
        if m.contains("temperature") && !self.omit_temperature.swap(true, Ordering::Relaxed) {
            warn!(url = %self.url, "server refuses temperature; sending the model's default");
            return true;
        }
        false
    }

    async fn send_once(
        &self,
        body: &serde_json::Value,
        http_time: &mut Duration,
    ) -> Result<ChatResponse, AttemptError> {
        let mut rb = self.http.post(&self.url).json(body);
        if let Some(key) = &self.key {
            rb = rb.bearer_auth(key.expose());
        }
        let request = rb.build().map_err(|e| self.transport_error(&e))?;
        let sent = Instant::now();
        let received = async {
            let resp = self.http.execute(request).await?;
            let status = resp.status().as_u16();
            let retry_after = retry_after(resp.headers());
            let text = resp.text().await?;
            Ok::<_, reqwest::Error>((status, retry_after, text))
        }
        .await;
        *http_time += sent.elapsed();
        let (status, retry_after, text) = received.map_err(|e| self.transport_error(&e))?;
        if !(200..300).contains(&status) {
            return Err(AttemptError {
                error: LlmError::Http {
                    url: self.url.clone(),
                    status,
                    message: self.redact(&wire::error_body_message(&text)),
                    attempts: 1,
                },
                retry_after,
            });
        }
        wire::parse_response(&text).map_err(|p| {
            let problem = match p {
                ParseProblem::NotJson(e) => format!("not JSON ({e})"),
                ParseProblem::ErrorObject(m) => format!("the server reported an error: {m}"),
                ParseProblem::Shape(m) => m,
            };
            AttemptError {
                error: LlmError::BadResponse {
                    url: self.url.clone(),
                    problem: self.redact(&problem),
                    excerpt: self.redact(&wire::excerpt(&text)),
                },
                retry_after: None,
            }
        })
    }

    fn transport_error(&self, e: &reqwest::Error) -> AttemptError {
        let error = if e.is_timeout() {
            LlmError::Timeout {
                url: self.url.clone(),
                timeout_s: self.settings.timeout.as_secs_f64(),
                attempts: 1,
            }
        } else {
            // the full chain: "error sending request" alone does not say why
            let mut message = e.to_string();
            let mut source = std::error::Error::source(e);
            while let Some(s) = source {
                message.push_str(": ");
                message.push_str(&s.to_string());
                source = s.source();
            }
            LlmError::Connection {
                url: self.url.clone(),
                message: self.redact(&message),
                attempts: 1,
            }
        };
        AttemptError {
            error,
            retry_after: None,
        }
    }

    fn redact(&self, text: &str) -> String {
        match &self.key {
            Some(k) => k.redact(text),
            None => text.to_owned(),
        }
    }
}

fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> ClientSettings {
        ClientSettings::from_config(&LlmConfig::default())
    }

    #[test]
    fn backoff_doubles_up_to_the_ceiling() {
        let s = settings(); // 0.5 s initial, 8 s max
        let d: Vec<f64> = (0..7).map(|n| s.backoff(n).as_secs_f64()).collect();
        assert_eq!(d, vec![0.5, 1.0, 2.0, 4.0, 8.0, 8.0, 8.0]);
        assert_eq!(s.backoff(1000).as_secs_f64(), 8.0);
    }

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000_000);
        assert_eq!(parse_retry_after("3", now), Some(Duration::from_secs(3)));
        assert_eq!(
            parse_retry_after(" 0.25 ", now),
            Some(Duration::from_millis(250))
        );
        let later = httpdate::fmt_http_date(now + Duration::from_secs(7));
        assert_eq!(parse_retry_after(&later, now), Some(Duration::from_secs(7)));
        let earlier = httpdate::fmt_http_date(now - Duration::from_secs(7));
        assert_eq!(parse_retry_after(&earlier, now), Some(Duration::ZERO));
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(parse_retry_after("-1", now), None);
    }

    #[test]
    fn key_is_redacted_everywhere() {
        let key = ApiKey::new("sk-very-secret-123");
        assert_eq!(format!("{key:?}"), "ApiKey(<redacted>)");
        assert_eq!(
            key.redact("Bearer sk-very-secret-123 rejected"),
            "Bearer <redacted> rejected"
        );
        let client = LlmClient::new(settings(), Some(key)).unwrap();
        let dbg = format!("{client:?}");
        assert!(!dbg.contains("sk-very-secret"), "{dbg}");
        assert!(dbg.contains("<redacted>"), "{dbg}");
    }

    #[test]
    fn missing_key_names_the_variable() {
        let var = "ASP_LLM_TEST_KEY_THAT_IS_NOT_SET";
        let err = ApiKey::from_env(var).unwrap_err();
        assert!(err.to_string().contains(var), "{err}");
        assert!(ApiKey::from_env("").unwrap().is_none());
    }

    #[test]
    fn bad_settings_name_the_key_and_value() {
        let mut s = settings();
        s.base_url = "ftp://example.com/v1".into();
        let err = LlmClient::new(s, None).unwrap_err().to_string();
        assert!(
            err.contains("base_url") && err.contains("ftp://example.com/v1"),
            "{err}"
        );
        let mut s = settings();
        s.base_url = "not a url".into();
        assert!(
            LlmClient::new(s, None)
                .unwrap_err()
                .to_string()
                .contains("not a url")
        );
        let mut s = settings();
        s.model = " ".into();
        assert!(
            LlmClient::new(s, None)
                .unwrap_err()
                .to_string()
                .contains("model")
        );
    }
}
