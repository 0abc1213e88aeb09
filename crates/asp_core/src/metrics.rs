//! Evaluation metrics (SPEC §2.6 and §3.3): gIoU, cIoU, P@50, P@50:95 and recall@K.
//!
//! Conventions, fixed here so every report agrees:
//! - A sample whose prediction and ground truth are both empty has IoU 1 (it correctly
//!   predicted "nothing"), and adds nothing to the cIoU sums.
//! - P@t counts samples with IoU strictly greater than `t` ("IoU > 0.5" in the spec), so
//!   a sample at exactly 0.5 does not count for P@50.
//! - recall@K splits ties at the K-th score fairly: when `m` items share the K-th score
//!   and only `s` of the K slots remain for them, each counts `s / m` (the expected
//!   recall under a random tie break), so a result never depends on input order.

use std::collections::HashSet;
use std::hash::Hash;

use serde::{Deserialize, Serialize};

use crate::CoreError;
use crate::image::Mask;

/// Pixel counts of one prediction against its ground truth.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentationSample {
    pub intersection: u64,
    pub union: u64,
}

impl SegmentationSample {
    pub fn from_masks(prediction: &Mask, truth: &Mask) -> Result<Self, CoreError> {
        let (intersection, union) = prediction.intersection_union(truth)?;
        Ok(Self {
            intersection,
            union,
        })
    }

    /// IoU of this sample; 1.0 when both masks are empty.
    pub fn iou(&self) -> f64 {
        if self.union == 0 {
            1.0
        } else {
            self.intersection as f64 / self.union as f64
        }
    }
}

/// The four segmentation figures of SPEC §2.6 over a set of samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SegmentationMetrics {
    /// Mean per-sample IoU.
    pub giou: f64,
    /// Total intersection over total union.
    pub ciou: f64,
    /// Share of samples with IoU > 0.5.
    pub p50: f64,
    /// Mean of P@t for t = 0.50, 0.55, …, 0.95.
    pub p50_95: f64,
    pub samples: usize,
}

/// Mean per-sample IoU; `None` without samples.
pub fn giou(samples: &[SegmentationSample]) -> Option<f64> {
    (!samples.is_empty())
        .then(|| samples.iter().map(SegmentationSample::iou).sum::<f64>() / samples.len() as f64)
}

/// Cumulative IoU: Σ intersection / Σ union; 1.0 when every sample is empty-vs-empty;
/// `None` without samples.
pub fn ciou(samples: &[SegmentationSample]) -> Option<f64> {
    if samples.is_empty() {
        return None;
    }
    let inter: u64 = samples.iter().map(|s| s.intersection).sum();
    let union: u64 = samples.iter().map(|s| s.union).sum();
    Some(if union == 0 {
        1.0
    } else {
        inter as f64 / union as f64
    })
}

/// Share of samples whose IoU is strictly above `threshold`; `None` without samples.
pub fn precision_at(samples: &[SegmentationSample], threshold: f64) -> Option<f64> {
    (!samples.is_empty()).then(|| {
        samples.iter().filter(|s| s.iou() > threshold).count() as f64 / samples.len() as f64
    })
}

/// The IoU thresholds of P@50:95.
pub fn p50_95_thresholds() -> [f64; 10] {
    std::array::from_fn(|i| 0.5 + 0.05 * i as f64)
}

/// Mean precision over IoU thresholds 0.50 … 0.95 in steps of 0.05.
pub fn precision_50_95(samples: &[SegmentationSample]) -> Option<f64> {
    let t = p50_95_thresholds();
    let sum: f64 = t
        .iter()
        .map(|&th| precision_at(samples, th))
        .sum::<Option<f64>>()?;
    Some(sum / t.len() as f64)
}

/// All four figures; `None` without samples.
pub fn segmentation_metrics(samples: &[SegmentationSample]) -> Option<SegmentationMetrics> {
    Some(SegmentationMetrics {
        giou: giou(samples)?,
        ciou: ciou(samples)?,
        p50: precision_at(samples, 0.5)?,
        p50_95: precision_50_95(samples)?,
        samples: samples.len(),
    })
}

/// recall@K of one ranked query: the share of `relevant` items among the `k` best-scored
/// items, ties at the cut split fairly (see the module notes). `None` when there is
/// nothing relevant, since recall is then undefined.
pub fn recall_at_k<T: Eq + Hash>(
    scored: &[(T, f64)],
    relevant: &HashSet<T>,
    k: usize,
) -> Option<f64> {
    if relevant.is_empty() {
        return None;
    }
    if k == 0 || scored.is_empty() {
        return Some(0.0);
    }
    let mut scores: Vec<f64> = scored.iter().map(|(_, s)| *s).collect();
    scores.sort_by(|a, b| b.total_cmp(a));
    if k >= scores.len() {
        let found = scored.iter().filter(|(t, _)| relevant.contains(t)).count();
        return Some(found as f64 / relevant.len() as f64);
    }
    let cut = scores[k - 1];
    let above = scores.iter().filter(|&&s| s > cut).count();
    let tied = scores.iter().filter(|&&s| s == cut).count();
    let share = (k - above) as f64 / tied as f64;
    let mut found = 0.0;
    for (t, s) in scored {
        if relevant.contains(t) {
            if *s > cut {
                found += 1.0;
            } else if *s == cut {
                found += share;
            }
        }
    }
    Some(found / relevant.len() as f64)
}

/// One query for recall@K: scored candidates and the set of relevant ones.
pub type RankedQuery<T> = (Vec<(T, f64)>, HashSet<T>);

/// Mean recall@K over queries that have at least one relevant item; `None` if none do.
pub fn mean_recall_at_k<T: Eq + Hash>(queries: &[RankedQuery<T>], k: usize) -> Option<f64> {
    let values: Vec<f64> = queries
        .iter()
        .filter_map(|(scored, relevant)| recall_at_k(scored, relevant, k))
        .collect();
    (!values.is_empty()).then(|| values.iter().sum::<f64>() / values.len() as f64)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::image::Box2;
    use approx::assert_relative_eq;

    fn s(intersection: u64, union: u64) -> SegmentationSample {
        SegmentationSample {
            intersection,
            union,
        }
    }

    #[test]
    fn giou_and_ciou_hand_computed() {
        // IoUs 0.5, 0.25, 1.0 (empty vs empty)
        let v = [s(5, 10), s(10, 40), s(0, 0)];
        assert_relative_eq!(giou(&v).unwrap(), (0.5 + 0.25 + 1.0) / 3.0);
        // cIoU ignores the empty sample: 15 / 50
        assert_relative_eq!(ciou(&v).unwrap(), 0.3);
        assert_eq!(giou(&[]), None);
        assert_eq!(ciou(&[s(0, 0)]), Some(1.0));
        // a large object dominates cIoU but not gIoU
        let w = [s(90, 100), s(0, 10)];
        assert_relative_eq!(giou(&w).unwrap(), 0.45);
        assert_relative_eq!(ciou(&w).unwrap(), 90.0 / 110.0);
    }

    #[test]
    fn precision_thresholds_are_strict() {
        // IoUs 0.5 (tie with the threshold), 0.6, 0.96, 0.0
        let v = [s(1, 2), s(3, 5), s(96, 100), s(0, 7)];
        assert_relative_eq!(precision_at(&v, 0.5).unwrap(), 0.5);
        // thresholds 0.50..0.95: 0.6 passes 0.50 and 0.55 (2 of 10), 0.96 passes all 10
        // per threshold: 0.50 → 2/4, 0.55 → 2/4, 0.60 … 0.95 → 1/4 (0.6 is not > 0.6)
        let expected = (2.0 * 0.5 + 8.0 * 0.25) / 10.0;
        assert_relative_eq!(precision_50_95(&v).unwrap(), expected);
        let m = segmentation_metrics(&v).unwrap();
        assert_eq!(m.samples, 4);
        assert_relative_eq!(m.p50, 0.5);
        assert_eq!(segmentation_metrics(&[]), None);
        assert_relative_eq!(p50_95_thresholds()[9], 0.95, epsilon = 1e-12);
    }

    #[test]
    fn metrics_from_masks_including_empty() {
        let gt = Mask::fill_box(4, 4, &Box2::new(0.0, 0.0, 2.0, 2.0));
        let pred = Mask::fill_box(4, 4, &Box2::new(0.0, 0.0, 2.0, 4.0));
        let a = SegmentationSample::from_masks(&pred, &gt).unwrap();
        assert_eq!((a.intersection, a.union), (4, 8));
        let empty = Mask::empty(4, 4);
        let b = SegmentationSample::from_masks(&empty, &empty).unwrap();
        assert_eq!(b.iou(), 1.0);
        let c = SegmentationSample::from_masks(&empty, &gt).unwrap();
        assert_eq!(c.iou(), 0.0);
        assert_relative_eq!(giou(&[a, b, c]).unwrap(), 0.5);
        assert!(SegmentationSample::from_masks(&Mask::empty(2, 2), &gt).is_err());
    }

    #[test]
    fn recall_at_k_hand_computed_with_ties() {
        let scored = vec![("a", 0.9), ("b", 0.8), ("c", 0.8), ("d", 0.8), ("e", 0.1)];
        let rel: HashSet<&str> = ["c", "e"].into_iter().collect();
        // top-2: "a" certain, one of three tied at 0.8 → c counts 1/3
        assert_relative_eq!(recall_at_k(&scored, &rel, 2).unwrap(), (1.0 / 3.0) / 2.0);
        // top-4: every 0.8 fits
        assert_relative_eq!(recall_at_k(&scored, &rel, 4).unwrap(), 0.5);
        assert_relative_eq!(recall_at_k(&scored, &rel, 5).unwrap(), 1.0);
        assert_relative_eq!(recall_at_k(&scored, &rel, 50).unwrap(), 1.0);
        assert_eq!(recall_at_k(&scored, &rel, 0), Some(0.0));
        assert_eq!(recall_at_k(&scored, &HashSet::new(), 3), None);
        // order of the input does not matter
        let mut rev = scored.clone();
        rev.reverse();
        assert_relative_eq!(
            recall_at_k(&rev, &rel, 2).unwrap(),
            recall_at_k(&scored, &rel, 2).unwrap()
        );
        let queries = vec![
            (scored.clone(), rel.clone()),
            (vec![("x", 1.0)], ["x"].into_iter().collect()),
            (vec![("y", 1.0)], HashSet::new()),
        ];
        assert_relative_eq!(mean_recall_at_k(&queries, 4).unwrap(), 0.75);
    }
}
