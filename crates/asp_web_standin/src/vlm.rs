//! The concept questions' stand-in model ([`ConceptVlm`]): it recognises the pictures of
//! a collage as the ones this crate renders of the corpus's concepts (exact pixels, cell
//! by cell), and answers from the corpus's truth — the concept's keywords and its
//! replacement — with seeded errors per collage, as a model misreads some pictures.
//! A collage of pictures it did not render is refused: it never pretends to see.

use std::collections::{BTreeMap, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, OnceLock};

use asp_core::models::{Collage, ConceptKeywords, ConceptVlm, ModelError};
use asp_core::{Box2, RgbImage};
use serde::{Deserialize, Serialize};

use crate::corpus::Corpus;
use crate::render::{PICTURES, picture};

const MODEL: &str = "corpus concept stand-in";

/// How often the stand-in errs, each per question, seeded by the collage.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ConceptErrors {
    /// Chance that a keyword is another concept's (each of the five drawn alone).
    pub keyword: f64,
    /// Chance that the replacement is another known word, or none.
    pub replacement: f64,
    pub seed: u64,
}

impl Default for ConceptErrors {
    fn default() -> Self {
        Self {
            keyword: 0.0,
            replacement: 0.0,
            seed: 0,
        }
    }
}

/// Answers concept questions from the corpus.
#[derive(Debug)]
pub struct CorpusVlm {
    corpus: Arc<Corpus>,
    errors: ConceptErrors,
    /// Digest of each rendered picture → the concept's index; built on first use.
    pictures: OnceLock<Result<HashMap<u64, usize>, String>>,
}

fn digest(img: &RgbImage) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    (img.width(), img.height()).hash(&mut h);
    img.pixels().hash(&mut h);
    h.finish()
}

/// A seeded draw in [0, 1) from `parts`.
fn draw(parts: &[u64]) -> f64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    parts.hash(&mut h);
    (h.finish() >> 11) as f64 / (1u64 << 53) as f64
}

impl CorpusVlm {
    pub fn new(corpus: Arc<Corpus>, errors: ConceptErrors) -> Self {
        Self {
            corpus,
            errors,
            pictures: OnceLock::new(),
        }
    }

    fn index(&self) -> Result<&HashMap<u64, usize>, ModelError> {
        self.pictures
            .get_or_init(|| {
                let mut index = HashMap::new();
                for (i, c) in self.corpus.concepts().iter().enumerate() {
                    for n in 0..PICTURES {
                        index.insert(digest(&picture(c, n)?), i);
                    }
                }
                Ok(index)
            })
            .as_ref()
            .map_err(|e| ModelError::Backend {
                model: MODEL.into(),
                message: e.clone(),
            })
    }

    /// The concept most of the collage's cells show, and the collage's digest (the seed).
    fn recognise(&self, collage: &Collage) -> Result<(usize, u64), ModelError> {
        let index = self.index()?;
        let (cw, ch) = collage.cell;
        let mut votes: BTreeMap<usize, usize> = BTreeMap::new();
        for i in 0..collage.pictures {
            let (x, y) = ((i % collage.columns) * cw, (i / collage.columns) * ch);
            let b = Box2::new(x as f32, y as f32, (x + cw) as f32, (y + ch) as f32);
            let (cell, _) = collage.image.rgb.crop(&b);
            if let Some(&c) = index.get(&digest(&cell)) {
                *votes.entry(c).or_default() += 1;
            }
        }
        let best = votes
            .iter()
            .max_by_key(|(c, n)| (**n, std::cmp::Reverse(**c)))
            .map(|(c, _)| *c)
            .ok_or_else(|| ModelError::InvalidInput {
                model: MODEL.into(),
                problem: format!(
                    "none of the collage's {} cells of {cw}×{ch} is a picture the corpus server \
                     rendered: the stand-in answers about those only",
                    collage.pictures
                ),
            })?;
        Ok((best, digest(&collage.image.rgb)))
    }
}

#[async_trait::async_trait]
impl ConceptVlm for CorpusVlm {
    async fn keywords(
        &self,
        _word: &str,
        collage: &Collage,
    ) -> Result<ConceptKeywords, ModelError> {
        let (c, seed) = self.recognise(collage)?;
        let concepts = self.corpus.concepts();
        let k = &concepts[c].keywords;
        // each keyword misread alone: another concept's, drawn by the collage
        let pick = |field: u64, own: &str, of: fn(&crate::corpus::Keywords) -> &str| {
            if draw(&[self.errors.seed, seed, field]) < self.errors.keyword && concepts.len() > 1 {
                let other = (c
                    + 1
                    + (draw(&[self.errors.seed, seed, field, 1]) * (concepts.len() - 1) as f64)
                        as usize)
                    % concepts.len();
                of(&concepts[other].keywords).to_owned()
            } else {
                own.to_owned()
            }
        };
        Ok(ConceptKeywords {
            colour: pick(0, &k.colour, |k| &k.colour),
            shape: pick(1, &k.shape, |k| &k.shape),
            material: pick(2, &k.material, |k| &k.material),
            size: pick(3, &k.size, |k| &k.size),
            function: pick(4, &k.function, |k| &k.function),
        })
    }

    async fn replacement(
        &self,
        _word: &str,
        collage: &Collage,
        _keywords: &ConceptKeywords,
        _web_text: &[String],
        known: &[String],
    ) -> Result<Option<String>, ModelError> {
        let (c, seed) = self.recognise(collage)?;
        let truth = &self.corpus.concepts()[c].replacement;
        if draw(&[self.errors.seed, seed, 5]) < self.errors.replacement {
            // a wrong word of the list, or none
            let i = (draw(&[self.errors.seed, seed, 6]) * (known.len() + 1) as f64) as usize;
            return Ok(known.get(i).filter(|w| *w != truth).cloned());
        }
        Ok(known
            .iter()
            .find(|w| w.eq_ignore_ascii_case(truth))
            .cloned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn corpus() -> Arc<Corpus> {
        Arc::new(
            Corpus::load(
                std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                    .join("../../config/concepts/corpus.yaml"),
            )
            .unwrap(),
        )
    }

    fn collage_of(corpus: &Corpus, name: &str, n: usize) -> Collage {
        let c = corpus.concept(name).unwrap();
        let pics: Vec<RgbImage> = (0..n).map(|i| picture(c, i).unwrap()).collect();
        Collage::grid(&pics, 2, (crate::render::WIDTH, crate::render::HEIGHT)).unwrap()
    }

    #[tokio::test]
    async fn an_errorless_stand_in_answers_the_corpus_truth() {
        let corpus = corpus();
        let vlm = CorpusVlm::new(corpus.clone(), ConceptErrors::default());
        let collage = collage_of(&corpus, "moka pot", 4);
        let k = vlm.keywords("moka pot", &collage).await.unwrap();
        let truth = &corpus.concept("moka pot").unwrap().keywords;
        assert_eq!(
            (k.colour.as_str(), k.material.as_str()),
            (truth.colour.as_str(), truth.material.as_str())
        );
        let truth = corpus.concept("moka pot").unwrap().replacement.clone();
        let known: Vec<String> = vec![truth.clone(), "mug".into()];
        let r = vlm
            .replacement("moka pot", &collage, &k, &[], &known)
            .await
            .unwrap();
        assert_eq!(r, Some(truth));
        // a truth off the list is no replacement
        let r = vlm
            .replacement("moka pot", &collage, &k, &[], &["mug".into()])
            .await
            .unwrap();
        assert_eq!(r, None);
        // the word in the question does not matter: the pictures do
        let k2 = vlm.keywords("something else", &collage).await.unwrap();
        assert_eq!(k, k2);
    }

    #[tokio::test]
    async fn pictures_it_did_not_render_are_refused() {
        let vlm = CorpusVlm::new(corpus(), ConceptErrors::default());
        let grey = RgbImage::filled(crate::render::WIDTH, crate::render::HEIGHT, [128, 128, 128]);
        let collage =
            Collage::grid(&[grey], 2, (crate::render::WIDTH, crate::render::HEIGHT)).unwrap();
        let e = vlm.keywords("moka pot", &collage).await.unwrap_err();
        assert!(e.to_string().contains("rendered"), "{e}");
    }

    #[tokio::test]
    async fn errors_are_seeded_per_collage_and_at_their_rate() {
        let corpus = corpus();
        let errors = ConceptErrors {
            keyword: 0.3,
            replacement: 0.0,
            seed: 7,
        };
        let vlm = CorpusVlm::new(corpus.clone(), errors);
        let (mut wrong, mut total) = (0, 0);
        for c in corpus.concepts().iter().take(40) {
            let collage = collage_of(&corpus, &c.name, 3);
            let k = vlm.keywords(&c.name, &collage).await.unwrap();
            // the same collage, the same answer
            assert_eq!(k, vlm.keywords(&c.name, &collage).await.unwrap());
            for (got, truth) in [
                (&k.colour, &c.keywords.colour),
                (&k.shape, &c.keywords.shape),
                (&k.material, &c.keywords.material),
                (&k.function, &c.keywords.function),
            ] {
                total += 1;
                wrong += usize::from(got != truth);
            }
        }
        let rate = wrong as f64 / total as f64;
        assert!((0.15..0.45).contains(&rate), "{wrong} of {total} wrong");
    }
}
