//! SIMULATED models, driven by the simulator's per-pixel ground truth carried in
//! [`Observation::ground_truth`]. They exist so the whole pipeline runs on simulator
//! frames with controllable, seeded errors; on an image without ground truth they fail
//! with [`ModelError::MissingGroundTruth`]. No real camera can use them.
//!
//! - [`SimulatedSegmenter`]: one mask per visible instance, with over-segmentation (a
//!   mask split in two along its longer side), under-segmentation (a mask merged with a
//!   touching neighbour's) and boundary noise (mask-edge pixels flipped), each with a
//!   configured probability. Depth noise is the simulated camera's
//!   (`sim_node.camera.depth_noise_std`), not the segmenter's.
//! - [`SimulatedImageEmbedder`]: the feature of a crop is the REAL text embedder applied
//!   to the descriptions of the instances under the mask, weighted by their pixel counts
//!   (a mask covering two objects gets a mix, as CLIP would), with configured confusion
//!   (another visible object's description mixed in) and Gaussian noise.
//! - [`SimulatedRetrievalVlm`]: answers "is this the `query`?" about the object the views
//!   show (the instance holding most pixels of each view's central half, by majority
//!   over the views). It says yes when every content word of the query (articles and
//!   prepositions dropped, plurals folded) occurs in the object's name or description, or
//!   when the text-embedding cosine similarity of query and description reaches
//!   `simulation.vlm_similarity_threshold`; then flips the answer with probability
//!   `simulation.vlm_error_rate`, drawn per set of views (a new look can correct it).
//!
//! - [`SimulatedOutcomeVlm`]: the verifier's before/after Yes/No for presses and
//!   switches ("Has the h key of the keyboard been pressed?"): the part the question names
//!   best, among the parts both views show, was pressed between them; the answer flips
//!   with probability `verifier_node.outcome.simulated_error_rate`, drawn per pair of
//!   images, so a new look can correct it.
//!
//! Every random choice comes from a ChaCha8 generator seeded by the configured seed and
//! the content of the input, so the same image gives the same answer in any call order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use asp_config::sections::perception::PerceptionSimulationConfig;
use asp_core::image::{Image, LabelImage, Mask};
use asp_core::map::{cosine_similarity, normalize};
use asp_core::models::{
    GroundTruth, ImageEmbedder, ModelError, Observation, OutcomeVlm, RetrievalVlm, Segment,
    Segmenter, TextEmbedder,
};
use async_trait::async_trait;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// A 64-bit FNV-1a hasher: stable across runs and platforms (unlike `DefaultHasher`'s
/// random keys), so seeds derived from content are reproducible.
#[derive(Debug)]
struct Fnv(u64);

impl Default for Fnv {
    fn default() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
}

fn rng_for(seed: u64, salt: &str, content: impl Hash) -> ChaCha8Rng {
    let mut h = Fnv::default();
    seed.hash(&mut h);
    salt.hash(&mut h);
    content.hash(&mut h);
    ChaCha8Rng::seed_from_u64(h.finish())
}

fn ground_truth<'a>(obs: &'a Observation, model: &str) -> Result<&'a GroundTruth, ModelError> {
    obs.ground_truth
        .as_ref()
        .ok_or_else(|| ModelError::MissingGroundTruth {
            model: model.to_owned(),
        })
}

/// Pixel indices of each non-zero label.
fn label_pixels(labels: &LabelImage) -> BTreeMap<u32, Vec<usize>> {
    let mut out: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
    for (i, &l) in labels.pixels().iter().enumerate() {
        if l != 0 {
            out.entry(l).or_default().push(i);
        }
    }
    out
}

/// Pairs of different non-zero labels that touch (4-neighbourhood), smaller first.
fn touching(labels: &LabelImage) -> BTreeSet<(u32, u32)> {
    let (w, h) = (labels.width() as usize, labels.height() as usize);
    let px = labels.pixels();
    let mut pairs = BTreeSet::new();
    for y in 0..h {
        for x in 0..w {
            let a = px[y * w + x];
            if a == 0 {
                continue;
            }
            for (nx, ny) in [(x + 1, y), (x, y + 1)] {
                if nx < w && ny < h {
                    let b = px[ny * w + nx];
                    if b != 0 && b != a {
                        pairs.insert((a.min(b), a.max(b)));
                    }
                }
            }
        }
    }
    pairs
}

fn mask_from(width: u32, height: u32, pixels: &[usize]) -> Mask {
    let mut data = vec![false; width as usize * height as usize];
    for &i in pixels {
        data[i] = true;
    }
    Image::from_vec(width, height, data)
        .map_or_else(|_| Mask::empty(width, height), Mask::from_image)
}

/// Splits pixel indices in two halves along the longer side of their bounding box, at
/// the median coordinate. `None` when the region cannot be split.
fn split_halves(pixels: &[usize], width: usize) -> Option<(Vec<usize>, Vec<usize>)> {
    let xs = || pixels.iter().map(|&i| i % width);
    let ys = || pixels.iter().map(|&i| i / width);
    let (x0, x1) = (xs().min()?, xs().max()?);
    let (y0, y1) = (ys().min()?, ys().max()?);
    let along_x = x1 - x0 >= y1 - y0;
    let mut coords: Vec<usize> = if along_x {
        xs().collect()
    } else {
        ys().collect()
    };
    coords.sort_unstable();
    let cut = coords[coords.len() / 2];
    let key = |i: usize| if along_x { i % width } else { i / width };
    let (a, b): (Vec<usize>, Vec<usize>) = pixels.iter().partition(|&&i| key(i) < cut);
    (!a.is_empty() && !b.is_empty()).then_some((a, b))
}

/// Flips each boundary pixel (inside with an outside 4-neighbour, or outside with an
/// inside one) with probability `p`.
fn boundary_noise(mask: &Mask, p: f32, rng: &mut ChaCha8Rng) -> Mask {
    if p <= 0.0 {
        return mask.clone();
    }
    let (w, h) = (mask.width(), mask.height());
    let mut out = mask.clone();
    let Some(r) = mask.bounding_rect() else {
        return out;
    };
    for y in r.y0.saturating_sub(1)..(r.y1 + 1).min(h) {
        for x in r.x0.saturating_sub(1)..(r.x1 + 1).min(w) {
            let v = mask.get(x, y);
            let edge = [
                (x.wrapping_sub(1), y),
                (x + 1, y),
                (x, y.wrapping_sub(1)),
                (x, y + 1),
            ]
            .iter()
            .any(|&(nx, ny)| nx < w && ny < h && mask.get(nx, ny) != v);
            if edge && rng.random::<f32>() < p {
                out.set(x, y, !v);
            }
        }
    }
    out
}

/// Class-agnostic segmentation from simulator instance ids (SIMULATION ONLY).
#[derive(Debug, Clone)]
pub struct SimulatedSegmenter {
    params: PerceptionSimulationConfig,
}

impl SimulatedSegmenter {
    pub const NAME: &'static str = "SimulatedSegmenter";

    pub fn new(params: PerceptionSimulationConfig) -> Self {
        Self { params }
    }
}

impl Segmenter for SimulatedSegmenter {
    fn segment(&self, image: &Observation) -> Result<Vec<Segment>, ModelError> {
        let gt = ground_truth(image, Self::NAME)?;
        let labels = &gt.instance_ids;
        let (w, h) = (labels.width(), labels.height());
        let p = &self.params;
        let mut rng = rng_for(p.seed, Self::NAME, labels.pixels());
        let pixels = label_pixels(labels);
        // under-segmentation: union-find over touching instances
        let mut parent: BTreeMap<u32, u32> = pixels.keys().map(|&k| (k, k)).collect();
        fn root(parent: &BTreeMap<u32, u32>, mut k: u32) -> u32 {
            while let Some(&p) = parent.get(&k) {
                if p == k {
                    break;
                }
                k = p;
            }
            k
        }
        if p.under_segmentation > 0.0 {
            let pairs = touching(labels);
            for &id in pixels.keys() {
                if rng.random::<f32>() >= p.under_segmentation {
                    continue;
                }
                let neighbours: Vec<u32> = pairs
                    .iter()
                    .filter_map(|&(a, b)| {
                        if a == id {
                            Some(b)
                        } else if b == id {
                            Some(a)
                        } else {
                            None
                        }
                    })
                    .collect();
                if neighbours.is_empty() {
                    continue;
                }
                let other = neighbours[rng.random_range(0..neighbours.len())];
                let (ra, rb) = (root(&parent, id), root(&parent, other));
                if ra != rb {
                    parent.insert(ra.max(rb), ra.min(rb));
                }
            }
        }
        let mut groups: BTreeMap<u32, Vec<usize>> = BTreeMap::new();
        let mut merged: BTreeMap<u32, usize> = BTreeMap::new();
        for (&id, px) in &pixels {
            let r = root(&parent, id);
            groups.entry(r).or_default().extend_from_slice(px);
            *merged.entry(r).or_default() += 1;
        }
        let mut segments = Vec::new();
        for (r, mut px) in groups {
            px.sort_unstable();
            let base_score = if merged[&r] > 1 { 0.8 } else { 0.95 };
            let parts = if p.over_segmentation > 0.0 && rng.random::<f32>() < p.over_segmentation {
                match split_halves(&px, w as usize) {
                    Some((a, b)) => vec![(a, 0.8), (b, 0.8)],
                    None => vec![(px, base_score)],
                }
            } else {
                vec![(px, base_score)]
            };
            for (part, score) in parts {
                let mask = boundary_noise(&mask_from(w, h, &part), p.boundary_noise, &mut rng);
                if !mask.is_empty() {
                    segments.push(Segment { mask, score });
                }
            }
        }
        Ok(segments)
    }
}

/// Caches text embeddings of descriptions (the simulated models embed the same few
/// descriptions over and over). Bounded: past [`TEXT_CACHE_ENTRIES`] it starts again,
/// so a node that runs all day does not keep every description it ever saw.
const TEXT_CACHE_ENTRIES: usize = 4096;

#[derive(Clone)]
struct TextCache {
    text: Arc<dyn TextEmbedder>,
    cache: Arc<Mutex<HashMap<String, Vec<f32>>>>,
}

impl TextCache {
    fn new(text: Arc<dyn TextEmbedder>) -> Self {
        Self {
            text,
            cache: Arc::new(Mutex::new(HashMap::new())),
        }
    }

    fn embed(&self, s: &str) -> Result<Vec<f32>, ModelError> {
        if let Ok(cache) = self.cache.lock()
            && let Some(v) = cache.get(s)
        {
            return Ok(v.clone());
        }
        let v = self.text.embed_text(s)?;
        if let Ok(mut cache) = self.cache.lock() {
            if cache.len() >= TEXT_CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(s.to_owned(), v.clone());
        }
        Ok(v)
    }
}

/// The text a simulated model reads for an instance: its description, or its name.
fn instance_text(gt: &GroundTruth, id: u32) -> String {
    match gt.instances.get(&id) {
        Some(i) if !i.description.trim().is_empty() => i.description.clone(),
        Some(i) => i.name.clone(),
        None => format!("object {id}"),
    }
}

/// What a crop with no labelled pixels is described as.
const BACKGROUND: &str = "background";

/// Crop features from the real text embedder on ground-truth descriptions (SIMULATION
/// ONLY).
#[derive(Clone)]
pub struct SimulatedImageEmbedder {
    text: TextCache,
    params: PerceptionSimulationConfig,
}

impl std::fmt::Debug for SimulatedImageEmbedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedImageEmbedder")
            .field("dim", &self.text.text.dim())
            .field("params", &self.params)
            .finish()
    }
}

impl SimulatedImageEmbedder {
    pub const NAME: &'static str = "SimulatedImageEmbedder";

    pub fn new(text: Arc<dyn TextEmbedder>, params: PerceptionSimulationConfig) -> Self {
        Self {
            text: TextCache::new(text),
            params,
        }
    }
}

impl ImageEmbedder for SimulatedImageEmbedder {
    fn dim(&self) -> usize {
        self.text.text.dim()
    }

    fn embed_image(
        &self,
        image: &Observation,
        mask: Option<&Mask>,
    ) -> Result<Vec<f32>, ModelError> {
        let gt = ground_truth(image, Self::NAME)?;
        let labels = gt.instance_ids.pixels();
        if let Some(m) = mask
            && (m.width(), m.height()) != (gt.instance_ids.width(), gt.instance_ids.height())
        {
            return Err(ModelError::InvalidInput {
                model: Self::NAME.into(),
                problem: format!(
                    "mask is {}×{} but the image is {}×{}",
                    m.width(),
                    m.height(),
                    gt.instance_ids.width(),
                    gt.instance_ids.height()
                ),
            });
        }
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for (i, &l) in labels.iter().enumerate() {
            let inside = mask.is_none_or(|m| m.image().pixels()[i]);
            if inside && l != 0 {
                *counts.entry(l).or_default() += 1;
            }
        }
        let total: u64 = counts.values().sum();
        let mut feature = if total == 0 {
            self.text.embed(BACKGROUND)?
        } else {
            let mut f = vec![0.0f32; self.dim()];
            for (&id, &n) in &counts {
                let e = self.text.embed(&instance_text(gt, id))?;
                let wgt = n as f32 / total as f32;
                for (a, b) in f.iter_mut().zip(&e) {
                    *a += wgt * b;
                }
            }
            normalize(&mut f);
            f
        };
        let p = &self.params;
        let mut rng = rng_for(p.seed, Self::NAME, (&counts, image.width(), image.height()));
        if p.confusion > 0.0 && rng.random::<f32>() < p.confusion {
            // another object in view: one of the crop's instances not under the mask
            let others: Vec<u32> = gt
                .instances
                .keys()
                .copied()
                .filter(|id| !counts.contains_key(id))
                .collect();
            if !others.is_empty() {
                let other = others[rng.random_range(0..others.len())];
                let e = self.text.embed(&instance_text(gt, other))?;
                let wgt = p.confusion_weight;
                for (a, b) in feature.iter_mut().zip(&e) {
                    *a = (1.0 - wgt) * *a + wgt * b;
                }
            }
        }
        if p.feature_noise > 0.0 {
            let normal =
                Normal::new(0.0f32, p.feature_noise).map_err(|e| ModelError::InvalidInput {
                    model: Self::NAME.into(),
                    problem: format!("feature_noise {}: {e}", p.feature_noise),
                })?;
            for a in &mut feature {
                *a += normal.sample(&mut rng);
            }
        }
        normalize(&mut feature);
        Ok(feature)
    }
}

/// Words that carry no identity in a retrieval query.
const STOPWORDS: &[&str] = &[
    "a", "an", "the", "of", "on", "in", "at", "to", "with", "and", "or", "that", "this", "is",
    "it", "its", "for", "from", "by", "some", "any", "one", "which", "please",
];

/// Content words: lowercase alphanumeric tokens minus stopwords, plurals folded.
pub(crate) fn content_words(text: &str) -> BTreeSet<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty() && !STOPWORDS.contains(w))
        .map(singular)
        .collect()
}

fn singular(w: &str) -> String {
    if w.len() > 4 && w.ends_with("ies") {
        format!("{}y", &w[..w.len() - 3])
    } else if w.len() > 4 && (w.ends_with("ches") || w.ends_with("shes") || w.ends_with("xes")) {
        w[..w.len() - 2].to_owned()
    } else if w.len() > 3 && w.ends_with('s') && !w.ends_with("ss") {
        w[..w.len() - 1].to_owned()
    } else {
        w.to_owned()
    }
}

/// The instance shown by a view: most pixels in the central half of the view (the
/// whole view when the centre holds none).
fn shown_instance(gt: &GroundTruth) -> Option<u32> {
    let (w, h) = (gt.instance_ids.width(), gt.instance_ids.height());
    let count = |x0: u32, y0: u32, x1: u32, y1: u32| {
        let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
        for y in y0..y1 {
            for x in x0..x1 {
                if let Some(&l) = gt.instance_ids.get(x, y)
                    && l != 0
                {
                    *counts.entry(l).or_default() += 1;
                }
            }
        }
        // most pixels, ties to the lowest id
        counts
            .into_iter()
            .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
            .map(|(id, _)| id)
    };
    count(w / 4, h / 4, w - w / 4, h - h / 4).or_else(|| count(0, 0, w, h))
}

/// Retrieval confirmation from ground truth (SIMULATION ONLY).
#[derive(Clone)]
pub struct SimulatedRetrievalVlm {
    text: TextCache,
    params: PerceptionSimulationConfig,
}

impl std::fmt::Debug for SimulatedRetrievalVlm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SimulatedRetrievalVlm")
            .field("params", &self.params)
            .finish()
    }
}

impl SimulatedRetrievalVlm {
    pub const NAME: &'static str = "SimulatedRetrievalVlm";

    pub fn new(text: Arc<dyn TextEmbedder>, params: PerceptionSimulationConfig) -> Self {
        Self {
            text: TextCache::new(text),
            params,
        }
    }

    /// The noiseless decision for one instance (before the error flip).
    pub fn matches(&self, query: &str, name: &str, description: &str) -> Result<bool, ModelError> {
        let wanted = content_words(query);
        let have: BTreeSet<String> = content_words(&format!("{name} {description}"));
        if !wanted.is_empty() && wanted.is_subset(&have) {
            return Ok(true);
        }
        let q = self.text.embed(query)?;
        let d = self.text.embed(if description.trim().is_empty() {
            name
        } else {
            description
        })?;
        Ok(cosine_similarity(&q, &d) >= self.params.vlm_similarity_threshold)
    }
}

#[async_trait]
impl RetrievalVlm for SimulatedRetrievalVlm {
    async fn confirm(&self, query: &str, views: &[Observation]) -> Result<bool, ModelError> {
        let mut votes: BTreeMap<u32, usize> = BTreeMap::new();
        for view in views {
            let gt = ground_truth(view, Self::NAME)?;
            if let Some(id) = shown_instance(gt) {
                *votes.entry(id).or_default() += 1;
            }
        }
        let Some((&id, _)) = votes.iter().max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0))) else {
            return Ok(false);
        };
        let (name, description) = views
            .iter()
            .filter_map(|v| v.ground_truth.as_ref())
            .find_map(|g| g.instances.get(&id))
            .map(|i| (i.name.clone(), i.description.clone()))
            .unwrap_or_else(|| (format!("object {id}"), String::new()));
        let mut answer = self.matches(query, &name, &description)?;
        // drawn per set of views: a new look at the object can correct a wrong answer
        let digests: Vec<u64> = views.iter().map(image_digest).collect();
        let mut rng = rng_for(self.params.seed, Self::NAME, (query, id, digests));
        if self.params.vlm_error_rate > 0.0 && rng.random::<f32>() < self.params.vlm_error_rate {
            answer = !answer;
        }
        Ok(answer)
    }
}

/// Outcome questions about presses and switches, from ground truth (SIMULATION ONLY).
#[derive(Debug, Clone)]
pub struct SimulatedOutcomeVlm {
    error_rate: f32,
    seed: u64,
}

impl SimulatedOutcomeVlm {
    pub const NAME: &'static str = "SimulatedOutcomeVlm";

    pub fn new(error_rate: f32, seed: u64) -> Self {
        Self { error_rate, seed }
    }

    /// Parts both views show.
    fn parts_in_both(before: &GroundTruth, after: &GroundTruth) -> Vec<u32> {
        after
            .parts
            .keys()
            .filter(|id| before.parts.contains_key(id))
            .copied()
            .collect()
    }

    /// The words of an instance's name.
    fn instance_words(gt: &GroundTruth, instance: u32) -> BTreeSet<String> {
        gt.instances
            .get(&instance)
            .map(|i| content_words(&i.name.replace('_', " ")))
            .unwrap_or_default()
    }

    /// The part whose name shares the most words with `words` (ties to the lower id).
    fn best_part(words: &BTreeSet<String>, gt: &GroundTruth) -> Option<u32> {
        gt.parts
            .values()
            .map(|p| (content_words(&p.name).intersection(words).count(), p.id))
            .filter(|(n, _)| *n > 0)
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, id)| id)
    }

    /// The noiseless answer: the part the question names best (most of its name's words
    /// in the question, then most of its object's), among the parts both views show, was
    /// pressed between them. Without such a part: the object the question names had any
    /// part pressed.
    pub fn pressed(question: &str, before: &GroundTruth, after: &GroundTruth) -> bool {
        // "anything on X other than Y": any part of X but the one Y names best
        if let Some((on, except)) = question.to_lowercase().split_once(" other than ") {
            let excluded = Self::best_part(&content_words(except), after);
            let asked = content_words(on);
            return Self::parts_in_both(before, after).into_iter().any(|id| {
                Some(id) != excluded
                    && Self::instance_words(after, after.parts[&id].instance)
                        .intersection(&asked)
                        .next()
                        .is_some()
                    && after.parts[&id].presses > before.parts[&id].presses
            });
        }
        let asked = content_words(question);
        let named = |words: BTreeSet<String>| words.intersection(&asked).count();
        let pressed = |id: u32| after.parts[&id].presses > before.parts[&id].presses;
        let both = Self::parts_in_both(before, after);
        let best = both
            .iter()
            .map(|&id| {
                let p = &after.parts[&id];
                let by_object = named(Self::instance_words(after, p.instance));
                (named(content_words(&p.name)), by_object, id)
            })
            .filter(|(by_part, _, _)| *by_part > 0)
            .max_by(|a, b| {
                (a.0, a.1, std::cmp::Reverse(a.2)).cmp(&(b.0, b.1, std::cmp::Reverse(b.2)))
            });
        if let Some((_, _, id)) = best {
            return pressed(id);
        }
        both.into_iter().any(|id| {
            named(Self::instance_words(after, after.parts[&id].instance)) > 0 && pressed(id)
        })
    }
}

fn image_digest(o: &Observation) -> u64 {
    let mut h = Fnv::default();
    (o.rgb.width(), o.rgb.height()).hash(&mut h);
    for px in o.rgb.pixels() {
        px.hash(&mut h);
    }
    h.finish()
}

#[async_trait]
impl OutcomeVlm for SimulatedOutcomeVlm {
    async fn yes_no(
        &self,
        question: &str,
        before: &Observation,
        after: &Observation,
    ) -> Result<bool, ModelError> {
        let q = question.to_lowercase();
        if !(q.contains("pressed") || q.contains("turned on") || q.contains("turned off")) {
            return Err(ModelError::InvalidInput {
                model: Self::NAME.into(),
                problem: format!(
                    "the simulated outcome VLM judges presses and switches only, not {question:?}"
                ),
            });
        }
        let gb = ground_truth(before, Self::NAME)?;
        let ga = ground_truth(after, Self::NAME)?;
        tracing::debug!(
            question,
            before = ?gb.parts.values().map(|p| &p.name).collect::<Vec<_>>(),
            after = ?ga.parts.values().map(|p| &p.name).collect::<Vec<_>>(),
            "the parts each view shows"
        );
        let mut answer = Self::pressed(question, gb, ga);
        let mut rng = rng_for(
            self.seed,
            Self::NAME,
            (question, image_digest(before), image_digest(after)),
        );
        if self.error_rate > 0.0 && rng.random::<f32>() < self.error_rate {
            answer = !answer;
        }
        Ok(answer)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyboard(presses: [u32; 2]) -> GroundTruth {
        use asp_core::models::GtPart;
        let parts = [(1u32, "h key"), (2, "i key")]
            .iter()
            .zip(presses)
            .map(|((id, name), presses)| {
                (
                    *id,
                    GtPart {
                        id: *id,
                        instance: 7,
                        name: (*name).into(),
                        skills: vec![asp_core::Skill::TipPush],
                        presses,
                    },
                )
            })
            .collect();
        GroundTruth {
            instance_ids: LabelImage::filled(2, 1, 7),
            part_ids: LabelImage::from_vec(2, 1, vec![1, 2]).unwrap(),
            instances: [(
                7,
                asp_core::models::GtInstance {
                    id: 7,
                    name: "keyboard".into(),
                    description: "a keyboard".into(),
                },
            )]
            .into(),
            parts,
        }
    }

    #[test]
    fn outcome_vlm_judges_the_part_the_question_names() {
        let before = keyboard([0, 0]);
        let h_pressed = keyboard([1, 0]);
        let q_h = "Has the h key of the keyboard been pressed?";
        let q_i = "Has the i key of the keyboard been pressed?";
        assert!(SimulatedOutcomeVlm::pressed(q_h, &before, &h_pressed));
        // the wrong key was pressed: no
        assert!(!SimulatedOutcomeVlm::pressed(q_i, &before, &h_pressed));
        // nothing pressed: no
        assert!(!SimulatedOutcomeVlm::pressed(q_h, &before, &before));
        // the side question: anything but the named key
        let other_than_i =
            "Has anything on the keyboard other than the i key of the keyboard been pressed?";
        let other_than_h =
            "Has anything on the keyboard other than the h key of the keyboard been pressed?";
        assert!(SimulatedOutcomeVlm::pressed(
            other_than_i,
            &before,
            &h_pressed
        ));
        assert!(!SimulatedOutcomeVlm::pressed(
            other_than_h,
            &before,
            &h_pressed
        ));
        // the object named without a part: any of its parts
        assert!(SimulatedOutcomeVlm::pressed(
            "Has the keyboard been turned on?",
            &before,
            &h_pressed
        ));
    }

    #[tokio::test]
    async fn outcome_vlm_errs_per_pair_of_images_and_needs_ground_truth() {
        use asp_core::RgbImage;
        let obs = |gt: GroundTruth, shade: u8| Observation {
            rgb: RgbImage::filled(2, 1, [shade, 0, 0]),
            depth: None,
            ground_truth: Some(gt),
        };
        let q = "Has the h key of the keyboard been pressed?";
        let always_wrong = SimulatedOutcomeVlm::new(1.0, 0);
        let before = obs(keyboard([0, 0]), 0);
        let after = obs(keyboard([1, 0]), 1);
        assert!(!always_wrong.yes_no(q, &before, &after).await.unwrap());
        // a rate between: the answer depends on the images, and repeats for the same pair
        let sometimes = SimulatedOutcomeVlm::new(0.5, 3);
        let mut answers = BTreeSet::new();
        for shade in 0..32u8 {
            let a = obs(keyboard([1, 0]), shade);
            let first = sometimes.yes_no(q, &before, &a).await.unwrap();
            assert_eq!(first, sometimes.yes_no(q, &before, &a).await.unwrap());
            answers.insert(first);
        }
        assert_eq!(answers.len(), 2);
        let blind = Observation {
            ground_truth: None,
            ..before.clone()
        };
        assert!(matches!(
            sometimes.yes_no(q, &blind, &after).await,
            Err(ModelError::MissingGroundTruth { .. })
        ));
        // not a question it can judge
        assert!(
            sometimes
                .yes_no(
                    "Has the mug been grasped and lifted off any surface?",
                    &before,
                    &after
                )
                .await
                .is_err()
        );
    }

    #[test]
    fn content_words_drop_articles_and_fold_plurals() {
        let w = content_words("The red mugs on a table, boxes and batteries");
        let want: BTreeSet<String> = ["red", "mug", "table", "box", "battery"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(w, want);
        assert_eq!(singular("glass"), "glass");
    }

    #[test]
    fn split_halves_cuts_the_longer_side_at_the_median() {
        // 4×1 strip in a 4-wide image
        let (a, b) = split_halves(&[0, 1, 2, 3], 4).unwrap();
        assert_eq!((a, b), (vec![0, 1], vec![2, 3]));
        // a 1×2 column splits vertically
        let (a, b) = split_halves(&[1, 5], 4).unwrap();
        assert_eq!((a, b), (vec![1], vec![5]));
        assert!(split_halves(&[3], 4).is_none());
    }
}
