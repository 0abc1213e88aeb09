//! The three relative diagnostics of A-Harness (SPEC §2.5) computed from an evidence set:
//! cross-skill consistency ω, cross-scale stability ζ and sufficiency μ, and the score
//! `v = α·ω + β·ζ + γ·σ(μ)`.
//!
//! Conventions fixed here (SPEC leaves them open):
//! - Every record has a *region* in full-image pixels: a box fills its pixel rectangle,
//!   a mask is itself, a point is a point; text and image records stand for their ROI.
//!   Similarity of two regions is their IoU — of a box and a mask, the IoU of the box
//!   with the mask's bounding box: a box says where a thing is, not its shape, and a
//!   U-shaped drawer handle seen from above fills a third of its box, so the IoU of the
//!   filled box with the mask's pixels (SPEC's `IoU(fill(b), m)`) would call a perfect
//!   detection and segmentation inconsistent forever. Where a point is involved it is the
//!   normalised point distance `1 − min(1, d / diag)`, `d` the distance from the point to
//!   the other region (0 inside) and `diag` the diagonal of that region's bounding box
//!   (for two points, of the smaller ROI).
//! - ω pairs a box (or point) with a mask *in the same ROI*: at least
//!   `same_roi_coverage` of the box lies inside both records' ROIs. A box found on the
//!   full view and a mask re-segmented in a refined or zoomed ROI around it are in the
//!   same ROI; a box elsewhere is not. No pair → ω = 0.
//! - ζ averages `1 − similarity` over pairs of records of the same payload type and the
//!   same producer kind at different scales. With a single scale there is no pair and
//!   ζ = 1 (nothing unstable has been observed); this is what lets a clean single
//!   detection commit, which SPEC reports as the common case (500 of 600 samples).
//! - Sufficiency weights are modulated per record (`w_τ · ρ · φ · ψ`, ψ from the record's
//!   own cross-scale stability, 1 without a cross-scale partner) and renormalised over
//!   the records, so μ is the weighted share of the evidence that supports the current
//!   hypothesis `h`. `h` is the region with the largest weighted support; ties (notably
//!   when φ and ψ have zeroed every weight) go to the region more records corroborate
//!   (similarity ≥ `corroboration_iou`), then to masks over boxes over points, then to
//!   the more confident, then to the later record.
//! - κ(ξ, h) = ξ overlaps h (similarity ≥ `corroboration_iou`) ∧ some localiser with
//!   confidence ≥ `confident_localizer` agrees with h ∧ no unresolved conflict, i.e.
//!   more confident localisers agree with h than disagree.

use asp_config::sections::verifier::GateConfig;
use asp_core::{Box2, EvidencePayload, EvidenceRecord, EvidenceType, Mask, PixelRect, ProducerId};
use serde::{Deserialize, Serialize};

/// Producer ids the harness stamps on its records; the part before `/` is the kind.
pub mod producer {
    /// VLM `locate_part` on the full view.
    pub const DETECTOR: &str = "detector/vlm_box";
    /// VLM `locate_part` on a zoomed crop, projected back.
    pub const ZOOM_DETECTOR: &str = "detector/vlm_box_zoom";
    /// Box-prompted segmentation of a detection.
    pub const SEGMENTER: &str = "segmenter/box_prompt";
    /// Box-prompted segmentation inside a zoomed crop, projected back.
    pub const ZOOM_SEGMENTER: &str = "segmenter/box_prompt_zoom";
    /// Re-segmentation inside a refined ROI.
    pub const REFINED_SEGMENTER: &str = "segmenter/refined_roi";
    /// Interaction imagination from a common-sense prior.
    pub const IMAGINATION: &str = "imagination/prior";
    /// Re-detection with web-search keywords (VLA² §4.2).
    pub const WEB: &str = "web/keywords";
}

/// The producer families that sufficiency weights are given for (`w_seg`, `w_det`,
/// `w_dream`, `w_web`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProducerKind {
    Segmentation,
    Detection,
    Imagination,
    Web,
}

impl ProducerKind {
    /// The kind named by the id's prefix (`segmenter/…`, `detector/…`, `imagination/…`,
    /// `web/…`); `None` for anything else, which then carries no sufficiency weight.
    pub fn of(id: &ProducerId) -> Option<Self> {
        let prefix = id.0.split('/').next().unwrap_or("");
        match prefix {
            "segmenter" | "segmentation" => Some(Self::Segmentation),
            "detector" | "detection" => Some(Self::Detection),
            "imagination" => Some(Self::Imagination),
            "web" => Some(Self::Web),
            _ => None,
        }
    }

    /// Localisers say *where* (boxes, points); segmenters say *which pixels*.
    pub fn is_localizer(self) -> bool {
        self != Self::Segmentation
    }

    /// Initial weight `w_τ` from configuration.
    pub fn initial_weight(self, cfg: &GateConfig) -> f64 {
        match self {
            Self::Segmentation => cfg.weights.segmentation,
            Self::Detection => cfg.weights.detection,
            Self::Imagination => cfg.weights.imagination,
            Self::Web => cfg.weights.web,
        }
    }
}

/// A record's footprint in the full image.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Region<'a> {
    Mask(&'a Mask),
    Rect(PixelRect),
    Point(f32, f32),
    Empty,
}

pub(crate) fn region(rec: &EvidenceRecord, width: u32, height: u32) -> Region<'_> {
    let rect = |b: &Box2| {
        let r = b.to_pixel_rect(width, height);
        if r.area() == 0 {
            Region::Empty
        } else {
            Region::Rect(r)
        }
    };
    match &rec.payload {
        EvidencePayload::Box(b) => rect(b),
        EvidencePayload::Mask(m) => {
            if m.is_empty() {
                Region::Empty
            } else {
                Region::Mask(m)
            }
        }
        EvidencePayload::Point { x, y } => Region::Point(*x, *y),
        EvidencePayload::Text(_) | EvidencePayload::Image(_) => rect(&rec.roi),
    }
}

fn rect_intersection(a: &PixelRect, b: &PixelRect) -> u64 {
    let w = a.x1.min(b.x1).saturating_sub(a.x0.max(b.x0));
    let h = a.y1.min(b.y1).saturating_sub(a.y0.max(b.y0));
    u64::from(w) * u64::from(h)
}

fn ratio(inter: u64, union: u64) -> f64 {
    if union == 0 {
        0.0
    } else {
        inter as f64 / union as f64
    }
}

fn diag(r: &PixelRect) -> f64 {
    f64::from(r.width()).hypot(f64::from(r.height())).max(1.0)
}

fn point_rect_distance(x: f32, y: f32, r: &PixelRect) -> f64 {
    let dx = (r.x0 as f32 - x).max(0.0).max(x - r.x1 as f32);
    let dy = (r.y0 as f32 - y).max(0.0).max(y - r.y1 as f32);
    f64::from(dx.hypot(dy))
}

fn point_mask_similarity(x: f32, y: f32, m: &Mask) -> f64 {
    if x >= 0.0 && y >= 0.0 && m.get(x as u32, y as u32) {
        return 1.0;
    }
    let Some(bb) = m.bounding_rect() else {
        return 0.0;
    };
    let d = m
        .set_pixels()
        .map(|(px, py)| {
            let dx = f64::from(px) + 0.5 - f64::from(x);
            let dy = f64::from(py) + 0.5 - f64::from(y);
            dx.hypot(dy)
        })
        .fold(f64::INFINITY, f64::min);
    1.0 - (d / diag(&bb)).min(1.0)
}

/// Similarity in `[0, 1]` of two regions (IoU; normalised point distance for points).
/// `point_scale` normalises the distance between two points.
pub(crate) fn similarity(a: &Region<'_>, b: &Region<'_>, point_scale: f64) -> f64 {
    match (a, b) {
        (Region::Empty, _) | (_, Region::Empty) => 0.0,
        (Region::Mask(m), Region::Mask(n)) => m.iou(n).map(f64::from).unwrap_or(0.0),
        (Region::Mask(m), Region::Rect(r)) | (Region::Rect(r), Region::Mask(m)) => {
            // a box says where a thing is, not its shape: it agrees with a mask when it
            // matches the mask's extent
            match m.bounding_rect() {
                Some(mb) => {
                    let inter = rect_intersection(&mb, r);
                    ratio(inter, mb.area() + r.area() - inter)
                }
                None => 0.0,
            }
        }
        (Region::Rect(r), Region::Rect(s)) => {
            let inter = rect_intersection(r, s);
            ratio(inter, r.area() + s.area() - inter)
        }
        (Region::Point(x, y), Region::Mask(m)) | (Region::Mask(m), Region::Point(x, y)) => {
            point_mask_similarity(*x, *y, m)
        }
        (Region::Point(x, y), Region::Rect(r)) | (Region::Rect(r), Region::Point(x, y)) => {
            1.0 - (point_rect_distance(*x, *y, r) / diag(r)).min(1.0)
        }
        (Region::Point(x0, y0), Region::Point(x1, y1)) => {
            let d = f64::from((x1 - x0).hypot(y1 - y0));
            1.0 - (d / point_scale.max(1.0)).min(1.0)
        }
    }
}

/// Whether a box (or point) and a mask were produced looking at the same region: at least
/// `coverage` of the box lies inside both ROIs (a point must lie inside both).
fn same_roi(
    localiser: &EvidenceRecord,
    loc_region: &Region<'_>,
    mask: &EvidenceRecord,
    width: u32,
    height: u32,
    coverage: f64,
) -> bool {
    let ra = localiser.roi.to_pixel_rect(width, height);
    let rb = mask.roi.to_pixel_rect(width, height);
    let both = PixelRect {
        x0: ra.x0.max(rb.x0),
        y0: ra.y0.max(rb.y0),
        x1: ra.x1.min(rb.x1).max(ra.x0.max(rb.x0)),
        y1: ra.y1.min(rb.y1).max(ra.y0.max(rb.y0)),
    };
    match loc_region {
        Region::Rect(r) => {
            r.area() > 0 && rect_intersection(r, &both) as f64 >= coverage * r.area() as f64
        }
        Region::Point(x, y) => {
            *x >= both.x0 as f32
                && *x < both.x1 as f32
                && *y >= both.y0 as f32
                && *y < both.y1 as f32
        }
        _ => false,
    }
}

/// Logistic sigmoid σ.
pub fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

/// `v = α·ω + β·ζ + γ·σ(μ)`.
pub fn verifier_score(omega: f64, zeta: f64, mu: f64, cfg: &GateConfig) -> f64 {
    cfg.alpha * omega + cfg.beta * zeta + cfg.gamma * sigmoid(mu)
}

/// The diagnostics of one evidence set, with what they were computed from so that the
/// router, the final fusion and a report can explain them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Diagnostics {
    /// Cross-skill consistency ω ∈ [0, 1].
    pub omega: f64,
    /// Cross-scale stability ζ ∈ [0, 1].
    pub zeta: f64,
    /// Sufficiency μ ∈ [0, 1].
    pub mu: f64,
    /// `v = α·ω + β·ζ + γ·σ(μ)`.
    pub v: f64,
    /// Index of the record that is the current best hypothesis `h`.
    pub hypothesis: Option<usize>,
    /// The (localiser, mask) record indices that attain ω.
    pub omega_pair: Option<(usize, usize)>,
    /// Number of cross-scale pairs behind ζ.
    pub cross_scale_pairs: usize,
    /// Renormalised sufficiency weight of each record.
    pub weights: Vec<f64>,
    /// κ(ξ, h) of each record.
    pub supports: Vec<bool>,
    /// Whether h is corroborated by a confident localiser with no unresolved conflict.
    pub hypothesis_corroborated: bool,
}

impl Diagnostics {
    /// The compact form that travels in messages and memory.
    pub fn summary(&self) -> DiagnosticsSummary {
        DiagnosticsSummary {
            omega: self.omega,
            zeta: self.zeta,
            mu: self.mu,
            v: self.v,
        }
    }
}

/// ω, ζ, μ and v without their provenance.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct DiagnosticsSummary {
    pub omega: f64,
    pub zeta: f64,
    pub mu: f64,
    pub v: f64,
}

/// Computes ω, ζ, μ, v and the hypothesis of `records` on a `width × height` image.
pub fn diagnose(
    records: &[EvidenceRecord],
    width: u32,
    height: u32,
    cfg: &GateConfig,
) -> Diagnostics {
    let n = records.len();
    let regions: Vec<Region<'_>> = records.iter().map(|r| region(r, width, height)).collect();
    let roi_diag: Vec<f64> = records
        .iter()
        .map(|r| diag(&r.roi.to_pixel_rect(width, height)))
        .collect();
    let mut sim = vec![vec![0.0f64; n]; n];
    for i in 0..n {
        sim[i][i] = if matches!(regions[i], Region::Empty) {
            0.0
        } else {
            1.0
        };
        for j in i + 1..n {
            let s = similarity(&regions[i], &regions[j], roi_diag[i].min(roi_diag[j]));
            sim[i][j] = s;
            sim[j][i] = s;
        }
    }
    let kinds: Vec<Option<ProducerKind>> = records
        .iter()
        .map(|r| ProducerKind::of(&r.producer))
        .collect();
    let is_spatial = |i: usize| {
        matches!(
            records[i].evidence_type(),
            EvidenceType::Box | EvidenceType::Mask | EvidenceType::Point
        ) && !matches!(regions[i], Region::Empty)
    };

    // ω: best agreement of a localiser output with a mask in the same ROI
    let mut omega = 0.0;
    let mut omega_pair = None;
    for (i, ri) in records.iter().enumerate() {
        if !matches!(ri.evidence_type(), EvidenceType::Box | EvidenceType::Point) || !is_spatial(i)
        {
            continue;
        }
        for (j, rj) in records.iter().enumerate() {
            if rj.evidence_type() != EvidenceType::Mask || !is_spatial(j) {
                continue;
            }
            if same_roi(ri, &regions[i], rj, width, height, cfg.same_roi_coverage)
                && sim[i][j] > omega
            {
                omega = sim[i][j];
                omega_pair = Some((i, j));
            }
        }
    }

    // ζ: cross-scale agreement, overall and per record
    let mut pair_d = Vec::new();
    let mut per_record: Vec<Vec<f64>> = vec![Vec::new(); n];
    for i in 0..n {
        for j in i + 1..n {
            let same_kind = kinds[i].is_some() && kinds[i] == kinds[j];
            let same_type = records[i].evidence_type() == records[j].evidence_type();
            let cross_scale = (records[i].scale - records[j].scale).abs() > 1e-3;
            if same_kind && same_type && cross_scale && is_spatial(i) && is_spatial(j) {
                let d = 1.0 - sim[i][j];
                pair_d.push(d);
                per_record[i].push(d);
                per_record[j].push(d);
            }
        }
    }
    let mean = |v: &[f64]| {
        if v.is_empty() {
            0.0
        } else {
            v.iter().sum::<f64>() / v.len() as f64
        }
    };
    let zeta = 1.0 - mean(&pair_d);
    let zeta_of: Vec<f64> = per_record.iter().map(|d| 1.0 - mean(d)).collect();

    // sufficiency weights: w_τ · ρ · φ · ψ, renormalised over the records
    let mut weights: Vec<f64> = (0..n)
        .map(|i| {
            let Some(kind) = kinds[i] else { return 0.0 };
            let rho = f64::from(records[i].confidence).clamp(0.0, 1.0);
            let phi = (0..n).any(|j| j != i && sim[i][j] >= cfg.corroboration_iou);
            let psi = zeta_of[i] >= cfg.floors.zeta;
            kind.initial_weight(cfg) * rho * f64::from(u8::from(phi)) * f64::from(u8::from(psi))
        })
        .collect();
    let total: f64 = weights.iter().sum();
    if total > 0.0 {
        weights.iter_mut().for_each(|w| *w /= total);
    }

    // hypothesis: the spatial record with the largest weighted support
    let type_rank = |i: usize| -> u8 {
        match records[i].evidence_type() {
            EvidenceType::Mask => 2,
            EvidenceType::Box => 1,
            _ => 0,
        }
    };
    let mut hypothesis: Option<(usize, f64)> = None;
    let mut best_key: Option<(f64, usize, u8, f64, u32)> = None;
    for c in (0..n).filter(|&c| is_spatial(c)) {
        let agreeing: Vec<usize> = (0..n)
            .filter(|&i| i == c || sim[i][c] >= cfg.corroboration_iou)
            .collect();
        let support: f64 = agreeing.iter().map(|&i| weights[i]).sum();
        let key = (
            support,
            agreeing.len(),
            type_rank(c),
            f64::from(records[c].confidence),
            records[c].step,
        );
        let better = match &best_key {
            None => true,
            Some(b) => {
                if (key.0 - b.0).abs() > 1e-12 {
                    key.0 > b.0
                } else {
                    (key.1, key.2)
                        .cmp(&(b.1, b.2))
                        .then(key.3.total_cmp(&b.3))
                        .then(key.4.cmp(&b.4))
                        .is_gt()
                }
            }
        };
        if better {
            best_key = Some(key);
            hypothesis = Some((c, support));
        }
    }
    let hypothesis = hypothesis.map(|(h, _)| h);

    // κ and μ
    let (supports, corroborated) = match hypothesis {
        None => (vec![false; n], false),
        Some(h) => {
            let (mut agree, mut disagree) = (0usize, 0usize);
            for i in 0..n {
                let localiser = kinds[i].is_some_and(ProducerKind::is_localizer)
                    && matches!(
                        records[i].evidence_type(),
                        EvidenceType::Box | EvidenceType::Point
                    )
                    && is_spatial(i)
                    && f64::from(records[i].confidence) >= cfg.confident_localizer;
                if localiser {
                    if i == h || sim[i][h] >= cfg.corroboration_iou {
                        agree += 1;
                    } else {
                        disagree += 1;
                    }
                }
            }
            let ok = agree >= 1 && agree > disagree;
            let supports = (0..n)
                .map(|i| ok && (i == h || sim[i][h] >= cfg.corroboration_iou))
                .collect();
            (supports, ok)
        }
    };
    let mu = (0..n)
        .filter(|&i| supports[i])
        .map(|i| weights[i])
        .sum::<f64>()
        .clamp(0.0, 1.0);

    Diagnostics {
        omega,
        zeta,
        mu,
        v: verifier_score(omega, zeta, mu, cfg),
        hypothesis,
        omega_pair,
        cross_scale_pairs: pair_d.len(),
        weights,
        supports,
        hypothesis_corroborated: corroborated,
    }
}

/// Similarity of two records on a `width × height` image (IoU, or normalised point
/// distance), as the diagnostics see it.
pub fn record_similarity(a: &EvidenceRecord, b: &EvidenceRecord, width: u32, height: u32) -> f64 {
    let scale =
        diag(&a.roi.to_pixel_rect(width, height)).min(diag(&b.roi.to_pixel_rect(width, height)));
    similarity(&region(a, width, height), &region(b, width, height), scale)
}

/// The full-image mask of a record's region (boxes filled, points as one pixel, text and
/// images as their ROI).
pub fn record_mask(rec: &EvidenceRecord, width: u32, height: u32) -> Mask {
    match region(rec, width, height) {
        Region::Mask(m) => m.clone(),
        Region::Rect(r) => Mask::fill_box(width, height, &r.to_box()),
        Region::Point(x, y) => {
            let mut m = Mask::empty(width, height);
            if x >= 0.0 && y >= 0.0 {
                m.set(x as u32, y as u32, true);
            }
            m
        }
        Region::Empty => Mask::empty(width, height),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use approx::assert_relative_eq;
    use asp_core::Cost;

    pub(crate) fn rec(
        payload: EvidencePayload,
        producer: &str,
        roi: Box2,
        scale: f32,
        conf: f32,
        step: u32,
    ) -> EvidenceRecord {
        EvidenceRecord {
            payload,
            roi,
            scale,
            producer: producer.into(),
            cost: Cost::default(),
            step,
            confidence: conf,
        }
    }

    const W: u32 = 40;
    const H: u32 = 40;
    fn full() -> Box2 {
        Box2::new(0.0, 0.0, W as f32, H as f32)
    }
    fn bx(b: Box2, conf: f32) -> EvidenceRecord {
        rec(
            EvidencePayload::Box(b),
            producer::DETECTOR,
            full(),
            1.0,
            conf,
            0,
        )
    }
    fn mk(b: Box2, conf: f32) -> EvidenceRecord {
        rec(
            EvidencePayload::Mask(Mask::fill_box(W, H, &b)),
            producer::SEGMENTER,
            full(),
            1.0,
            conf,
            0,
        )
    }

    #[test]
    fn agreeing_box_and_mask_give_full_scores() {
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let cfg = GateConfig::default();
        let d = diagnose(&[bx(b, 0.9), mk(b, 0.9)], W, H, &cfg);
        assert_relative_eq!(d.omega, 1.0);
        assert_relative_eq!(d.zeta, 1.0, epsilon = 1e-12);
        assert_eq!(d.cross_scale_pairs, 0);
        assert_relative_eq!(d.mu, 1.0, epsilon = 1e-12);
        assert_eq!(
            d.hypothesis,
            Some(1),
            "the mask is preferred on equal support"
        );
        assert_relative_eq!(d.v, 0.5 + 0.3 + 0.2 * sigmoid(1.0), epsilon = 1e-12);
        assert!(d.supports.iter().all(|&s| s));
    }

    #[test]
    fn omega_is_iou_of_filled_box_and_mask_hand_computed() {
        // box 10×10 at (10,10); mask 10×10 shifted by 5 px: inter 50, union 150
        let cfg = GateConfig::default();
        let d = diagnose(
            &[
                bx(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9),
                mk(Box2::new(15.0, 10.0, 25.0, 20.0), 0.9),
            ],
            W,
            H,
            &cfg,
        );
        assert_relative_eq!(d.omega, 50.0 / 150.0, epsilon = 1e-12);
        assert_eq!(d.omega_pair, Some((0, 1)));
        // IoU 1/3 < 0.5: nothing is corroborated, every weight is zero, μ = 0
        assert_eq!(d.mu, 0.0);
    }

    #[test]
    fn a_thin_u_shaped_mask_agrees_with_the_box_of_its_extent() {
        // a handle seen from above: a 30×2 bar and two 2×10 standoffs in a 30×12 box;
        // the mask fills a third of its box
        let cfg = GateConfig::default();
        let mut m = Mask::empty(W, H);
        for x in 5..35 {
            for y in 10..12 {
                m.set(x, y, true);
            }
        }
        for y in 12..22 {
            for x in (5..7).chain(33..35) {
                m.set(x, y, true);
            }
        }
        let u = || {
            rec(
                EvidencePayload::Mask(m.clone()),
                producer::SEGMENTER,
                full(),
                1.0,
                0.9,
                0,
            )
        };
        let d = diagnose(
            &[bx(Box2::new(5.0, 10.0, 35.0, 22.0), 0.9), u()],
            W,
            H,
            &cfg,
        );
        assert_relative_eq!(d.omega, 1.0);
        // a box on another region does not agree with it: 5×12 of 30×12 + 10×12 − 5×12
        let d = diagnose(
            &[bx(Box2::new(30.0, 10.0, 40.0, 22.0), 0.9), u()],
            W,
            H,
            &cfg,
        );
        assert_relative_eq!(d.omega, 60.0 / 420.0, epsilon = 1e-12);
    }

    #[test]
    fn omega_ignores_pairs_outside_a_shared_roi() {
        let cfg = GateConfig::default();
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        // the mask was segmented in an ROI that does not contain the box
        let mut m = mk(b, 0.9);
        m.roi = Box2::new(25.0, 25.0, 40.0, 40.0);
        let d = diagnose(&[bx(b, 0.9), m], W, H, &cfg);
        assert_eq!(d.omega, 0.0);
        assert_eq!(d.omega_pair, None);
        // a refined ROI around the box does pair
        let mut m = mk(b, 0.9);
        m.roi = b.padded(3.0);
        let d = diagnose(&[bx(b, 0.9), m], W, H, &cfg);
        assert_relative_eq!(d.omega, 1.0);
    }

    #[test]
    fn point_outputs_use_normalised_distance() {
        let cfg = GateConfig::default();
        let m = mk(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9);
        let inside = rec(
            EvidencePayload::Point { x: 15.0, y: 15.0 },
            producer::IMAGINATION,
            full(),
            1.0,
            0.9,
            0,
        );
        assert_relative_eq!(diagnose(&[inside, m.clone()], W, H, &cfg).omega, 1.0);
        // 5 px right of the last pixel centre (19.5) of a box whose diagonal is √200
        let outside = rec(
            EvidencePayload::Point { x: 24.5, y: 15.5 },
            producer::IMAGINATION,
            full(),
            1.0,
            0.9,
            0,
        );
        let d = diagnose(&[outside, m], W, H, &cfg);
        assert_relative_eq!(d.omega, 1.0 - 5.0 / 200f64.sqrt(), epsilon = 1e-6);
    }

    #[test]
    fn zeta_averages_cross_scale_iou_distance() {
        let cfg = GateConfig::default();
        let a = bx(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9);
        let mut same_scale = bx(Box2::new(30.0, 30.0, 40.0, 40.0), 0.9);
        same_scale.step = 1;
        // same scale: not a cross-scale pair
        assert_eq!(
            diagnose(&[a.clone(), same_scale], W, H, &cfg).cross_scale_pairs,
            0
        );
        // zoomed box shifted by 5 px: IoU 1/3, d = 2/3
        let mut z1 = bx(Box2::new(15.0, 10.0, 25.0, 20.0), 0.9);
        z1.scale = 2.0;
        z1.producer = producer::ZOOM_DETECTOR.into();
        // an identical one at 4×: pairs (a,z1)=2/3, (a,z2)=0, (z1,z2)=2/3
        let mut z2 = a.clone();
        z2.scale = 4.0;
        let d = diagnose(&[a, z1, z2], W, H, &cfg);
        assert_eq!(d.cross_scale_pairs, 3);
        assert_relative_eq!(d.zeta, 1.0 - (4.0 / 3.0) / 3.0, epsilon = 1e-9);
        // a mask at another scale is a different type: no pair with boxes
    }

    #[test]
    fn sufficiency_weights_modulate_by_confidence_and_renormalise() {
        let cfg = GateConfig::default();
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let elsewhere = Box2::new(26.0, 26.0, 36.0, 36.0);
        // h = {box 0.9, mask 0.8}; a confident imagination box elsewhere is corroborated by
        // a low-confidence web box there
        let imag = rec(
            EvidencePayload::Box(elsewhere),
            producer::IMAGINATION,
            full(),
            1.0,
            0.6,
            1,
        );
        let web = rec(
            EvidencePayload::Box(elsewhere),
            producer::WEB,
            full(),
            1.0,
            0.4,
            2,
        );
        let recs = [bx(b, 0.9), mk(b, 0.8), imag, web];
        let d = diagnose(&recs, W, H, &cfg);
        let raw = [0.30 * 0.9, 0.35 * 0.8, 0.20 * 0.6, 0.15 * 0.4];
        let total: f64 = raw.iter().sum();
        for (w, r) in d.weights.iter().zip(raw) {
            assert_relative_eq!(*w, r / total, epsilon = 1e-6);
        }
        // h is the mask: support 0.27+0.28 > 0.12+0.06; confident localisers: det agrees,
        // imagination (0.6 ≥ 0.5) disagrees → 1 vs 1 is an unresolved conflict
        assert_eq!(d.hypothesis, Some(1));
        assert!(!d.hypothesis_corroborated);
        assert_eq!(d.mu, 0.0);
        // with the imagination unsure (0.4), the conflict is gone
        let mut recs2 = recs.clone();
        recs2[2].confidence = 0.4;
        let d = diagnose(&recs2, W, H, &cfg);
        let raw = [0.30 * 0.9, 0.35 * 0.8, 0.20 * 0.4, 0.15 * 0.4];
        let total: f64 = raw.iter().sum();
        assert_relative_eq!(d.mu, (raw[0] + raw[1]) / total, epsilon = 1e-6);
    }

    #[test]
    fn low_confidence_localiser_leaves_mu_at_zero() {
        let cfg = GateConfig::default();
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let d = diagnose(&[bx(b, 0.3), mk(b, 0.9)], W, H, &cfg);
        assert_relative_eq!(d.omega, 1.0);
        assert!(!d.hypothesis_corroborated, "no confident localiser");
        assert_eq!(d.mu, 0.0);
    }

    #[test]
    fn unstable_records_lose_their_weight() {
        let cfg = GateConfig::default();
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let mut zoomed = bx(Box2::new(28.0, 28.0, 38.0, 38.0), 0.9);
        zoomed.scale = 2.0;
        zoomed.step = 1;
        let mut zmask = mk(Box2::new(28.0, 28.0, 38.0, 38.0), 0.9);
        zmask.scale = 2.0;
        zmask.step = 1;
        let d = diagnose(&[bx(b, 0.9), mk(b, 0.9), zoomed, zmask], W, H, &cfg);
        assert_relative_eq!(d.zeta, 0.0, epsilon = 1e-12);
        assert!(
            d.weights.iter().all(|&w| w == 0.0),
            "ψ = 0 for every record"
        );
        assert_eq!(d.mu, 0.0);
    }

    #[test]
    fn with_every_weight_zeroed_the_majority_region_is_the_hypothesis() {
        let cfg = GateConfig::default();
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let far = Box2::new(28.0, 28.0, 38.0, 38.0);
        // three agreeing records at 1×, an outlier box and mask at 2× (latest, confident)
        let mut refined = mk(b, 0.8);
        refined.step = 1;
        let mut zb = bx(far, 0.95);
        zb.scale = 2.0;
        zb.step = 2;
        let mut zm = mk(far, 0.95);
        zm.scale = 2.0;
        zm.step = 2;
        let d = diagnose(&[bx(b, 0.9), mk(b, 0.9), refined, zb, zm], W, H, &cfg);
        assert!(
            d.weights.iter().all(|&w| w == 0.0),
            "the outlier zeroes ψ everywhere"
        );
        assert_eq!(
            d.hypothesis,
            Some(1),
            "the better-corroborated, more confident mask"
        );
    }

    #[test]
    fn empty_evidence_scores_nothing() {
        let cfg = GateConfig::default();
        let d = diagnose(&[], W, H, &cfg);
        assert_eq!((d.omega, d.mu, d.hypothesis), (0.0, 0.0, None));
        assert_relative_eq!(d.v, 0.3 + 0.2 * 0.5);
    }
}
