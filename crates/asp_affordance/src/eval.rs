//! Evaluation of affordance grounding (SPEC §2.6): for samples with ground-truth part
//! masks, run detection in a mode and report gIoU, cIoU, P@50, P@50:95, skill calls per
//! sample and how often the router needed the LLM.
//!
//! Two sets: the in-process [`crate::synthetic`] scenes and the simulator-generated one
//! (`asp_eval::affordance_set`, rendered from the tabletop and apartment worlds). Both run
//! through [`evaluate`] via [`EvalSample`]; [`run_modes`] runs the three modes and returns
//! a [`GroundingReport`] whose `Display` is the results table.

use std::collections::BTreeMap;

use asp_config::sections::affordance::GroundingMode;
use asp_core::Mask;
use asp_core::metrics::{SegmentationMetrics, SegmentationSample, segmentation_metrics};
use serde::{Deserialize, Serialize};

use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_core::CameraIntrinsics;
use asp_core::models::Observation;

use crate::AffordanceError;
use crate::detector::AffordanceDetector;
use crate::harness::{GroundingView, Models};
use crate::producers::PriorImagination;
use crate::sim::{SimulatedAffordanceVlm, SimulatedSegmenter};
use crate::synthetic::GroundingSample;

/// What the evaluation needs of a sample: a view of one object with ground truth, the
/// instruction, and the ground-truth mask of the part that achieves it.
pub trait EvalSample {
    fn view(&self) -> &Observation;
    /// The object's segment in the view (what the object map provides).
    fn object_mask(&self) -> &Mask;
    fn intrinsics(&self) -> CameraIntrinsics;
    /// `map → camera`.
    fn camera_pose(&self) -> &asp_core::Transform;
    fn object_name(&self) -> &str;
    fn action(&self) -> &str;
    fn truth(&self) -> &Mask;
}

impl EvalSample for GroundingSample {
    fn view(&self) -> &Observation {
        &self.view
    }
    fn object_mask(&self) -> &Mask {
        &self.object_mask
    }
    fn intrinsics(&self) -> CameraIntrinsics {
        self.intrinsics
    }
    fn camera_pose(&self) -> &asp_core::Transform {
        &self.camera_pose
    }
    fn object_name(&self) -> &str {
        &self.object_name
    }
    fn action(&self) -> &str {
        &self.action
    }
    fn truth(&self) -> &Mask {
        &self.truth
    }
}

/// What one mode achieved on a sample set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModeResult {
    pub mode: GroundingMode,
    pub metrics: SegmentationMetrics,
    /// Mean skill calls per sample (the budget's unit, proposals excluded).
    pub mean_skill_calls: f64,
    /// Samples per number of skill calls.
    pub calls_histogram: BTreeMap<u32, usize>,
    /// Share of samples whose grounding the verifier committed.
    pub commit_rate: f64,
    /// Router decisions, and the share that met the LLM condition (near-tie or
    /// persistence), and the share where an advisor was actually consulted.
    pub router_decisions: u32,
    pub llm_needed_share: f64,
    pub llm_consulted_share: f64,
    /// Samples for which the VLM proposed no (skill, part) pair.
    pub no_proposal: usize,
    /// Per-sample IoU, skill calls and commit, in sample order (for paired and
    /// per-category comparisons).
    pub ious: Vec<f64>,
    pub calls: Vec<u32>,
    pub committed: Vec<bool>,
}

/// Runs `detector` in `mode` on every sample (one view each).
pub async fn evaluate<S: EvalSample>(
    detector: &AffordanceDetector,
    samples: &[S],
    mode: GroundingMode,
) -> Result<ModeResult, AffordanceError> {
    let mut segs = Vec::with_capacity(samples.len());
    let mut hist: BTreeMap<u32, usize> = BTreeMap::new();
    let (mut calls, mut committed, mut no_proposal) = (0u64, 0usize, 0usize);
    let mut router = crate::router::RouterStats::default();
    let (mut per_calls, mut per_commit) = (Vec::new(), Vec::new());
    for s in samples {
        let view = GroundingView {
            observation: s.view().clone(),
            object_mask: Some(s.object_mask().clone()),
            intrinsics: Some(s.intrinsics()),
            camera_pose: Some(s.camera_pose().clone()),
            keyframe: 0,
        };
        let proposals = detector
            .propose(s.action(), std::slice::from_ref(&view))
            .await?;
        if proposals.is_empty() {
            no_proposal += 1;
        }
        let vg = detector
            .ground_view(&view, s.object_name(), s.action(), &proposals, mode)
            .await?;
        let truth = s.truth();
        let mask = vg.chosen().map_or_else(
            || Mask::empty(truth.width(), truth.height()),
            |g| g.mask.clone(),
        );
        segs.push(SegmentationSample::from_masks(&mask, truth)?);
        let n = vg.skill_calls();
        calls += u64::from(n);
        *hist.entry(n).or_default() += 1;
        let c = vg.chosen().is_some_and(|g| g.committed());
        committed += usize::from(c);
        per_calls.push(n);
        per_commit.push(c);
        router += vg.router();
    }
    let metrics = segmentation_metrics(&segs).ok_or(AffordanceError::EmptyEvaluation)?;
    let n = samples.len() as f64;
    let share = |x: u32| {
        if router.decisions == 0 {
            0.0
        } else {
            f64::from(x) / f64::from(router.decisions)
        }
    };
    Ok(ModeResult {
        mode,
        metrics,
        mean_skill_calls: calls as f64 / n,
        calls_histogram: hist,
        commit_rate: committed as f64 / n,
        router_decisions: router.decisions,
        llm_needed_share: share(router.llm_needed),
        llm_consulted_share: share(router.llm_consultations),
        no_proposal,
        ious: segs.iter().map(SegmentationSample::iou).collect(),
        calls: per_calls,
        committed: per_commit,
    })
}

fn mode_name(m: GroundingMode) -> &'static str {
    match m {
        GroundingMode::Harness => "A-Harness (verifier on)",
        GroundingMode::VerifierOff => "verifier off (every skill, no gate)",
        GroundingMode::FixedChain => "fixed detect-then-segment",
    }
}

/// A Markdown results table, one row per mode.
pub fn markdown_table(results: &[ModeResult]) -> String {
    let mut s = String::from(
        "| configuration | gIoU | cIoU | P@50 | P@50:95 | skill calls / sample | calls histogram | committed | LLM needed |\n\
         |---|---|---|---|---|---|---|---|---|\n",
    );
    for r in results {
        let hist: Vec<String> = r
            .calls_histogram
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect();
        s.push_str(&format!(
            "| {} | {:.2} | {:.2} | {:.2} | {:.2} | {:.2} | {} | {:.0}% | {} |\n",
            mode_name(r.mode),
            100.0 * r.metrics.giou,
            100.0 * r.metrics.ciou,
            100.0 * r.metrics.p50,
            100.0 * r.metrics.p50_95,
            r.mean_skill_calls,
            hist.join(" "),
            100.0 * r.commit_rate,
            if r.router_decisions == 0 {
                "-".to_owned()
            } else {
                format!(
                    "{:.0}% of {}",
                    100.0 * r.llm_needed_share,
                    r.router_decisions
                )
            },
        ));
    }
    s
}

/// The three configurations in report order: A-Harness (verifier on), verifier off, the
/// fixed detect-then-segment chain.
pub const MODES: [GroundingMode; 3] = [
    GroundingMode::Harness,
    GroundingMode::VerifierOff,
    GroundingMode::FixedChain,
];

/// The results of every mode on one set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GroundingReport {
    /// What the set is (for the table's caption).
    pub set: String,
    pub samples: usize,
    pub results: Vec<ModeResult>,
}

impl GroundingReport {
    pub fn result(&self, mode: GroundingMode) -> Option<&ModeResult> {
        self.results.iter().find(|r| r.mode == mode)
    }
}

impl std::fmt::Display for GroundingReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} ({} samples)", self.set, self.samples)?;
        writeln!(f)?;
        write!(f, "{}", markdown_table(&self.results))
    }
}

/// Runs every mode of [`MODES`] on `samples`.
pub async fn run_modes<S: EvalSample>(
    detector: &AffordanceDetector,
    samples: &[S],
    set: impl Into<String>,
) -> Result<GroundingReport, AffordanceError> {
    let mut results = Vec::with_capacity(MODES.len());
    for mode in MODES {
        results.push(evaluate(detector, samples, mode).await?);
    }
    Ok(GroundingReport {
        set: set.into(),
        samples: samples.len(),
        results,
    })
}

/// The detector the evaluations run: the simulated VLM and segmenter with the configured
/// error model, prior-based imagination from the common-sense seed file, no web search,
/// no LLM advisor, no memory (every sample starts cold).
pub fn simulated_detector(cfg: &LoadedConfig) -> Result<AffordanceDetector, AffordanceError> {
    let aff = &cfg.config.affordance_node;
    let seed = cfg.config_path(&aff.memory.common_sense_seed);
    let priors = asp_memory::SeedFile::load(&seed)?.priors;
    let models = Models {
        vlm: Arc::new(SimulatedAffordanceVlm::new(aff.simulated_models.clone())),
        segmenter: Arc::new(SimulatedSegmenter::new(aff.simulated_models.clone())),
        imagination: Some(Arc::new(PriorImagination::new(priors))),
        web: None,
    };
    Ok(AffordanceDetector::new(
        models,
        aff,
        &cfg.config.verifier_node.gate,
        None,
        None,
    ))
}
