//! Search results kept in the embedded database: a concept looked up once costs no web
//! call the next time (VLA²'s memory reuse).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use asp_core::web::{WebError, WebHit, WebQuery, WebSearch};
use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};
use tracing::debug;

/// Query key ([`WebQuery::key`]) → [`Entry`] as JSON.
const RESULTS: TableDefinition<&str, &[u8]> = TableDefinition::new("web_search_results");

/// One cached answer.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// When it was fetched, seconds since the Unix epoch.
    stored_s: u64,
    hits: Vec<WebHit>,
}

/// Searches answered from the cache and from the web so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheStats {
    pub hits: usize,
    pub misses: usize,
}

/// `inner` behind a cache in `db`. A failed search writes nothing; a cached answer older
/// than `max_age` is fetched again. Downloads are passed through.
pub struct CachedSearch<S> {
    inner: S,
    db: Arc<Database>,
    max_age: Duration,
    hits: AtomicUsize,
    misses: AtomicUsize,
}

impl<S> std::fmt::Debug for CachedSearch<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CachedSearch")
            .field("max_age", &self.max_age)
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}

impl<S> CachedSearch<S> {
    pub fn stats(&self) -> CacheStats {
        CacheStats {
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
        }
    }

    pub fn inner(&self) -> &S {
        &self.inner
    }
}

fn now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

fn cache_err(e: impl std::fmt::Display) -> WebError {
    WebError::Cache(e.to_string())
}

impl<S: WebSearch> CachedSearch<S> {
    /// Caches `inner`'s answers in `db` (the memory database: one file holds what the
    /// robot learnt, its searches included) for `max_age`.
    pub fn new(inner: S, db: Arc<Database>, max_age: Duration) -> Result<Self, WebError> {
        // the table exists from the start, so a read never meets a missing table
        let tx = db.begin_write().map_err(cache_err)?;
        tx.open_table(RESULTS).map_err(cache_err)?;
        tx.commit().map_err(cache_err)?;
        Ok(Self {
            inner,
            db,
            max_age,
            hits: AtomicUsize::new(0),
            misses: AtomicUsize::new(0),
        })
    }

    /// The cached answer to `key` if it is young enough.
    fn cached(&self, key: &str) -> Result<Option<Vec<WebHit>>, WebError> {
        let tx = self.db.begin_read().map_err(cache_err)?;
        let table = tx.open_table(RESULTS).map_err(cache_err)?;
        let Some(bytes) = table.get(key).map_err(cache_err)? else {
            return Ok(None);
        };
        // an entry this version cannot read is a miss, fetched again and overwritten
        let Ok(entry) = serde_json::from_slice::<Entry>(bytes.value()) else {
            return Ok(None);
        };
        let age = now_s().saturating_sub(entry.stored_s);
        Ok((age <= self.max_age.as_secs()).then_some(entry.hits))
    }

    fn store(&self, key: &str, hits: &[WebHit]) -> Result<(), WebError> {
        let entry = serde_json::to_vec(&Entry {
            stored_s: now_s(),
            hits: hits.to_vec(),
        })
        .map_err(cache_err)?;
        // one transaction: the entry is whole or absent
        let tx = self.db.begin_write().map_err(cache_err)?;
        {
            let mut table = tx.open_table(RESULTS).map_err(cache_err)?;
            table.insert(key, entry.as_slice()).map_err(cache_err)?;
        }
        tx.commit().map_err(cache_err)
    }
}

#[async_trait::async_trait]
impl<S: WebSearch> WebSearch for CachedSearch<S> {
    async fn search(&self, query: &WebQuery) -> Result<Vec<WebHit>, WebError> {
        let key = query.key();
        if let Some(hits) = self.cached(&key)? {
            self.hits.fetch_add(1, Ordering::Relaxed);
            debug!(%key, "web search answered from the cache");
            return Ok(hits);
        }
        self.misses.fetch_add(1, Ordering::Relaxed);
        let hits = self.inner.search(query).await?;
        self.store(&key, &hits)?;
        Ok(hits)
    }

    async fn download(&self, url: &str) -> Result<Vec<u8>, WebError> {
        self.inner.download(url).await
    }
}
