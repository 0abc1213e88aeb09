//! Grounding words no detector knows (SPEC §4.2, VLA²): when retrieval finds nothing for
//! a word and no memory holds it, search the web for pictures of it, put them in one
//! collage, ask a VLM for five concrete keywords (colour, shape, material, size,
//! function), keep them (vision memory), and search again with the word and keywords.
//! Then the language path: the known word that names the same kind of thing, read from
//! the collage, the keywords and page text (quoted as untrusted data); the caller keeps
//! it (replacement memory) only once it found something.
//!
//! Every model question is retried once; then the grounding fails with what failed, and
//! nothing is written (SPEC §4.2: retry once, then abort).

use std::sync::Arc;

use asp_core::RgbImage;
use asp_core::models::{Collage, ConceptKeywords, ConceptStore, ConceptVlm, Grounding, ModelError};
use asp_core::web::{SearchCategory, WebError, WebQuery, WebSearch};
use serde::{Deserialize, Serialize};
use tracing::{debug, info, warn};

/// How a word is grounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct GroundingSettings {
    /// Pictures downloaded for the collage, at most.
    pub pictures: usize,
    /// The collage's columns.
    pub columns: u32,
    /// One collage cell, pixels (width, height).
    pub cell: [u32; 2],
    /// Pages whose text the replacement question quotes, at most.
    pub pages: usize,
    /// Characters of each page's text quoted, at most.
    pub page_chars: usize,
    /// The words the detector knows: a replacement is one of them.
    pub known_words: Vec<String>,
}

impl GroundingSettings {
    /// `object_map_node.concepts`.
    pub fn from_config(cfg: &asp_config::sections::perception::ConceptsConfig) -> Self {
        Self {
            pictures: cfg.pictures,
            columns: cfg.columns,
            cell: cfg.cell,
            pages: cfg.pages,
            page_chars: cfg.page_chars,
            known_words: cfg.known_words.clone(),
        }
    }
}

impl Default for GroundingSettings {
    fn default() -> Self {
        Self {
            pictures: 4,
            columns: 2,
            cell: [160, 120],
            pages: 3,
            page_chars: 400,
            known_words: Vec::new(),
        }
    }
}

/// What grounding a word gave.
#[derive(Debug, Clone, PartialEq)]
pub struct Grounded {
    pub word: String,
    pub grounding: Grounding,
    /// Whether it came from memory (no web call, no model question).
    pub from_memory: bool,
    /// Searches and downloads it took.
    pub web_calls: usize,
}

impl Grounded {
    /// The text to search the map with: the word and its keywords.
    pub fn query(&self) -> String {
        format!("{}, {}", self.word, self.grounding.keywords.phrase())
    }
}

/// Grounding failed; nothing was kept.
#[derive(Debug, thiserror::Error)]
pub enum GroundingError {
    #[error("web search for {word:?} failed: {source}")]
    Web {
        word: String,
        #[source]
        source: WebError,
    },
    #[error("the VLM could not ground {word:?} (asked twice): {source}")]
    Model {
        word: String,
        #[source]
        source: ModelError,
    },
    #[error("concept memory: {0}")]
    Memory(String),
}

/// Grounds unknown words through web search, a VLM and a memory.
#[derive(Clone)]
pub struct ConceptGrounder {
    search: Arc<dyn WebSearch>,
    vlm: Arc<dyn ConceptVlm>,
    store: Arc<dyn ConceptStore>,
    settings: GroundingSettings,
}

impl std::fmt::Debug for ConceptGrounder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConceptGrounder")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// A downloaded picture as pixels: PNG or JPEG, as image searches serve them.
pub fn decode_picture(bytes: &[u8]) -> Result<RgbImage, String> {
    let img = image::load_from_memory(bytes).map_err(|e| e.to_string())?;
    let rgb = img.to_rgb8();
    let (w, h) = rgb.dimensions();
    let px = rgb.pixels().map(|p| p.0).collect();
    RgbImage::from_vec(w, h, px).map_err(|e| e.to_string())
}

/// `f` once more if it fails.
async fn twice<T, F, Fut>(mut f: F) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, ModelError>>,
{
    match f().await {
        Ok(v) => Ok(v),
        Err(e) => {
            warn!(error = %e, "VLM question failed; asking once more");
            f().await
        }
    }
}

impl ConceptGrounder {
    pub fn new(
        search: Arc<dyn WebSearch>,
        vlm: Arc<dyn ConceptVlm>,
        store: Arc<dyn ConceptStore>,
        settings: GroundingSettings,
    ) -> Self {
        Self {
            search,
            vlm,
            store,
            settings,
        }
    }

    pub fn settings(&self) -> &GroundingSettings {
        &self.settings
    }

    /// Grounds `word`: from memory when it was grounded before, else from the web.
    /// `Ok(None)`: the web has no picture of it (nothing to ground it with).
    pub async fn ground(&self, word: &str) -> Result<Option<Grounded>, GroundingError> {
        let word = word.trim();
        if let Some(grounding) = self.store.recall(word).map_err(GroundingError::Memory)? {
            debug!(word, "grounded from memory");
            return Ok(Some(Grounded {
                word: word.to_owned(),
                grounding,
                from_memory: true,
                web_calls: 0,
            }));
        }
        let web = |source| GroundingError::Web {
            word: word.to_owned(),
            source,
        };
        let model = |source| GroundingError::Model {
            word: word.to_owned(),
            source,
        };
        let mut web_calls = 1;
        let hits = self
            .search
            .search(&WebQuery::new(word, SearchCategory::Images))
            .await
            .map_err(web)?;
        let mut pictures = Vec::new();
        let mut sources = Vec::new();
        for hit in hits.iter().filter_map(|h| h.image_url.as_ref()) {
            if pictures.len() >= self.settings.pictures {
                break;
            }
            web_calls += 1;
            // one picture that fails to come or to decode is one fewer in the collage
            match self.search.download(hit).await {
                Ok(bytes) => match decode_picture(&bytes) {
                    Ok(p) => {
                        pictures.push(p);
                        sources.push(hit.clone());
                    }
                    Err(e) => warn!(url = %hit, error = %e, "not a picture; skipped"),
                },
                Err(e) => warn!(url = %hit, error = %e, "picture not downloaded; skipped"),
            }
        }
        let [cw, ch] = self.settings.cell;
        let Some(collage) = Collage::grid(&pictures, self.settings.columns, (cw, ch)) else {
            info!(word, "the web has no picture of it");
            return Ok(None);
        };
        let keywords: ConceptKeywords = twice(|| self.vlm.keywords(word, &collage))
            .await
            .map_err(model)?;
        // the language path: page text, quoted as data, and the known words
        web_calls += 1;
        let pages = self
            .search
            .search(&WebQuery::new(word, SearchCategory::General))
            .await
            .map_err(web)?;
        let pages = &pages[..pages.len().min(self.settings.pages)];
        let quoted: Vec<String> = pages
            .iter()
            .map(|p| {
                let mut p = p.clone();
                p.content = p.content.chars().take(self.settings.page_chars).collect();
                p.quoted()
            })
            .collect();
        sources.extend(pages.iter().map(|p| p.url.clone()));
        let replacement = if self.settings.known_words.is_empty() {
            None
        } else {
            twice(|| {
                self.vlm.replacement(
                    word,
                    &collage,
                    &keywords,
                    &quoted,
                    &self.settings.known_words,
                )
            })
            .await
            .map_err(model)?
        };
        // the keywords are kept (vision memory); the replacement is only a candidate
        // until the caller saw it find something
        self.store
            .remember_keywords(word, &keywords, &sources)
            .map_err(GroundingError::Memory)?;
        info!(word, keywords = %keywords.phrase(), ?replacement, web_calls, "grounded");
        Ok(Some(Grounded {
            word: word.to_owned(),
            grounding: Grounding {
                keywords,
                replacement,
                sources,
            },
            from_memory: false,
            web_calls,
        }))
    }

    /// Keeps `replacement` for `word` (it found something).
    pub fn confirm_replacement(&self, word: &str, replacement: &str) -> Result<(), GroundingError> {
        self.store
            .remember_replacement(word.trim(), replacement)
            .map_err(GroundingError::Memory)
    }
}
