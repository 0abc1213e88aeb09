//! Simulated affordance VLM and promptable segmenter for the embedded simulator. They read
//! the simulator's ground truth ([`GroundTruth`] in the [`Observation`]) and make the
//! mistakes real models make, at configured rates, so the commit gate and the targeted
//! retries are exercised against realistic failures. They refuse images without ground
//! truth: they are never a stand-in for a real camera.
//!
//! **Proposal rule** (`propose`): the action text is mapped to the skills that can
//! achieve it through a fixed verb table ([`skills_for_action`], e.g. "open" → hook_pull,
//! grasp_part, open; "press"/"ring"/"turn on" → tip_push; "unplug"/"pull out" →
//! pinch_pull; "pick up" → grasp_part, grasp). The object meant is the instance in view
//! with a part affording one of these skills whose name and part names share the most
//! words with the action (then the one covering most of the views; a crop of a mug on a
//! table shows more table than mug, but a VLM asked to grasp the mug handle looks at the
//! mug); without one, the instance covering most of the views. Among its parts, those
//! affording one of these skills are
//! proposed with the first such skill, ranked by how many words of the part's name occur
//! in the action text (then by part id). When the action names some of them more than
//! others ("press the i key" among the keys, "open the top drawer"), only the most named
//! are proposed: another key is no alternative to the one asked for. This is the
//! semantic match a VLM makes, and no more: when the action names no part over another,
//! every part whose skill fits is proposed.
//!
//! **Localisation** (`locate_part`): the part whose name shares the most words with the
//! query (a query may carry keywords, "handle (curved, loop)"); its ground-truth box,
//! with per-edge Gaussian jitter, and one of these errors at the configured rates: a
//! miss, a box on another part or region of the object, a box shifted by 0.4–0.8 of its
//! size, or the right box with a low confidence.
//!
//! **Segmentation** (`segment_prompt`): the ground-truth region the prompt selects — for
//! a box, the part or instance whose bounding box best matches it (IoU ≥ 0.3, else the
//! filled box); for a point, the part under it (else the instance, else the background);
//! for box and point, the best-matching region under the point — with the whole instance
//! instead of the part at `ambiguity_rate`, and `boundary_noise` of the boundary flipped.
//!
//! Every draw comes from a ChaCha8 generator seeded by the configured seed and a hash of
//! the call's input (ground-truth content, prompt, query), so the same input always gives
//! the same answer and a changed input (a zoomed crop, a refined ROI) a fresh one.

use std::collections::{BTreeMap, BTreeSet};

use asp_config::sections::affordance::SimulatedModelsConfig;
use asp_core::models::{
    AffordanceProposal, AffordanceVlm, GroundTruth, ModelError, Observation, PartLocation, Prompt,
    PromptableSegmenter, Segment,
};
use asp_core::{Box2, Mask, PixelRect, Skill};
use async_trait::async_trait;
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rand_distr::{Distribution, Normal};

/// FNV-1a, 64 bit: a stable hash for seeding draws from call inputs.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fnv(u64);

impl Fnv {
    pub(crate) fn new(seed: u64) -> Self {
        let mut h = Fnv(0xcbf2_9ce4_8422_2325);
        h.bytes(&seed.to_le_bytes());
        h
    }
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 ^= u64::from(x);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    pub(crate) fn u32s(&mut self, v: &[u32]) {
        for x in v {
            self.bytes(&x.to_le_bytes());
        }
    }
    pub(crate) fn f32s(&mut self, v: &[f32]) {
        for x in v {
            self.bytes(&x.to_bits().to_le_bytes());
        }
    }
    pub(crate) fn finish(self) -> u64 {
        self.0
    }
}

fn hash_gt(h: &mut Fnv, gt: &GroundTruth) {
    h.u32s(&[gt.part_ids.width(), gt.part_ids.height()]);
    h.u32s(gt.part_ids.pixels());
    h.u32s(gt.instance_ids.pixels());
}

fn gt_of<'a>(model: &str, obs: &'a Observation) -> Result<&'a GroundTruth, ModelError> {
    obs.ground_truth
        .as_ref()
        .ok_or_else(|| ModelError::MissingGroundTruth {
            model: model.into(),
        })
}

/// The words of `s`, lower case, without stop words; a token made only of symbols
/// ("#", "*" on a phone keypad) is a word of its own.
fn words(s: &str) -> BTreeSet<String> {
    s.split_whitespace()
        .flat_map(|t| {
            if t.chars().any(char::is_alphanumeric) {
                t.split(|c: char| !c.is_alphanumeric())
                    .filter(|w| !w.is_empty())
                    .map(str::to_lowercase)
                    .collect::<Vec<_>>()
            } else {
                vec![t.to_owned()]
            }
        })
        .filter(|w| {
            !matches!(
                w.as_str(),
                "the" | "a" | "an" | "of" | "its" | "by" | "on" | "to" | "from" | "in"
            )
        })
        .collect()
}

/// The skills that can achieve an action, from its verbs (the sim VLM's proposal rule).
pub fn skills_for_action(action: &str) -> Vec<Skill> {
    let text = format!(" {} ", action.to_lowercase());
    let has = |p: &str| text.contains(&format!(" {p} "));
    let mut skills = Vec::new();
    let mut add = |s: &[Skill]| {
        for k in s {
            if !skills.contains(k) {
                skills.push(*k);
            }
        }
    };
    // "pull the plug out of the socket" says pull-out as well as "pull out the plug"
    let pull_out = has("pull out") || (has("pull") && text.contains(" out of "));
    if has("unplug") || pull_out || has("pluck") || has("remove") || has("unpin") {
        add(&[Skill::PinchPull]);
    }
    if has("press")
        || has("push")
        || has("ring")
        || has("turn on")
        || has("turn off")
        || has("switch on")
        || has("switch off")
        || has("dial")
        || has("type")
    {
        add(&[Skill::TipPush]);
    }
    if has("open") || has("close") || has("pull") || has("slide") {
        add(&[Skill::HookPull, Skill::GraspPart, Skill::Open, Skill::Close]);
    }
    if has("pick up")
        || has("grasp")
        || has("grab")
        || has("lift")
        || has("hold")
        || has("take")
        || has("carry")
    {
        add(&[Skill::GraspPart, Skill::Grasp]);
    }
    skills
}

fn label_bbox(labels: &asp_core::LabelImage, id: u32) -> Option<PixelRect> {
    Mask::from_label(labels, id).bounding_rect()
}

/// The instance covering the most pixels in these views (the object the crops show).
fn dominant_instance(views: &[&GroundTruth]) -> Option<u32> {
    let mut count: BTreeMap<u32, u64> = BTreeMap::new();
    for gt in views {
        for &i in gt.instance_ids.pixels() {
            if i != 0 {
                *count.entry(i).or_default() += 1;
            }
        }
    }
    count
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

/// The object the action is about: among the instances with a visible part that
/// affords one of `wanted`, the one whose name and part names share the most words with
/// the action, then the one covering the most pixels; without such an instance, the
/// instance covering the most pixels.
fn target_instance(
    views: &[&GroundTruth],
    wanted: &[Skill],
    action_words: &BTreeSet<String>,
) -> Option<u32> {
    // instance -> (best word overlap, pixels)
    let mut score: BTreeMap<u32, (usize, u64)> = BTreeMap::new();
    for gt in views {
        let visible: BTreeSet<u32> = gt.part_ids.pixels().iter().copied().collect();
        for p in gt.parts.values().filter(|p| visible.contains(&p.id)) {
            if !p.skills.iter().any(|s| wanted.contains(s)) {
                continue;
            }
            let mut names = words(&p.name);
            if let Some(i) = gt.instances.get(&p.instance) {
                names.extend(words(&i.name.replace('_', " ")));
            }
            let overlap = names.intersection(action_words).count();
            let e = score.entry(p.instance).or_default();
            e.0 = e.0.max(overlap);
        }
    }
    if score.is_empty() {
        return dominant_instance(views);
    }
    for gt in views {
        for &i in gt.instance_ids.pixels() {
            if let Some(e) = score.get_mut(&i) {
                e.1 += 1;
            }
        }
    }
    score
        .into_iter()
        .max_by(|a, b| a.1.cmp(&b.1).then(b.0.cmp(&a.0)))
        .map(|(i, _)| i)
}

/// Simulated VLM for affordance detection; see the module notes.
#[derive(Debug, Clone)]
pub struct SimulatedAffordanceVlm {
    cfg: SimulatedModelsConfig,
}

impl SimulatedAffordanceVlm {
    pub const NAME: &'static str = "simulated affordance VLM";

    pub fn new(cfg: SimulatedModelsConfig) -> Self {
        Self { cfg }
    }

    fn rng(&self, salt: &str, gt: &GroundTruth, extra: &[f32]) -> ChaCha8Rng {
        let mut h = Fnv::new(self.cfg.seed);
        h.bytes(salt.as_bytes());
        hash_gt(&mut h, gt);
        h.f32s(extra);
        ChaCha8Rng::seed_from_u64(h.finish())
    }

    /// The part the query means: most shared words with the part's name (ties: lower id).
    fn match_part(gt: &GroundTruth, query: &str) -> Option<u32> {
        let q = words(query);
        gt.parts
            .values()
            .map(|p| (words(&p.name).intersection(&q).count(), p.id))
            .filter(|(n, _)| *n > 0)
            .max_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)))
            .map(|(_, id)| id)
    }
}

/// A VLM's slip on `right`: the same part with a skill it affords that does not do the
/// action (an `open` for a close), else another visible part of the object with the
/// right skill; `None` when the object offers neither.
fn wrong_pair(
    gts: &[&GroundTruth],
    instance: u32,
    right: &AffordanceProposal,
    wanted: &[Skill],
) -> Option<AffordanceProposal> {
    let parts = || {
        gts.iter()
            .flat_map(|g| g.parts.values())
            .filter(|p| p.instance == instance)
    };
    let skill = parts()
        .filter(|p| p.name == right.part)
        .flat_map(|p| p.skills.iter())
        .find(|s| !wanted.contains(s));
    if let Some(skill) = skill {
        return Some(AffordanceProposal {
            skill: *skill,
            part: right.part.clone(),
        });
    }
    parts()
        .find(|p| p.name != right.part)
        .map(|p| AffordanceProposal {
            skill: right.skill,
            part: p.name.clone(),
        })
}

#[async_trait]
impl AffordanceVlm for SimulatedAffordanceVlm {
    async fn propose(
        &self,
        action: &str,
        views: &[Observation],
    ) -> Result<Vec<AffordanceProposal>, ModelError> {
        let gts: Vec<&GroundTruth> = views
            .iter()
            .map(|v| gt_of(Self::NAME, v))
            .collect::<Result<_, _>>()?;
        let wanted = skills_for_action(action);
        let action_words = words(action);
        let Some(instance) = target_instance(&gts, &wanted, &action_words) else {
            return Ok(Vec::new());
        };
        let mut parts: BTreeMap<u32, (usize, AffordanceProposal)> = BTreeMap::new();
        for gt in &gts {
            let visible: BTreeSet<u32> = gt.part_ids.pixels().iter().copied().collect();
            for p in gt
                .parts
                .values()
                .filter(|p| p.instance == instance && visible.contains(&p.id))
            {
                if let Some(skill) = p.skills.iter().find(|s| wanted.contains(s)) {
                    let overlap = words(&p.name).intersection(&action_words).count();
                    parts.insert(
                        p.id,
                        (
                            overlap,
                            AffordanceProposal {
                                skill: *skill,
                                part: p.name.clone(),
                            },
                        ),
                    );
                }
            }
        }
        let mut ranked: Vec<(u32, usize, AffordanceProposal)> =
            parts.into_iter().map(|(id, (o, p))| (id, o, p)).collect();
        ranked.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        // the action names some parts more than others ("the i key" among the keys, "the
        // top drawer"): those are what it means, the others are no alternative
        let most = ranked.first().map_or(0, |r| r.1);
        if ranked.iter().any(|r| r.1 < most) {
            ranked.retain(|r| r.1 == most);
        }
        let mut out: Vec<AffordanceProposal> = ranked.into_iter().map(|(_, _, p)| p).collect();
        if let Some(first) = out.first().cloned()
            && self.cfg.wrong_proposal_rate > 0.0
        {
            let mut h = Fnv::new(self.cfg.seed);
            h.bytes(b"propose");
            h.bytes(action.as_bytes());
            for gt in &gts {
                hash_gt(&mut h, gt);
            }
            let mut rng = ChaCha8Rng::seed_from_u64(h.finish());
            if rng.random::<f64>() < self.cfg.wrong_proposal_rate
                && let Some(wrong) = wrong_pair(&gts, instance, &first, &wanted)
            {
                out.insert(0, wrong);
            }
        }
        Ok(out)
    }

    async fn locate_part(
        &self,
        part: &str,
        view: &Observation,
    ) -> Result<Option<PartLocation>, ModelError> {
        let gt = gt_of(Self::NAME, view)?;
        let Some(id) = Self::match_part(gt, part) else {
            return Ok(None);
        };
        let Some(rect) = label_bbox(&gt.part_ids, id) else {
            return Ok(None);
        };
        let c = &self.cfg;
        let mut rng = self.rng(part, gt, &[]);
        let (w, h) = (view.width() as f32, view.height() as f32);
        let truth = rect.to_box();
        let (bw, bh) = (truth.width(), truth.height());
        let jitter = |rng: &mut ChaCha8Rng, b: Box2| {
            let sx = (c.box_jitter as f32 * bw).max(1e-6);
            let sy = (c.box_jitter as f32 * bh).max(1e-6);
            let nx = Normal::new(0.0f32, sx)
                .map(|d| d.sample(rng))
                .unwrap_or(0.0);
            let nx1 = Normal::new(0.0f32, sx)
                .map(|d| d.sample(rng))
                .unwrap_or(0.0);
            let ny = Normal::new(0.0f32, sy)
                .map(|d| d.sample(rng))
                .unwrap_or(0.0);
            let ny1 = Normal::new(0.0f32, sy)
                .map(|d| d.sample(rng))
                .unwrap_or(0.0);
            Box2::new(b.x0 + nx, b.y0 + ny, b.x1 + nx1, b.y1 + ny1)
        };
        let u: f64 = rng.random();
        let (mut bbox, confidence) = if u < c.miss_rate {
            return Ok(None);
        } else if u < c.miss_rate + c.wrong_part_rate {
            (
                self.wrong_region(gt, id, &truth, &mut rng),
                rng.random_range(0.35f32..0.85),
            )
        } else if u < c.miss_rate + c.wrong_part_rate + c.gross_shift_rate {
            let mag = rng.random_range(0.4f32..0.8);
            let angle = rng.random_range(0.0f32..std::f32::consts::TAU);
            (
                truth.translated(mag * bw * angle.cos(), mag * bh * angle.sin()),
                rng.random_range(0.35f32..0.85),
            )
        } else if u < c.miss_rate + c.wrong_part_rate + c.gross_shift_rate + c.low_confidence_rate {
            (truth, rng.random_range(0.2f32..0.45))
        } else {
            (truth, rng.random_range(0.6f32..0.95))
        };
        bbox = jitter(&mut rng, bbox);
        let bbox = Box2::new(
            bbox.x0.max(0.0),
            bbox.y0.max(0.0),
            bbox.x1.min(w),
            bbox.y1.min(h),
        );
        if bbox.is_empty() {
            return Ok(None);
        }
        Ok(Some(PartLocation { bbox, confidence }))
    }
}

impl SimulatedAffordanceVlm {
    /// Another part of the same instance when one is visible, else a part-sized window
    /// elsewhere on the instance.
    fn wrong_region(&self, gt: &GroundTruth, id: u32, truth: &Box2, rng: &mut ChaCha8Rng) -> Box2 {
        let instance = gt.parts.get(&id).map(|p| p.instance);
        let others: Vec<u32> = gt
            .parts
            .values()
            .filter(|p| p.id != id && Some(p.instance) == instance)
            .filter_map(|p| label_bbox(&gt.part_ids, p.id).map(|_| p.id))
            .collect();
        if !others.is_empty() {
            let pick = others[rng.random_range(0..others.len())];
            if let Some(r) = label_bbox(&gt.part_ids, pick) {
                return r.to_box();
            }
        }
        let area = instance
            .and_then(|i| label_bbox(&gt.instance_ids, i))
            .map_or(
                PixelRect {
                    x0: 0,
                    y0: 0,
                    x1: gt.part_ids.width(),
                    y1: gt.part_ids.height(),
                },
                |r| r,
            );
        let (bw, bh) = (truth.width(), truth.height());
        // the window farthest from the part among a few random tries
        let mut best = *truth;
        let mut best_iou = f32::INFINITY;
        for _ in 0..8 {
            let x =
                rng.random_range(area.x0 as f32..(area.x1 as f32 - bw).max(area.x0 as f32 + 1.0));
            let y =
                rng.random_range(area.y0 as f32..(area.y1 as f32 - bh).max(area.y0 as f32 + 1.0));
            let cand = Box2::new(x, y, x + bw, y + bh);
            let iou = cand.iou(truth);
            if iou < best_iou {
                best_iou = iou;
                best = cand;
            }
        }
        best
    }
}

/// Simulated promptable segmenter; see the module notes.
#[derive(Debug, Clone)]
pub struct SimulatedSegmenter {
    cfg: SimulatedModelsConfig,
}

/// A candidate region of the ground truth.
struct Candidate {
    mask: Mask,
    rect: PixelRect,
    /// The instance a part belongs to (`None` for instances themselves).
    parent: Option<u32>,
    is_part: bool,
}

impl SimulatedSegmenter {
    pub const NAME: &'static str = "simulated promptable segmenter";

    pub fn new(cfg: SimulatedModelsConfig) -> Self {
        Self { cfg }
    }

    fn candidates(gt: &GroundTruth) -> Vec<Candidate> {
        let mut out = Vec::new();
        for p in gt.parts.values() {
            let m = gt.part_mask(p.id);
            if let Some(rect) = m.bounding_rect() {
                out.push(Candidate {
                    mask: m,
                    rect,
                    parent: Some(p.instance),
                    is_part: true,
                });
            }
        }
        for i in gt.instances.values() {
            let m = gt.instance_mask(i.id);
            if let Some(rect) = m.bounding_rect() {
                out.push(Candidate {
                    mask: m,
                    rect,
                    parent: None,
                    is_part: false,
                });
            }
        }
        out
    }

    fn instance_of(gt: &GroundTruth, instance: u32) -> Option<Mask> {
        let m = gt.instance_mask(instance);
        (!m.is_empty()).then_some(m)
    }

    fn noisy(&self, mask: &Mask, rng: &mut ChaCha8Rng) -> Mask {
        let p = self.cfg.boundary_noise;
        if p <= 0.0 {
            return mask.clone();
        }
        let mut out = mask.clone();
        let (w, h) = (mask.width(), mask.height());
        for y in 0..h {
            for x in 0..w {
                let v = mask.get(x, y);
                let differs = [(-1i64, 0i64), (1, 0), (0, -1), (0, 1)]
                    .iter()
                    .any(|(dx, dy)| {
                        let (nx, ny) = (x as i64 + dx, y as i64 + dy);
                        nx >= 0
                            && ny >= 0
                            && nx < w as i64
                            && ny < h as i64
                            && mask.get(nx as u32, ny as u32) != v
                    });
                if differs && rng.random_bool(p) {
                    out.set(x, y, !v);
                }
            }
        }
        out
    }
}

/// The region whose bounding box best matches the prompt box (IoU ≥ 0.3; parts win ties).
fn by_box<'a>(
    bbox: &Box2,
    w: u32,
    h: u32,
    pool: impl Iterator<Item = &'a Candidate>,
) -> Option<&'a Candidate> {
    let r = bbox.to_pixel_rect(w, h);
    pool.map(|c| (rect_iou(&c.rect, &r), c))
        .filter(|(s, _)| *s >= 0.3)
        .max_by(|a, b| a.0.total_cmp(&b.0).then(a.1.is_part.cmp(&b.1.is_part)))
        .map(|(_, c)| c)
}

fn rect_iou(a: &PixelRect, b: &PixelRect) -> f32 {
    let w = a.x1.min(b.x1).saturating_sub(a.x0.max(b.x0));
    let h = a.y1.min(b.y1).saturating_sub(a.y0.max(b.y0));
    let inter = u64::from(w) * u64::from(h);
    let union = a.area() + b.area() - inter;
    if union == 0 {
        0.0
    } else {
        inter as f32 / union as f32
    }
}

impl PromptableSegmenter for SimulatedSegmenter {
    fn segment_prompt(&self, image: &Observation, prompt: &Prompt) -> Result<Segment, ModelError> {
        let gt = gt_of(Self::NAME, image)?;
        let (w, h) = (image.width(), image.height());
        let mut hsh = Fnv::new(self.cfg.seed ^ 0x5e65_6d65_6e74);
        hash_gt(&mut hsh, gt);
        match prompt {
            Prompt::Box { bbox } => hsh.f32s(&[0.0, bbox.x0, bbox.y0, bbox.x1, bbox.y1]),
            Prompt::Point { x, y } => hsh.f32s(&[1.0, *x, *y]),
            Prompt::BoxAndPoint { bbox, x, y } => {
                hsh.f32s(&[2.0, bbox.x0, bbox.y0, bbox.x1, bbox.y1, *x, *y])
            }
        }
        let mut rng = ChaCha8Rng::seed_from_u64(hsh.finish());
        let cands = Self::candidates(gt);
        let point_in =
            |c: &Candidate, x: f32, y: f32| x >= 0.0 && y >= 0.0 && c.mask.get(x as u32, y as u32);
        let chosen: Option<&Candidate> = match prompt {
            Prompt::Box { bbox } => by_box(bbox, w, h, cands.iter()),
            Prompt::Point { x, y } => cands
                .iter()
                .filter(|c| point_in(c, *x, *y))
                .max_by_key(|c| c.is_part),
            Prompt::BoxAndPoint { bbox, x, y } => {
                by_box(bbox, w, h, cands.iter().filter(|c| point_in(c, *x, *y)))
                    .or_else(|| by_box(bbox, w, h, cands.iter()))
            }
        };
        let Some(c) = chosen else {
            return Ok(match prompt {
                Prompt::Box { bbox } | Prompt::BoxAndPoint { bbox, .. } => Segment {
                    mask: Mask::fill_box(w, h, bbox),
                    score: 0.3,
                },
                Prompt::Point { .. } => {
                    // the background region under the point
                    let bg = Mask::from_label(&gt.instance_ids, 0);
                    Segment {
                        mask: bg,
                        score: 0.2,
                    }
                }
            });
        };
        let mut mask = c.mask.clone();
        if c.is_part
            && rng.random_bool(self.cfg.ambiguity_rate)
            && let Some(whole) = c.parent.and_then(|i| Self::instance_of(gt, i))
        {
            mask = whole;
        }
        let mask = self.noisy(&mask, &mut rng);
        Ok(Segment {
            mask,
            score: rng.random_range(0.8f32..0.98),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::synthetic::{Category, SceneSpec, render_scene};

    fn clean() -> SimulatedModelsConfig {
        SimulatedModelsConfig {
            miss_rate: 0.0,
            wrong_part_rate: 0.0,
            gross_shift_rate: 0.0,
            low_confidence_rate: 0.0,
            box_jitter: 0.0,
            ambiguity_rate: 0.0,
            boundary_noise: 0.0,
            wrong_proposal_rate: 0.0,
            ..SimulatedModelsConfig::default()
        }
    }

    #[test]
    fn action_verbs_map_to_skills() {
        assert_eq!(
            skills_for_action("ring the desk bell"),
            vec![Skill::TipPush]
        );
        assert_eq!(
            skills_for_action("unplug the power adapter"),
            vec![Skill::PinchPull]
        );
        assert!(skills_for_action("open the drawer").contains(&Skill::HookPull));
        assert_eq!(
            skills_for_action("pick up the mug by its handle"),
            vec![Skill::GraspPart, Skill::Grasp]
        );
        assert!(skills_for_action("admire the view").is_empty());
        // pulling something out of its holder is a pinch-pull first
        assert_eq!(
            skills_for_action("pull the thumbtack out of the cork board")[0],
            Skill::PinchPull
        );
        assert!(!skills_for_action("pull the drawer open").contains(&Skill::PinchPull));
    }

    #[tokio::test]
    async fn clean_models_return_the_ground_truth() {
        let sample = render_scene(&SceneSpec::new(Category::Kettle, 3));
        let vlm = SimulatedAffordanceVlm::new(clean());
        let props = vlm
            .propose("turn on the kettle", std::slice::from_ref(&sample.view))
            .await
            .unwrap();
        assert_eq!(props[0].skill, Skill::TipPush);
        assert_eq!(props[0].part, "kettle button");
        // the handle affords grasping, not pushing
        assert!(props.iter().all(|p| p.part != "kettle handle"));
        let loc = vlm
            .locate_part(&props[0].part, &sample.view)
            .await
            .unwrap()
            .unwrap();
        let truth = sample.truth.bounding_rect().unwrap().to_box();
        assert!(loc.bbox.iou(&truth) > 0.99, "{:?} vs {truth:?}", loc.bbox);
        assert!(loc.confidence >= 0.6);
        let seg = SimulatedSegmenter::new(clean())
            .segment_prompt(&sample.view, &Prompt::Box { bbox: loc.bbox })
            .unwrap();
        assert_eq!(seg.mask, sample.truth);
        // a point on the part gives the part; a box over nothing gives the filled box
        let (x, y) = sample
            .truth
            .set_pixels()
            .next()
            .map(|(x, y)| (x as f32 + 0.5, y as f32 + 0.5))
            .unwrap();
        let p = SimulatedSegmenter::new(clean())
            .segment_prompt(&sample.view, &Prompt::Point { x, y })
            .unwrap();
        assert_eq!(p.mask, sample.truth);
        let nothing = Box2::new(0.0, 0.0, 2.0, 2.0);
        let f = SimulatedSegmenter::new(clean())
            .segment_prompt(&sample.view, &Prompt::Box { bbox: nothing })
            .unwrap();
        assert_eq!(f.mask.area(), 4);
    }

    /// A keyboard of three keys side by side (2×2 pixels each) on a 6×2 view.
    fn three_keys() -> Observation {
        use asp_core::models::{GtInstance, GtPart};
        use asp_core::{LabelImage, RgbImage};
        let part_ids =
            LabelImage::from_vec(6, 2, vec![1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3]).unwrap();
        let parts = ["key h", "key i", "key j"]
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let id = i as u32 + 1;
                let part = GtPart {
                    id,
                    instance: 1,
                    name: (*name).into(),
                    skills: vec![Skill::TipPush],
                    presses: 0,
                };
                (id, part)
            })
            .collect();
        let instance = GtInstance {
            id: 1,
            name: "keyboard".into(),
            description: "a keyboard".into(),
            fixed: false,
        };
        Observation {
            rgb: RgbImage::filled(6, 2, Default::default()),
            depth: None,
            ground_truth: Some(GroundTruth {
                instance_ids: LabelImage::filled(6, 2, 1),
                part_ids,
                instances: BTreeMap::from([(1, instance)]),
                parts,
            }),
        }
    }

    #[tokio::test]
    async fn a_wrong_proposal_comes_first_and_the_right_one_stays() {
        let always = SimulatedAffordanceVlm::new(SimulatedModelsConfig {
            wrong_proposal_rate: 1.0,
            ..clean()
        });
        // the keys afford only pushing: the slip is another key
        let view = [three_keys()];
        let p = always.propose("press the i key", &view).await.unwrap();
        assert_eq!(p.len(), 2, "{p:?}");
        assert_eq!((p[0].skill, p[0].part.as_str()), (Skill::TipPush, "key h"));
        assert_eq!(p[1].part, "key i");
        // the kettle's button affords pushing only: its slip is another part
        let sample = render_scene(&SceneSpec::new(Category::Kettle, 3));
        let views = std::slice::from_ref(&sample.view);
        let p = always.propose("turn on the kettle", views).await.unwrap();
        assert_ne!(p[0].part, "kettle button", "{p:?}");
        assert_eq!(p[1].part, "kettle button");
        // at rate 0.3 about a third of the calls slip, drawn per input
        let some = SimulatedAffordanceVlm::new(SimulatedModelsConfig {
            wrong_proposal_rate: 0.3,
            ..clean()
        });
        let mut slips = 0;
        for seed in 0..200 {
            let s = render_scene(&SceneSpec::new(Category::Kettle, seed));
            let p = some
                .propose("turn on the kettle", std::slice::from_ref(&s.view))
                .await
                .unwrap();
            slips += usize::from(p[0].part != "kettle button");
        }
        assert!(
            (40..80).contains(&slips),
            "{slips} slips of 200 at rate 0.3"
        );
    }

    #[tokio::test]
    async fn a_named_part_is_proposed_without_its_siblings() {
        let vlm = SimulatedAffordanceVlm::new(clean());
        let view = [three_keys()];
        let named = vlm.propose("press the i key", &view).await.unwrap();
        let parts: Vec<&str> = named.iter().map(|p| p.part.as_str()).collect();
        assert_eq!(parts, ["key i"], "another key is no alternative");
        // an action that names no key over another gets every key, in part order
        let any = vlm.propose("press the keys", &view).await.unwrap();
        let parts: Vec<&str> = any.iter().map(|p| p.part.as_str()).collect();
        assert_eq!(parts, ["key h", "key i", "key j"]);
    }

    #[tokio::test]
    async fn errors_follow_their_rates_and_inputs() {
        let vlm = SimulatedAffordanceVlm::new(SimulatedModelsConfig {
            miss_rate: 0.3,
            ..clean()
        });
        let mut misses = 0;
        for seed in 0..200 {
            let s = render_scene(&SceneSpec::new(Category::Mug, seed));
            if vlm
                .locate_part("mug handle", &s.view)
                .await
                .unwrap()
                .is_none()
            {
                misses += 1;
            }
        }
        assert!(
            (40..80).contains(&misses),
            "{misses} misses of 200 at rate 0.3"
        );
        // the same input gives the same answer
        let s = render_scene(&SceneSpec::new(Category::Mug, 1));
        let v = SimulatedAffordanceVlm::new(SimulatedModelsConfig::default());
        assert_eq!(
            v.locate_part("mug handle", &s.view).await.unwrap(),
            v.locate_part("mug handle", &s.view).await.unwrap()
        );
        // wrong part: the box lands away from the part
        let wrong = SimulatedAffordanceVlm::new(SimulatedModelsConfig {
            wrong_part_rate: 1.0,
            ..clean()
        });
        let loc = wrong
            .locate_part("mug handle", &s.view)
            .await
            .unwrap()
            .unwrap();
        assert!(loc.bbox.iou(&s.truth.bounding_rect().unwrap().to_box()) < 0.5);
        // ambiguity: the whole mug for a handle prompt
        let amb = SimulatedSegmenter::new(SimulatedModelsConfig {
            ambiguity_rate: 1.0,
            ..clean()
        });
        let b = s.truth.bounding_rect().unwrap().to_box();
        let seg = amb
            .segment_prompt(&s.view, &Prompt::Box { bbox: b })
            .unwrap();
        assert!(seg.mask.area() > 2 * s.truth.area());
    }

    #[tokio::test]
    async fn simulated_models_refuse_real_images() {
        let mut s = render_scene(&SceneSpec::new(Category::Mug, 1));
        s.view.ground_truth = None;
        let err = SimulatedAffordanceVlm::new(clean())
            .locate_part("handle", &s.view)
            .await
            .unwrap_err();
        assert!(matches!(err, ModelError::MissingGroundTruth { .. }));
        assert!(
            SimulatedSegmenter::new(clean())
                .segment_prompt(&s.view, &Prompt::Point { x: 1.0, y: 1.0 })
                .is_err()
        );
    }
}
