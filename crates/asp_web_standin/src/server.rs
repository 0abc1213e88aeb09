//! The HTTP server: SearXNG's `GET /search?q=…&format=json&categories=general|images`
//! over the corpus, and `GET /images/<concept>/<n>.png`, the pictures its image results
//! point at.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::Json;
use axum::Router;
use axum::extract::{Path, Query, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::{Value, json};
use tracing::warn;

use crate::corpus::Corpus;
use crate::render::{PICTURES, picture};

/// Results per page, as SearXNG pages them.
const PAGE: usize = 10;

/// Faults the server plays, for tests of a client's retries and time bounds.
#[derive(Debug, Default)]
struct Faults {
    /// Answer this many next requests with 503.
    fail_next: AtomicUsize,
    /// Hold every answer this long first.
    delay: Mutex<Option<Duration>>,
}

/// PNGs rendered so far, by (concept slug, picture number).
type Pictures = HashMap<(String, usize), Arc<Vec<u8>>>;

#[derive(Debug)]
struct Shared {
    corpus: Corpus,
    base_url: String,
    searches: AtomicUsize,
    downloads: AtomicUsize,
    faults: Faults,
    pictures: Mutex<Pictures>,
}

/// A running search server; dropping it stops the server.
#[derive(Debug)]
pub struct WebStandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl WebStandIn {
    /// Serves `corpus` on `bind` (port 0: a free one).
    pub async fn start(bind: SocketAddr, corpus: Corpus) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            corpus,
            base_url: format!("http://{addr}"),
            searches: AtomicUsize::new(0),
            downloads: AtomicUsize::new(0),
            faults: Faults::default(),
            pictures: Mutex::new(HashMap::new()),
        });
        let app = Router::new()
            .route("/search", get(search))
            .route("/images/{slug}/{file}", get(image))
            .with_state(Arc::clone(&shared));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                warn!(error = %e, "the web search stand-in stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`, what a SearXNG client is configured with.
    pub fn base_url(&self) -> String {
        self.shared.base_url.clone()
    }

    /// Search requests answered or refused so far.
    pub fn searches(&self) -> usize {
        self.shared.searches.load(Ordering::SeqCst)
    }

    /// Picture requests so far.
    pub fn downloads(&self) -> usize {
        self.shared.downloads.load(Ordering::SeqCst)
    }

    /// Answers the next `n` requests with HTTP 503.
    pub fn fail_next(&self, n: usize) {
        self.shared.faults.fail_next.store(n, Ordering::SeqCst);
    }

    /// Holds every answer `delay` before sending it (`None`: answers at once).
    pub fn delay_answers(&self, delay: Option<Duration>) {
        *self
            .shared
            .faults
            .delay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = delay;
    }
}

impl Drop for WebStandIn {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

/// The fault to play for this request, if any.
async fn play_faults(s: &Shared) -> Option<Response> {
    let delay = *s
        .faults
        .delay
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(d) = delay {
        tokio::time::sleep(d).await;
    }
    let failed = s
        .faults
        .fail_next
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok();
    failed.then(|| (StatusCode::SERVICE_UNAVAILABLE, "engine unavailable").into_response())
}

async fn search(
    State(s): State<Arc<Shared>>,
    Query(params): Query<HashMap<String, String>>,
) -> Response {
    s.searches.fetch_add(1, Ordering::SeqCst);
    if let Some(fault) = play_faults(&s).await {
        return fault;
    }
    // SearXNG answers 403 for an output format its settings do not enable
    if params.get("format").map(String::as_str) != Some("json") {
        return (StatusCode::FORBIDDEN, "only format=json is served").into_response();
    }
    let Some(q) = params.get("q").map(|q| q.trim()).filter(|q| !q.is_empty()) else {
        return (StatusCode::BAD_REQUEST, "q is missing or empty").into_response();
    };
    let images = match params.get("categories").map(String::as_str) {
        None | Some("general") => false,
        Some("images") => true,
        Some(other) => {
            return (
                StatusCode::BAD_REQUEST,
                format!("unknown category {other:?}"),
            )
                .into_response();
        }
    };
    let page: usize = params
        .get("pageno")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1)
        .max(1);
    let ranked = if images {
        s.corpus.pictured(q)
    } else {
        s.corpus.rank(q)
    };
    let mut results: Vec<Value> = Vec::new();
    for (concept, score) in &ranked {
        if images {
            let slug = concept.slug();
            for n in 0..PICTURES {
                let page = &concept.pages[n % concept.pages.len()];
                results.push(json!({
                    "url": page.url,
                    "title": format!("{} – picture {}", concept.name, n + 1),
                    "content": "",
                    "img_src": format!("{}/images/{slug}/{n}.png", s.base_url),
                    "thumbnail_src": format!("{}/images/{slug}/{n}.png", s.base_url),
                    "template": "images.html",
                    "engine": "asp-corpus",
                    "category": "images",
                    "score": score,
                }));
            }
        } else {
            for p in &concept.pages {
                results.push(json!({
                    "url": p.url,
                    "title": p.title,
                    "content": p.content,
                    "engine": "asp-corpus",
                    "category": "general",
                    "score": score,
                }));
            }
        }
    }
    let total = results.len();
    let shown: Vec<Value> = results
        .into_iter()
        .skip((page - 1) * PAGE)
        .take(PAGE)
        .collect();
    Json(json!({
        "query": q,
        "number_of_results": total,
        "results": shown,
        "answers": [],
        "corrections": [],
        "infoboxes": [],
        "suggestions": [],
        "unresponsive_engines": [],
    }))
    .into_response()
}

async fn image(
    State(s): State<Arc<Shared>>,
    Path((slug, file)): Path<(String, String)>,
) -> Response {
    s.downloads.fetch_add(1, Ordering::SeqCst);
    if let Some(fault) = play_faults(&s).await {
        return fault;
    }
    let n = file
        .strip_suffix(".png")
        .and_then(|n| n.parse::<usize>().ok())
        .filter(|n| *n < PICTURES);
    let (Some(n), Some(concept)) = (n, s.corpus.by_slug(&slug)) else {
        return (StatusCode::NOT_FOUND, "no such picture").into_response();
    };
    let cached = s
        .pictures
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&(slug.clone(), n))
        .cloned();
    let png = match cached {
        Some(png) => png,
        None => {
            let concept = concept.clone();
            // rendering is CPU work: off the server's tasks
            let rendered = tokio::task::spawn_blocking(move || {
                picture(&concept, n).and_then(|img| asp_llm::image::encode_png(&img))
            })
            .await;
            match rendered {
                Ok(Ok(png)) => {
                    let png = Arc::new(png);
                    s.pictures
                        .lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .insert((slug, n), Arc::clone(&png));
                    png
                }
                Ok(Err(e)) => return (StatusCode::INTERNAL_SERVER_ERROR, e).into_response(),
                Err(e) => {
                    return (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response();
                }
            }
        }
    };
    ([(header::CONTENT_TYPE, "image/png")], png.as_ref().clone()).into_response()
}
