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
//!   Names it was built without ([`SimulatedRetrievalVlm::with_unknown_names`]: the
//!   brands and products of the simulation's web corpus) it cannot read, in a question
//!   or in the simulator's names: such a question is judged by the look it describes.
//!
//! - [`SimulatedOutcomeVlm`]: the verifier's before/after Yes/No for presses and
//!   switches ("Has the h key of the keyboard been pressed?"): the part the question names
//!   best, among the parts both views show, was pressed between them; the answer flips
//!   with probability `verifier_node.outcome.simulated_error_rate`, drawn per pair of
//!   images, so a new look can correct it.
//! - [`SimulatedMemoryVlm`]: the tour-image description of memory construction (SPEC
//!   §3.1): the visible instances, largest first, with their descriptions, mask boxes and
//!   affordances (pick for loose objects, place for fixed ones, open and close for those
//!   with a drawer or door part), with misses, bare descriptions, box jitter and score
//!   noise per [`SimulatedMemoryParams`].
//!
//! Every random choice comes from a ChaCha8 generator seeded by the configured seed and
//! the content of the input, so the same image gives the same answer in any call order.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};

use asp_config::sections::perception::PerceptionSimulationConfig;
use asp_core::Box2;
use asp_core::image::PixelRect;
use asp_core::image::{Image, LabelImage, Mask};
use asp_core::map::{cosine_similarity, normalize};
use asp_core::models::{
    GroundTruth, ImageEmbedder, MemoryVlm, ModelError, Observation, OutcomeVlm, RetrievalVlm,
    SeenObject, Segment, Segmenter, TextEmbedder, ViewAffordance, ViewAffordanceScore,
    ViewDescription,
};
use asp_core::skill::Skill;
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

/// Words that carry no identity in a retrieval query; the indefinite heads among them
/// ("something red") leave the question to the words around them, as a VLM reads it.
const STOPWORDS: &[&str] = &[
    "a",
    "an",
    "the",
    "of",
    "on",
    "in",
    "at",
    "to",
    "with",
    "and",
    "or",
    "that",
    "this",
    "is",
    "it",
    "its",
    "for",
    "from",
    "by",
    "some",
    "any",
    "one",
    "which",
    "please",
    "something",
    "anything",
    "thing",
    "object",
    "item",
    "stuff",
];

/// Lowercase alphanumeric tokens, in order.
fn tokens(text: &str) -> Vec<String> {
    text.to_lowercase()
        .split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Content words: lowercase alphanumeric tokens minus stopwords, plurals folded.
pub(crate) fn content_words(text: &str) -> BTreeSet<String> {
    tokens(text)
        .into_iter()
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| singular(&w))
        .collect()
}

/// Lowercase alphanumeric tokens, plurals folded, in order (stopwords kept).
fn folded_words(text: &str) -> Vec<String> {
    tokens(text).into_iter().map(|w| singular(&w)).collect()
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
    /// Names this model never learnt (brands, products, characters), as folded words.
    unknown: Arc<Vec<Vec<String>>>,
    /// What kinds of thing nouns name and what things are for (the world knowledge a
    /// VLM brings); `None`: words and close paraphrases only.
    lexicon: Option<Arc<crate::lexicon::Lexicon>>,
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
            unknown: Arc::new(Vec::new()),
            lexicon: crate::lexicon::Lexicon::system(),
        }
    }

    /// This model with `lexicon` as its knowledge of kinds and uses (`None`: words and
    /// close paraphrases only); [`Self::new`] takes the system's WordNet when installed.
    pub fn with_lexicon(mut self, lexicon: Option<Arc<crate::lexicon::Lexicon>>) -> Self {
        self.lexicon = lexicon;
        self
    }

    /// A model that never learnt `names` (a detector's vocabulary gap: "moka pot",
    /// "Stanley cup"): it cannot tell such a thing from its name, in a question or in the
    /// simulator's names and descriptions, only from its look.
    pub fn with_unknown_names<S: AsRef<str>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        let mut phrases: Vec<Vec<String>> = names
            .into_iter()
            .map(|n| folded_words(n.as_ref()))
            .filter(|w| !w.is_empty())
            .collect();
        // the longest first, so "stanley cup lid" goes before "stanley cup"
        phrases.sort_by_key(|p| std::cmp::Reverse(p.len()));
        phrases.dedup();
        self.unknown = Arc::new(phrases);
        self
    }

    /// `text` without the names this model does not know (but those `seen` holds: the
    /// model describes the object with them itself), and whether it held one.
    fn known_part(&self, text: &str, seen: &[String]) -> (String, bool) {
        let mut words = folded_words(text);
        let mut found = false;
        let in_seen = |p: &[String]| seen.windows(p.len()).any(|w| w == p);
        for phrase in self.unknown.iter().filter(|p| !in_seen(p)) {
            let mut i = 0;
            while i + phrase.len() <= words.len() {
                if words[i..i + phrase.len()] == phrase[..] {
                    words.drain(i..i + phrase.len());
                    found = true;
                } else {
                    i += 1;
                }
            }
        }
        (words.join(" "), found)
    }

    /// The noiseless decision for one instance (before the error flip). A question that
    /// names a thing this model does not know (nor describes the object with) is judged by the look it describes (the
    /// comma-separated phrases after the name, as a grounded query gives them: "moka pot,
    /// silver, eight-sided jug, aluminium, small, brews coffee"): yes when at least half
    /// of them (and one) share a word with what the object looks like; without them, by
    /// its other words alone.
    pub fn matches(&self, query: &str, name: &str, description: &str) -> Result<bool, ModelError> {
        // a name the model itself describes the object with is one it knows ("a grey
        // plastic thermos"); the simulator's names it cannot read
        let seen = folded_words(description);
        let (name, _) = self.known_part(&name.replace('_', " "), &seen);
        let (known_query, named_unknown) = self.known_part(query, &seen);
        if !named_unknown {
            return self.plain_match(query, &name, description);
        }
        let looks: Vec<BTreeSet<String>> = query
            .split(',')
            .skip(1)
            .map(content_words)
            .filter(|w| !w.is_empty())
            .collect();
        if looks.is_empty() {
            if content_words(&known_query).is_empty() {
                return Ok(false);
            }
            return self.plain_match(&known_query, &name, description);
        }
        let seen_words = content_words(description);
        let seen = looks
            .iter()
            .filter(|l| l.intersection(&seen_words).next().is_some())
            .count();
        Ok(seen >= 1 && 2 * seen >= looks.len())
    }

    /// Every content word of `query` in the name or the description, or a kind or use of
    /// what the object is (its name's words and its description's last: "fruit" of an
    /// apple, "drink" of a cup, by the lexicon), or their meanings close enough.
    fn plain_match(&self, query: &str, name: &str, description: &str) -> Result<bool, ModelError> {
        let wanted = content_words(query);
        let have: BTreeSet<String> = content_words(&format!("{name} {description}"));
        if !wanted.is_empty() && wanted.is_subset(&have) {
            return Ok(true);
        }
        if !wanted.is_empty()
            && let Some(lexicon) = &self.lexicon
        {
            let mut nouns: Vec<String> = folded_words(name);
            nouns.extend(folded_words(description).pop());
            // "apple_a": a simulator's suffix is no noun
            nouns.retain(|w| w.len() > 2 && !STOPWORDS.contains(&w.as_str()));
            let known = |w: &String| {
                have.contains(w) || lexicon.describes(w, nouns.iter().map(String::as_str))
            };
            if wanted.iter().all(known) {
                return Ok(true);
            }
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

/// Error model of [`SimulatedMemoryVlm`].
#[derive(Debug, Clone, PartialEq)]
pub struct SimulatedMemoryParams {
    pub seed: u64,
    /// Instances with fewer visible pixels are not reported. Default 150.
    pub min_pixels: u32,
    /// Probability an object is left out, per object; doubled for objects under
    /// `4 × min_pixels` pixels. Default 0.1.
    pub miss_rate: f64,
    /// Probability a description loses its first word (as a VLM omits a colour).
    /// Default 0.15.
    pub bare_rate: f64,
    /// Standard deviation of each box edge's shift, as a fraction of the box's width or
    /// height. Default 0.08.
    pub box_jitter: f32,
    /// Standard deviation of the affordance scores. Default 0.08.
    pub score_sigma: f32,
}

impl Default for SimulatedMemoryParams {
    fn default() -> Self {
        Self {
            seed: 0,
            min_pixels: 150,
            miss_rate: 0.1,
            bare_rate: 0.15,
            box_jitter: 0.08,
            score_sigma: 0.08,
        }
    }
}

impl SimulatedMemoryParams {
    /// No errors at all: every instance of `min_pixels` or more, its full description,
    /// its exact mask box and the mean scores.
    pub fn noiseless(seed: u64) -> Self {
        Self {
            seed,
            miss_rate: 0.0,
            bare_rate: 0.0,
            box_jitter: 0.0,
            score_sigma: 0.0,
            ..Self::default()
        }
    }
}

/// The description of a tour image, from ground truth (SIMULATION ONLY).
#[derive(Debug, Clone)]
pub struct SimulatedMemoryVlm {
    params: SimulatedMemoryParams,
}

/// What one instance covers in an image.
#[derive(Debug, Clone, Copy)]
struct Coverage {
    pixels: u64,
    rect: PixelRect,
}

/// Pixel count and bounding rectangle of each non-zero label.
fn coverage(labels: &LabelImage) -> BTreeMap<u32, Coverage> {
    let mut out: BTreeMap<u32, Coverage> = BTreeMap::new();
    for (x, y, &l) in labels.enumerate() {
        if l == 0 {
            continue;
        }
        let c = out.entry(l).or_insert(Coverage {
            pixels: 0,
            rect: PixelRect {
                x0: x,
                y0: y,
                x1: x + 1,
                y1: y + 1,
            },
        });
        c.pixels += 1;
        c.rect.x0 = c.rect.x0.min(x);
        c.rect.y0 = c.rect.y0.min(y);
        c.rect.x1 = c.rect.x1.max(x + 1);
        c.rect.y1 = c.rect.y1.max(y + 1);
    }
    out
}

/// A stable digest of a ground truth's content: labels and legends.
fn ground_truth_digest(gt: &GroundTruth) -> u64 {
    let mut h = Fnv::default();
    (gt.instance_ids.width(), gt.instance_ids.height()).hash(&mut h);
    gt.instance_ids.pixels().hash(&mut h);
    gt.part_ids.pixels().hash(&mut h);
    for i in gt.instances.values() {
        (i.id, &i.name, &i.description, i.fixed).hash(&mut h);
    }
    for p in gt.parts.values() {
        (p.id, p.instance, &p.name).hash(&mut h);
        for s in &p.skills {
            s.name().hash(&mut h);
        }
    }
    h.finish()
}

/// `text` without a leading article ("a ", "an ", "the ", any case).
fn without_article(text: &str) -> &str {
    let t = text.trim();
    for article in ["a ", "an ", "the "] {
        if t.len() > article.len()
            && t.is_char_boundary(article.len())
            && t[..article.len()].eq_ignore_ascii_case(article)
        {
            return t[article.len()..].trim_start();
        }
    }
    t
}

/// "x", "x and y", "x, y and z".
fn listed(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [one] => (*one).to_owned(),
        [init @ .., last] => format!("{} and {last}", init.join(", ")),
    }
}

impl SimulatedMemoryVlm {
    pub const NAME: &'static str = "SimulatedMemoryVlm";
    /// Objects reported per view, at most.
    pub const MAX_OBJECTS: usize = 12;

    pub fn new(params: SimulatedMemoryParams) -> Self {
        Self { params }
    }

    pub fn params(&self) -> &SimulatedMemoryParams {
        &self.params
    }

    /// The description of an image with ground truth `gt`: the same truth always gives
    /// the same description.
    pub fn describe(&self, gt: &GroundTruth) -> ViewDescription {
        let p = &self.params;
        let (w, h) = (gt.instance_ids.width(), gt.instance_ids.height());
        let digest = ground_truth_digest(gt);
        let mut visible: Vec<(u32, Coverage)> = coverage(&gt.instance_ids)
            .into_iter()
            .filter(|(id, c)| c.pixels >= u64::from(p.min_pixels) && gt.instances.contains_key(id))
            .collect();
        // largest first, ties to the lower id
        visible.sort_by(|a, b| b.1.pixels.cmp(&a.1.pixels).then(a.0.cmp(&b.0)));
        let normal = |mean: f32, sd: f32, rng: &mut ChaCha8Rng| {
            Normal::new(mean, sd.max(0.0))
                .map(|n| n.sample(rng))
                .unwrap_or(mean)
        };
        let mut objects = Vec::new();
        for (id, c) in visible {
            if objects.len() >= Self::MAX_OBJECTS {
                break;
            }
            // drawn per object, so one object's draws do not depend on the others
            let mut rng = rng_for(p.seed, Self::NAME, (digest, id));
            let small = c.pixels < 4 * u64::from(p.min_pixels);
            let miss = if small {
                (2.0 * p.miss_rate).min(1.0)
            } else {
                p.miss_rate
            };
            let missed = rng.random::<f64>() < miss;
            let bare = rng.random::<f64>() < p.bare_rate;
            let edges: [f32; 4] = std::array::from_fn(|_| normal(0.0, p.box_jitter, &mut rng));
            let instance = &gt.instances[&id];
            let scores: [f32; 4] = [0.85, 0.75, 0.8, 0.7]
                .map(|mean| normal(mean, p.score_sigma, &mut rng).clamp(0.0, 1.0));
            if missed {
                continue;
            }
            let mut description = without_article(&instance.description).to_owned();
            if description.is_empty() {
                description = instance.name.replace('_', " ");
            }
            if bare && let Some((_, rest)) = description.split_once(char::is_whitespace) {
                description = rest.trim_start().to_owned();
            }
            let r = c.rect.to_box();
            let (bw, bh) = (r.width(), r.height());
            let axis = |lo: f32, hi: f32, dlo: f32, dhi: f32, size: f32, max: f32| {
                let (a, b) = (
                    (lo + dlo * size).clamp(0.0, max),
                    (hi + dhi * size).clamp(0.0, max),
                );
                // a jitter that would empty the box leaves that axis exact
                if b - a >= 1.0 { (a, b) } else { (lo, hi) }
            };
            let (x0, x1) = axis(r.x0, r.x1, edges[0], edges[2], bw, w as f32);
            let (y0, y1) = axis(r.y0, r.y1, edges[1], edges[3], bh, h as f32);
            let mut affordances = vec![if instance.fixed {
                ViewAffordanceScore {
                    affordance: ViewAffordance::Place,
                    score: scores[1],
                }
            } else {
                ViewAffordanceScore {
                    affordance: ViewAffordance::Pick,
                    score: scores[0],
                }
            }];
            let opens = gt.parts.values().any(|part| {
                part.instance == id
                    && part
                        .skills
                        .iter()
                        .any(|s| matches!(s, Skill::Open | Skill::HookPull))
            });
            if opens {
                affordances.push(ViewAffordanceScore {
                    affordance: ViewAffordance::Open,
                    score: scores[2],
                });
                affordances.push(ViewAffordanceScore {
                    affordance: ViewAffordance::Close,
                    score: scores[3],
                });
            }
            objects.push(SeenObject {
                description,
                bbox: Box2::new(x0, y0, x1, y1),
                affordances,
            });
        }
        let largest: Vec<&str> = objects
            .iter()
            .take(3)
            .map(|o| o.description.as_str())
            .collect();
        let description = if largest.is_empty() {
            "a view with no recognisable objects".to_owned()
        } else {
            format!("a view of {}", listed(&largest))
        };
        ViewDescription {
            description,
            objects,
        }
    }
}

#[async_trait]
impl MemoryVlm for SimulatedMemoryVlm {
    async fn describe_view(&self, view: &Observation) -> Result<ViewDescription, ModelError> {
        Ok(self.describe(ground_truth(view, Self::NAME)?))
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
                    fixed: false,
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

    fn retrieval_vlm_not_knowing(names: &[&str]) -> SimulatedRetrievalVlm {
        let text: Arc<dyn TextEmbedder> = Arc::new(crate::hashing::HashingTextEmbedder::new(64));
        SimulatedRetrievalVlm::new(text, PerceptionSimulationConfig::default())
            .with_unknown_names(names.iter().copied())
    }

    #[test]
    fn a_name_the_model_never_learnt_is_judged_by_the_look_the_question_describes() {
        let vlm = retrieval_vlm_not_knowing(&["moka pot", "stanley cup"]);
        let moka = (
            "moka_pot",
            "a small silver eight-sided aluminium coffee pot with a black handle",
        );
        // a name the object's own description uses is known
        let thermos = retrieval_vlm_not_knowing(&["thermos"]);
        assert!(
            thermos
                .matches("the thermos", "thermos_0", "a grey plastic thermos")
                .unwrap()
        );
        assert!(
            !thermos
                .matches("the thermos", "cup_left", "a blue plastic cup")
                .unwrap()
        );
        let kettle = (
            "kettle",
            "a white electric kettle with a power button on its lid",
        );
        // the bare name: the model cannot tell, even from the simulator's own names
        assert!(!vlm.matches("the moka pot", moka.0, moka.1).unwrap());
        assert!(!vlm.matches("moka pots", moka.0, moka.1).unwrap());
        // with the look: half of the phrases or more seen on the object
        let grounded = "moka pot, silver, eight-sided jug with a narrow waist, aluminium, small, brews coffee on a stove";
        assert!(vlm.matches(grounded, moka.0, moka.1).unwrap());
        assert!(!vlm.matches(grounded, kettle.0, kettle.1).unwrap());
        // another thing's look is not this one's
        let pink = "stanley cup, pastel pink, tall tapered tumbler, stainless steel, large, keeps a drink cold";
        assert!(!vlm.matches(pink, moka.0, moka.1).unwrap());
        // the known rest of a question still counts ("my Stanley cup" has none)
        assert!(
            !vlm.matches("my Stanley cup", "cup_left", "a blue plastic cup")
                .unwrap()
        );
        assert!(vlm.matches("the pot", moka.0, moka.1).unwrap());
        // questions without unknown names are judged as before
        assert!(vlm.matches("kettle", kettle.0, kettle.1).unwrap());
        assert!(!vlm.matches("kettle", moka.0, moka.1).unwrap());
        // a model that knows every name reads the simulator's name as before
        let knows_all = retrieval_vlm_not_knowing(&[]);
        assert!(knows_all.matches("the moka pot", moka.0, moka.1).unwrap());
    }

    #[test]
    fn an_indefinite_head_leaves_the_question_to_its_description() {
        let vlm = retrieval_vlm_not_knowing(&[]);
        let tomato = ("tomato", "a red tomato");
        let apple = ("apple_a", "a green apple");
        assert!(vlm.matches("something red", tomato.0, tomato.1).unwrap());
        assert!(!vlm.matches("something red", apple.0, apple.1).unwrap());
        assert!(vlm.matches("a green thing", apple.0, apple.1).unwrap());
        assert!(!vlm.matches("anything green", tomato.0, tomato.1).unwrap());
    }

    #[test]
    fn kinds_and_uses_come_from_the_lexicon_not_from_lists() {
        let dir = tempfile::tempdir().unwrap();
        let lexicon = Some(Arc::new(crate::lexicon::fixture::tiny(dir.path())));
        let knows = retrieval_vlm_not_knowing(&[]).with_lexicon(lexicon);
        let blind = retrieval_vlm_not_knowing(&[]).with_lexicon(None);
        let apple = ("apple_a", "a green apple");
        let cup = ("cup_left", "a yellow plastic cup");
        let ball = ("small_ball", "a small red rubber ball");
        assert!(knows.matches("a fruit", apple.0, apple.1).unwrap());
        assert!(knows.matches("green fruit", apple.0, apple.1).unwrap());
        assert!(!knows.matches("red fruit", apple.0, apple.1).unwrap());
        assert!(!knows.matches("a fruit", ball.0, ball.1).unwrap());
        assert!(
            knows
                .matches("something to drink from", cup.0, cup.1)
                .unwrap()
        );
        assert!(
            !knows
                .matches("something to drink from", ball.0, ball.1)
                .unwrap()
        );
        // without the lexicon: words only
        assert!(!blind.matches("a fruit", apple.0, apple.1).unwrap());
        assert!(
            !blind
                .matches("something to drink from", cup.0, cup.1)
                .unwrap()
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

    /// A 40×30 view: a cabinet (fixed, 500 px, with a drawer handle), a mug (200 px)
    /// and an apple too small to report (16 px).
    fn room() -> GroundTruth {
        use asp_core::models::{GtInstance, GtPart};
        let (w, h) = (40u32, 30u32);
        let mut inst = vec![0u32; (w * h) as usize];
        let mut part = vec![0u32; (w * h) as usize];
        let fill = |l: &mut Vec<u32>, id: u32, x0: u32, y0: u32, x1: u32, y1: u32| {
            for y in y0..y1 {
                for x in x0..x1 {
                    l[(y * w + x) as usize] = id;
                }
            }
        };
        fill(&mut inst, 2, 15, 2, 35, 27); // cabinet 20×25
        fill(&mut inst, 1, 2, 3, 12, 23); // mug 10×20
        fill(&mut inst, 3, 36, 26, 40, 30); // apple 4×4
        fill(&mut part, 1, 20, 10, 24, 12); // the cabinet's drawer handle
        let instance = |id: u32, name: &str, description: &str, fixed: bool| {
            (
                id,
                GtInstance {
                    id,
                    name: name.into(),
                    description: description.into(),
                    fixed,
                },
            )
        };
        GroundTruth {
            instance_ids: LabelImage::from_vec(w, h, inst).unwrap(),
            part_ids: LabelImage::from_vec(w, h, part).unwrap(),
            instances: [
                instance(1, "mug", "a red ceramic mug", false),
                instance(2, "cabinet", "The white wooden cabinet", true),
                instance(3, "apple", "an apple", false),
            ]
            .into(),
            parts: [(
                1,
                GtPart {
                    id: 1,
                    instance: 2,
                    name: "drawer handle".into(),
                    skills: vec![asp_core::Skill::HookPull],
                    presses: 0,
                },
            )]
            .into(),
        }
    }

    fn view(gt: Option<GroundTruth>) -> Observation {
        Observation {
            rgb: asp_core::RgbImage::filled(40, 30, [90, 90, 90]),
            depth: None,
            ground_truth: gt,
        }
    }

    #[tokio::test]
    async fn memory_vlm_without_errors_reports_every_large_instance_exactly() {
        let vlm = SimulatedMemoryVlm::new(SimulatedMemoryParams::noiseless(4));
        let d = vlm.describe_view(&view(Some(room()))).await.unwrap();
        assert_eq!(
            d.description,
            "a view of white wooden cabinet and red ceramic mug"
        );
        let got: Vec<(&str, Box2)> = d
            .objects
            .iter()
            .map(|o| (o.description.as_str(), o.bbox))
            .collect();
        assert_eq!(
            got,
            vec![
                ("white wooden cabinet", Box2::new(15.0, 2.0, 35.0, 27.0)),
                ("red ceramic mug", Box2::new(2.0, 3.0, 12.0, 23.0)),
            ]
        );
        let affordances = |i: usize| {
            d.objects[i]
                .affordances
                .iter()
                .map(|a| (a.affordance, a.score))
                .collect::<Vec<_>>()
        };
        assert_eq!(
            affordances(0),
            vec![
                (ViewAffordance::Place, 0.75),
                (ViewAffordance::Open, 0.8),
                (ViewAffordance::Close, 0.7)
            ]
        );
        assert_eq!(affordances(1), vec![(ViewAffordance::Pick, 0.85)]);
        // the apple counts once the threshold allows it
        let low = SimulatedMemoryVlm::new(SimulatedMemoryParams {
            min_pixels: 16,
            ..SimulatedMemoryParams::noiseless(4)
        });
        let d = low.describe(&room());
        assert_eq!(d.objects.len(), 3);
        assert_eq!(d.objects[2].description, "apple");
        assert_eq!(
            d.description,
            "a view of white wooden cabinet, red ceramic mug and apple"
        );
    }

    #[tokio::test]
    async fn memory_vlm_is_deterministic_per_image_and_needs_ground_truth() {
        let vlm = SimulatedMemoryVlm::new(SimulatedMemoryParams::default());
        let first = vlm.describe_view(&view(Some(room()))).await.unwrap();
        let again = SimulatedMemoryVlm::new(SimulatedMemoryParams::default())
            .describe_view(&view(Some(room())))
            .await
            .unwrap();
        assert_eq!(first, again, "the same image gives the same answer");
        // the errors are there: over seeds, boxes move, scores vary, words and objects go
        let exact = SimulatedMemoryVlm::new(SimulatedMemoryParams::noiseless(0)).describe(&room());
        let (mut moved, mut bare, mut missed, mut scores) = (0, 0, 0, BTreeSet::new());
        for seed in 0..64 {
            let d = SimulatedMemoryVlm::new(SimulatedMemoryParams {
                seed,
                ..SimulatedMemoryParams::default()
            })
            .describe(&room());
            missed += usize::from(d.objects.len() < exact.objects.len());
            for o in &d.objects {
                let truth = exact
                    .objects
                    .iter()
                    .find(|e| e.description.ends_with(&o.description))
                    .expect("a known object");
                moved += usize::from(o.bbox != truth.bbox);
                bare += usize::from(o.description != truth.description);
                assert!(o.bbox.iou(&truth.bbox) > 0.5, "{o:?}");
                for a in &o.affordances {
                    assert!((0.0..=1.0).contains(&a.score));
                    scores.insert(a.score.to_bits());
                }
            }
        }
        assert!(moved > 32 && bare > 0 && missed > 0 && scores.len() > 32);
        assert!(matches!(
            vlm.describe_view(&view(None)).await,
            Err(ModelError::MissingGroundTruth { .. })
        ));
    }
}
