//! The SearXNG JSON API client.

use std::sync::Once;
use std::time::Duration;

use asp_core::web::{WebError, WebHit, WebQuery, WebSearch};
use reqwest::Url;
use serde::{Deserialize, Serialize};
use tracing::{debug, warn};

/// Where and how to search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SearxngSettings {
    /// The instance's address, e.g. `http://127.0.0.1:8888` (its `/search` is queried).
    pub base_url: String,
    /// Bound on one request, connection included, seconds.
    pub timeout_s: f64,
    /// Further tries after a network fault or a 5xx/429 answer (SPEC §4.2: retry once).
    pub retries: u32,
    /// Wait before each retry, seconds.
    pub retry_backoff_s: f64,
    /// Results kept per search, best first.
    pub max_results: usize,
    /// Largest file [`SearxngClient::download`] accepts, bytes.
    pub max_download_bytes: usize,
}

impl SearxngSettings {
    /// `object_map_node.concepts.web_search`.
    pub fn from_config(cfg: &asp_config::sections::perception::WebSearchConfig) -> Self {
        Self {
            base_url: cfg.base_url.clone(),
            timeout_s: cfg.timeout_s,
            retries: cfg.retries,
            retry_backoff_s: cfg.retry_backoff_s,
            max_results: cfg.max_results,
            max_download_bytes: cfg.max_download_bytes,
        }
    }
}

impl Default for SearxngSettings {
    /// The shipped `object_map_node.concepts.web_search`.
    fn default() -> Self {
        Self::from_config(&asp_config::sections::perception::WebSearchConfig::default())
    }
}

/// A SearXNG instance's search API.
#[derive(Debug, Clone)]
pub struct SearxngClient {
    http: reqwest::Client,
    base: Url,
    settings: SearxngSettings,
}

static CRYPTO: Once = Once::new();

/// The process's rustls provider: ring, unless another is installed (asp_llm does the same).
fn ensure_crypto_provider() {
    CRYPTO.call_once(|| {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
    });
}

/// The answer's shape: SearXNG's `results`, with the fields we read.
#[derive(Debug, Deserialize)]
struct Answer {
    results: Vec<SearxResult>,
}

#[derive(Debug, Deserialize)]
struct SearxResult {
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    img_src: Option<String>,
}

impl SearxngClient {
    /// A client for `settings`; a bad address or limit is an error naming the field.
    pub fn new(settings: SearxngSettings) -> Result<Self, WebError> {
        let invalid = |field: &str, value: String, problem: &str| {
            WebError::InvalidRequest(format!("web_search.{field} = {value}: {problem}"))
        };
        let base = Url::parse(settings.base_url.trim_end_matches('/')).map_err(|e| {
            invalid(
                "base_url",
                format!("{:?}", settings.base_url),
                &e.to_string(),
            )
        })?;
        if !matches!(base.scheme(), "http" | "https") {
            return Err(invalid(
                "base_url",
                format!("{:?}", settings.base_url),
                "must be an http:// or https:// URL",
            ));
        }
        if !(settings.timeout_s.is_finite() && settings.timeout_s > 0.0) {
            return Err(invalid(
                "timeout_s",
                settings.timeout_s.to_string(),
                "must be a positive number of seconds",
            ));
        }
        if !(settings.retry_backoff_s.is_finite() && settings.retry_backoff_s >= 0.0) {
            return Err(invalid(
                "retry_backoff_s",
                settings.retry_backoff_s.to_string(),
                "must be zero or more seconds",
            ));
        }
        if settings.max_results == 0 {
            return Err(invalid(
                "max_results",
                "0".into(),
                "must keep at least one result",
            ));
        }
        ensure_crypto_provider();
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs_f64(settings.timeout_s))
            .user_agent(concat!("asp/", env!("CARGO_PKG_VERSION")))
            .build()
            .map_err(|e| invalid("base_url", settings.base_url.clone(), &e.to_string()))?;
        Ok(Self {
            http,
            base,
            settings,
        })
    }

    pub fn settings(&self) -> &SearxngSettings {
        &self.settings
    }

    fn endpoint(&self) -> String {
        self.base.as_str().trim_end_matches('/').to_owned()
    }

    /// `GET url`, retried per the settings; the body's bytes.
    async fn get(&self, url: Url) -> Result<Vec<u8>, WebError> {
        let mut tries = 0;
        loop {
            match self.get_once(url.clone()).await {
                Err(e) if e.retryable() && tries < self.settings.retries => {
                    tries += 1;
                    warn!(error = %e, try_ = tries, "web search failed; trying again");
                    tokio::time::sleep(Duration::from_secs_f64(self.settings.retry_backoff_s))
                        .await;
                }
                other => return other,
            }
        }
    }

    async fn get_once(&self, url: Url) -> Result<Vec<u8>, WebError> {
        let endpoint = self.endpoint();
        let unreachable = |e: reqwest::Error| WebError::Unreachable {
            endpoint: endpoint.clone(),
            message: if e.is_timeout() {
                format!("no answer within {} s", self.settings.timeout_s)
            } else {
                e.to_string()
            },
        };
        let mut resp = self.http.get(url).send().await.map_err(unreachable)?;
        let status = resp.status();
        // the body, bounded: a search answer or an image, never a download of anything
        let mut body = Vec::new();
        while let Some(chunk) = resp.chunk().await.map_err(unreachable)? {
            body.extend_from_slice(&chunk);
            if body.len() > self.settings.max_download_bytes {
                return Err(WebError::BadAnswer {
                    endpoint: endpoint.clone(),
                    message: format!(
                        "the answer is larger than web_search.max_download_bytes ({})",
                        self.settings.max_download_bytes
                    ),
                });
            }
        }
        if !status.is_success() {
            let text = String::from_utf8_lossy(&body);
            return Err(WebError::Status {
                endpoint,
                status: status.as_u16(),
                message: text.chars().take(200).collect(),
            });
        }
        Ok(body)
    }
}

#[async_trait::async_trait]
impl WebSearch for SearxngClient {
    async fn search(&self, query: &WebQuery) -> Result<Vec<WebHit>, WebError> {
        let text = query.text.trim();
        if text.is_empty() {
            return Err(WebError::InvalidRequest("the query is empty".into()));
        }
        // `<base>/search`, an instance under a path (`https://host/searx`) kept
        let mut url = self.base.clone();
        url.set_path(&format!(
            "{}/search",
            self.base.path().trim_end_matches('/')
        ));
        url.query_pairs_mut()
            .append_pair("q", text)
            .append_pair("format", "json")
            .append_pair("categories", query.category.name())
            .append_pair("pageno", "1");
        let body = self.get(url).await?;
        let answer: Answer = serde_json::from_slice(&body).map_err(|e| WebError::BadAnswer {
            endpoint: self.endpoint(),
            message: format!("not a SearXNG JSON answer: {e}"),
        })?;
        let hits: Vec<WebHit> = answer
            .results
            .into_iter()
            .filter_map(|r| {
                let url = r.url?;
                // image addresses may be relative to the instance (its image proxy)
                let image_url = r
                    .img_src
                    .filter(|s| !s.trim().is_empty())
                    .and_then(|s| self.base.join(&s).ok())
                    .map(String::from);
                Some(WebHit {
                    title: r.title.unwrap_or_default(),
                    url,
                    content: r.content.unwrap_or_default(),
                    image_url,
                })
            })
            .filter(|h| {
                query.category != asp_core::web::SearchCategory::Images || h.image_url.is_some()
            })
            .take(self.settings.max_results)
            .collect();
        debug!(query = %text, category = query.category.name(), hits = hits.len(), "web search");
        Ok(hits)
    }

    async fn download(&self, url: &str) -> Result<Vec<u8>, WebError> {
        let url = Url::parse(url)
            .map_err(|e| WebError::InvalidRequest(format!("download address {url:?}: {e}")))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebError::InvalidRequest(format!(
                "download address {url}: only http:// and https:// are fetched"
            )));
        }
        self.get(url).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bad_settings_name_the_field() {
        let with = |f: fn(&mut SearxngSettings)| {
            let mut s = SearxngSettings::default();
            f(&mut s);
            SearxngClient::new(s).unwrap_err().to_string()
        };
        assert!(with(|s| s.base_url = "ftp://x".into()).contains("web_search.base_url"));
        assert!(with(|s| s.base_url = "not a url".into()).contains("web_search.base_url"));
        assert!(with(|s| s.timeout_s = 0.0).contains("web_search.timeout_s = 0"));
        assert!(with(|s| s.max_results = 0).contains("web_search.max_results"));
        assert!(with(|s| s.retry_backoff_s = -1.0).contains("web_search.retry_backoff_s"));
    }
}
