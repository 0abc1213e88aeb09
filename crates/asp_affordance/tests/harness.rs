//! The A-Harness loop end to end with scripted colour models: commit, each targeted retry
//! (ω, ζ, μ) triggered by constructed evidence, budget exhaustion, memory write-back only
//! on acceptance, and the commit gate that never lets an uncommitted grounding move.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use asp_affordance::{
    AffordanceDetector, GroundingView, Imagination, MemoryLink, Models, PriorImagination,
    SkillCall, StopCause, ViewGrounding, WebSearch,
};
use asp_config::sections::affordance::{AffordanceConfig, GroundingMode, MemoryConfig};
use asp_config::sections::common::SafetyConfig;
use asp_config::sections::verifier::GateConfig;
use asp_core::models::ModelError;
use asp_core::{CameraIntrinsics, FrameId, Isometry3, ObjectKey, Skill, Transform};
use asp_memory::{AffordanceMemory, CommonSensePrior};
use asp_verify::{
    CommitEvidence, CommitGate, CommitRequest, CommitToken, CorrectiveAction, Deficiency, Review,
    execute_committed,
};
use async_trait::async_trait;
use support::*;

fn gview() -> GroundingView {
    GroundingView {
        observation: view(),
        object_mask: Some(object_mask()),
        intrinsics: Some(CameraIntrinsics::from_hfov(SIZE, SIZE, 1.0)),
        camera_pose: Some(Transform::new("map", "camera", Isometry3::identity())),
        keyframe: 3,
    }
}

struct Setup {
    vlm: Arc<ColorVlm>,
    seg: Arc<ColorSegmenter>,
    imagination: Option<Arc<dyn Imagination>>,
    web: Option<Arc<dyn WebSearch>>,
    memory: Option<MemoryLink>,
}

impl Setup {
    fn new(vlm: Vec<Locate>, seg: Vec<Seg>) -> Self {
        Self {
            vlm: Arc::new(ColorVlm::new(vlm)),
            seg: Arc::new(ColorSegmenter::new(seg)),
            imagination: None,
            web: None,
            memory: None,
        }
    }

    fn detector(&self) -> AffordanceDetector {
        let models = Models {
            vlm: self.vlm.clone(),
            segmenter: self.seg.clone(),
            imagination: self.imagination.clone(),
            web: self.web.clone(),
        };
        AffordanceDetector::new(
            models,
            &AffordanceConfig::default(),
            &GateConfig::default(),
            None,
            self.memory.clone(),
        )
    }

    async fn ground(&self, mode: GroundingMode) -> ViewGrounding {
        let d = self.detector();
        let v = gview();
        let proposals = d
            .propose("press the red button", std::slice::from_ref(&v))
            .await
            .unwrap();
        d.ground_view(&v, "panel", "press the red button", &proposals, mode)
            .await
            .unwrap()
    }
}

/// (skill, deficiency repaired, proposed by the verifier) per call.
fn trace(vg: &ViewGrounding) -> Vec<(SkillCall, Option<Deficiency>, bool)> {
    vg.chosen()
        .unwrap()
        .store
        .log()
        .iter()
        .map(|l| (l.skill, l.deficiency, l.proposed))
        .collect()
}

#[tokio::test]
async fn a_clean_detection_commits_with_one_call() {
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    let vg = s.ground(GroundingMode::Harness).await;
    let g = vg.chosen().unwrap();
    assert_eq!(g.stop, StopCause::Committed);
    assert_eq!(g.skill_calls(), 1);
    assert!(g.diagnostics.v >= 0.8 && g.diagnostics.omega >= 0.5);
    assert_eq!(g.mask, part_mask(), "final fusion keeps the part");
    let (kx, ky) = g.keypoint.unwrap();
    assert!(
        part_mask().get(kx as u32, ky as u32),
        "keypoint on the actionable region"
    );
    assert_eq!(s.vlm.calls(), 1);
}

#[tokio::test]
async fn below_delta_with_every_floor_met_the_weakest_diagnostic_is_repaired() {
    // the first mask leaks 2 px around the part: ω = 160/280 = 0.57 meets its floor, ζ and
    // μ too, but v ≈ 0.73 < δ. The loop goes on while the budget lasts (SPEC §2.5: commit
    // or stop when the budget is spent): ω has the largest weighted distance to 1, so the
    // targeted retry re-segments in a refined ROI, which finds the part and commits
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Grown(2), Seg::Part]);
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(
        trace(&vg),
        vec![
            (SkillCall::Detection, None, false),
            (
                SkillCall::RefineSegment,
                Some(Deficiency::Consistency),
                true
            )
        ]
    );
    let g = vg.chosen().unwrap();
    assert_eq!(g.stop, StopCause::Committed);
    assert!(g.committed());
    assert!(g.diagnostics.v >= 0.8, "{:?}", g.diagnostics);
    assert_eq!(g.skill_calls(), 2);
    // the part was found, so the next (skill, part) pair is not tried
    assert_eq!(vg.groundings.len(), 1);
}

#[tokio::test]
async fn inconsistency_below_the_floor_triggers_refine_and_resegment() {
    // the first mask leaks 3 px: ω = 160/364 = 0.44 < ω_floor; box and mask no longer
    // corroborate each other, so μ = 0 too and its shortfall dominates; with no
    // complementary skill the router's tie goes to the action that repairs its own
    // shortfall: refine the ROI and re-segment, which gives the part and commits
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Grown(3), Seg::Part]);
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(
        trace(&vg),
        vec![
            (SkillCall::Detection, None, false),
            (
                SkillCall::RefineSegment,
                Some(Deficiency::Sufficiency),
                false
            )
        ]
    );
    let g = vg.chosen().unwrap();
    assert_eq!(g.stop, StopCause::Committed);
    assert_eq!(g.mask, part_mask());
    // the refined segmentation was prompted inside a crop around the box
    let second = s.seg.prompts.lock().unwrap()[1];
    assert!(matches!(second, asp_core::models::Prompt::Box { bbox } if bbox.x0 < 10.0));
    // the fixed chain keeps the leaky mask
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Grown(2), Seg::Part]);
    let fixed = s.ground(GroundingMode::FixedChain).await;
    let f = fixed.chosen().unwrap();
    assert_eq!((f.skill_calls(), f.stop), (1, StopCause::FixedSequence));
    assert_eq!(f.mask.area(), 280);
}

#[tokio::test]
async fn cross_scale_disagreement_triggers_the_proposed_zoom() {
    // 1×: the part, but the localiser is unsure (0.3) and the mask leaks 1 px: ω = 0.74,
    // μ = 0, v ≈ 0.77; no complementary skill and ω meets its floor → zoom (for μ);
    // 2×: the detector boxes the screw instead → ζ = 0 → the verifier proposes zoom (ζ)
    let s = Setup::new(
        vec![
            Locate::Part(0.3),
            Locate::Color(SCREW, 0.9),
            Locate::Part(0.9),
        ],
        vec![Seg::Grown(1), Seg::Filled, Seg::Part],
    );
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(
        trace(&vg),
        vec![
            (SkillCall::Detection, None, false),
            (
                SkillCall::ZoomRedetect,
                Some(Deficiency::Sufficiency),
                false
            ),
            (SkillCall::ZoomRedetect, Some(Deficiency::Stability), true),
        ]
    );
    let g = vg.chosen().unwrap();
    // the zoomed crops were smaller than the view, and predictions were projected back
    let widths: Vec<u32> = s.vlm.queries.lock().unwrap().iter().map(|q| q.1).collect();
    assert_eq!(widths[0], SIZE);
    assert!(widths[1] < SIZE && widths[2] < widths[1], "{widths:?}");
    let scales: Vec<f32> = g.store.records().iter().map(|r| r.scale).collect();
    assert!(
        scales.contains(&2.0) && scales.iter().any(|&x| x >= 4.0),
        "{scales:?}"
    );
    assert_eq!(g.stop, StopCause::BudgetExhausted);
    // the vote of the first step's mask and the 4× detection keeps the part
    assert!(
        g.router.decisions >= 2 && g.router.llm_needed >= 1,
        "{:?}",
        g.router
    );
}

fn panel_prior() -> Vec<CommonSensePrior> {
    vec![CommonSensePrior {
        category: "panel".into(),
        part: "button".into(),
        skill: Skill::TipPush,
        description: "on the right, mid-height".into(),
        // maps into the object box [10, 54)² as [39.9, 23.2, 50.0, 39.9]
        relative_box: Some([0.68, 0.3, 0.91, 0.68]),
        confidence: 0.6,
        keywords: vec![],
        reference_mask: None,
        embedding: None,
    }]
}

#[tokio::test]
async fn insufficient_support_triggers_imagination_for_a_familiar_category() {
    let mut s = Setup::new(vec![Locate::Shifted(0.6, 0.9)], vec![Seg::Part]);
    s.imagination = Some(Arc::new(PriorImagination::new(panel_prior())));
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(
        trace(&vg),
        vec![
            (SkillCall::Detection, None, false),
            (SkillCall::Imagination, Some(Deficiency::Sufficiency), true)
        ]
    );
    let g = vg.chosen().unwrap();
    // the imagined box agrees with the mask: ω ≈ 0.95, v ≥ δ
    assert_eq!(g.stop, StopCause::Committed);
    assert_eq!(g.mask, part_mask());
}

struct Keywords(AtomicUsize);

#[async_trait]
impl WebSearch for Keywords {
    async fn keywords(&self, part: &str, object: &str) -> Result<Vec<String>, ModelError> {
        assert_eq!((part, object), ("red button", "panel"));
        self.0.fetch_add(1, Ordering::SeqCst);
        Ok(vec!["round".into(), "glossy".into()])
    }
}

#[tokio::test]
async fn insufficient_support_triggers_web_search_for_an_unfamiliar_category() {
    let mut s = Setup::new(
        vec![Locate::Shifted(0.6, 0.9), Locate::Part(0.9)],
        vec![Seg::Part],
    );
    let web = Arc::new(Keywords(AtomicUsize::new(0)));
    s.web = Some(web.clone());
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(
        trace(&vg),
        vec![
            (SkillCall::Detection, None, false),
            (SkillCall::WebSearch, Some(Deficiency::Sufficiency), true)
        ]
    );
    assert_eq!(web.0.load(Ordering::SeqCst), 1);
    let q = s.vlm.queries.lock().unwrap();
    assert_eq!(q[1].0, "red button (round, glossy)");
    assert_eq!(vg.chosen().unwrap().stop, StopCause::Committed);
}

#[tokio::test]
async fn an_unresolvable_grounding_stops_at_the_budget() {
    let s = Setup::new(vec![Locate::Shifted(0.6, 0.9)], vec![Seg::Part]);
    let vg = s.ground(GroundingMode::Harness).await;
    let g = vg.chosen().unwrap();
    assert_eq!(g.stop, StopCause::BudgetExhausted);
    assert_eq!(g.skill_calls(), GateConfig::default().budget);
    assert!(!g.committed());
    // nothing found at all and nothing left to try: stop early
    let s = Setup::new(vec![Locate::Miss], vec![Seg::Part]);
    let g = s.ground(GroundingMode::Harness).await;
    let g = g.chosen().unwrap();
    assert_eq!((g.stop, g.skill_calls()), (StopCause::NoUsefulAction, 1));
    assert!(g.mask.is_empty());
    // a failing model adds no evidence but spends the call
    let s = Setup::new(vec![Locate::Fail], vec![Seg::Part]);
    let g = s.ground(GroundingMode::Harness).await;
    assert!(
        g.chosen().unwrap().store.log()[0]
            .note
            .contains("scripted failure")
    );
}

#[tokio::test]
async fn verifier_off_runs_every_skill_without_a_gate() {
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    let vg = s.ground(GroundingMode::VerifierOff).await;
    let g = vg.chosen().unwrap();
    assert_eq!(g.stop, StopCause::FixedSequence);
    assert_eq!(
        g.skill_calls(),
        3,
        "spends the budget although the first call was clean"
    );
    assert!(!g.committed());
    assert_eq!(
        g.store.actions(),
        vec![
            SkillCall::Detection,
            SkillCall::RefineSegment,
            SkillCall::ZoomRedetect
        ]
    );
}

fn memory(dir: &tempfile::TempDir) -> MemoryLink {
    let mem = AffordanceMemory::open(
        dir.path().join("m.redb"),
        &MemoryConfig::default(),
        &panel_prior(),
    )
    .unwrap();
    MemoryLink {
        memory: Arc::new(mem),
        image: Arc::new(MeanColorEmbedder),
        text: Arc::new(BagOfWords),
        top_n: 2,
    }
}

#[tokio::test]
async fn memory_is_written_back_only_on_acceptance_and_seeds_later_groundings() {
    let dir = tempfile::tempdir().unwrap();
    let link = memory(&dir);
    // rejected (budget exhausted): nothing is written
    let mut s = Setup::new(vec![Locate::Shifted(0.6, 0.9)], vec![Seg::Part]);
    s.memory = Some(link.clone());
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(vg.pair_reports[0].written_back, None);
    assert_eq!(link.memory.stats().unwrap().episodes, 0);
    // accepted: one episode with the actions, parameters and a reference mask
    let mut s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Grown(3), Seg::Part]);
    s.memory = Some(link.clone());
    let vg = s.ground(GroundingMode::Harness).await;
    let id = vg.pair_reports[0].written_back.unwrap();
    let eps = link.memory.episodes().unwrap();
    assert_eq!(eps.len(), 1);
    assert_eq!(eps[0].id, id);
    assert_eq!(eps[0].actions, vec!["detection", "refine_segment"]);
    assert_eq!(eps[0].category, "panel", "the common-sense category");
    assert!(eps[0].parameters.contains_key("refine_margin"));
    assert!(eps[0].reference_mask.is_some());
    assert!(eps[0].outcome >= 0.8);
    // the next grounding of the same thing retrieves it
    let mut s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    s.memory = Some(link.clone());
    let vg = s.ground(GroundingMode::Harness).await;
    assert_eq!(vg.pair_reports[0].memories_used, 1);
    assert_eq!(link.memory.stats().unwrap().episodes, 2);
    // comparison modes never write
    let mut s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    s.memory = Some(link.clone());
    s.ground(GroundingMode::FixedChain).await;
    s.ground(GroundingMode::VerifierOff).await;
    assert_eq!(link.memory.stats().unwrap().episodes, 2);
}

fn gate() -> CommitGate {
    CommitGate::new(
        GateConfig::default(),
        SafetyConfig::default(),
        "link_base",
        1,
    )
}

/// The camera looks along +z from the map origin; the arm base sits 0.5 m ahead.
fn map_to_base() -> Transform {
    Transform::new("link_base", "map", Isometry3::translation(0.0, 0.0, -0.5))
}

fn request(d: &asp_affordance::DetectedAffordance, evidence: CommitEvidence) -> CommitRequest {
    CommitRequest {
        skill: d.affordance.skill,
        object: ObjectKey::new("panel_0").unwrap(),
        frame: FrameId::map(),
        targets: vec![d.affordance.point_cloud.centroid().unwrap()],
        evidence,
    }
}

#[tokio::test]
async fn a_skill_never_runs_without_an_accepted_commit() {
    let executed = AtomicUsize::new(0);
    let run = |token: CommitToken| {
        assert_eq!(token.skill(), Skill::TipPush);
        executed.fetch_add(1, Ordering::SeqCst);
    };

    // committed grounding → accepted → the skill runs once
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    let d = s.detector();
    let report = d
        .detect(&[gview()], "panel", "press the red button", None)
        .await
        .unwrap();
    let aff = &report.affordances[0];
    assert!(aff.committed && aff.affordance.provenance.verifier_score.is_some());
    assert_eq!(aff.affordance.provenance.keyframes, vec![3]);
    let req = request(aff, CommitEvidence::Grounding(aff.summary.clone()));
    let review = gate().review(&req, Some(&map_to_base()));
    assert!(review.is_accepted(), "{}", review.verdict().message);
    execute_committed(review, run).unwrap();
    assert_eq!(executed.load(Ordering::SeqCst), 1);

    // uncommitted grounding (budget exhausted) → rejected → the skill never runs
    let s = Setup::new(vec![Locate::Shifted(0.6, 0.9)], vec![Seg::Part]);
    let report = s
        .detector()
        .detect(&[gview()], "panel", "press the red button", None)
        .await
        .unwrap();
    let aff = &report.affordances[0];
    assert!(!aff.committed && aff.affordance.provenance.verifier_score.is_none());
    for evidence in [
        CommitEvidence::Grounding(aff.summary.clone()),
        CommitEvidence::Affordance {
            verifier_score: aff.affordance.provenance.verifier_score.map(f64::from),
        },
    ] {
        let req = request(aff, evidence);
        let review = gate().review(&req, Some(&map_to_base()));
        let verdict = review.verdict().clone();
        assert!(
            matches!(verdict.corrective, Some(CorrectiveAction::Reground { .. })),
            "{verdict:?}"
        );
        assert!(execute_committed(review, run).is_err());
        // the wire path: a tampered verdict still makes no token
        let mut forged: asp_verify::CommitVerdict =
            serde_json::from_str(&serde_json::to_string(&verdict).unwrap()).unwrap();
        forged.accepted = true;
        forged.reasons.clear();
        let err = CommitToken::redeem(&forged, &req, &gate(), Some(&map_to_base())).unwrap_err();
        assert!(
            matches!(err, asp_verify::TokenError::LocalReject { .. }),
            "{err}"
        );
        // a genuine acceptance for another request does not transfer either
        let ok_req = request(
            &report.affordances[0],
            CommitEvidence::Affordance {
                verifier_score: Some(0.9),
            },
        );
        let Review::Accepted { verdict: ok, .. } = gate().review(&ok_req, Some(&map_to_base()))
        else {
            panic!("a committed score is accepted")
        };
        assert!(matches!(
            CommitToken::redeem(&ok, &req, &gate(), Some(&map_to_base())),
            Err(asp_verify::TokenError::RequestMismatch { .. })
        ));
    }
    assert_eq!(
        executed.load(Ordering::SeqCst),
        1,
        "the rejected skill never ran"
    );
}

#[tokio::test]
async fn affordances_from_two_views_merge_by_3d_iou() {
    let s = Setup::new(vec![Locate::Part(0.9)], vec![Seg::Part]);
    let mut second = gview();
    second.keyframe = 4;
    let report = s
        .detector()
        .detect(&[gview(), second], "panel", "press the red button", None)
        .await
        .unwrap();
    assert_eq!(report.affordances.len(), 1);
    assert_eq!(
        report.affordances[0].affordance.provenance.keyframes,
        vec![3, 4]
    );
    assert_eq!(report.pairs.len(), 2);
    assert_eq!(report.skill_calls, 2);
    // a view without depth cannot be lifted
    let mut flat = gview();
    flat.observation.depth = None;
    let err = s
        .detector()
        .detect(&[flat], "panel", "press the red button", None)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no depth"), "{err}");
}
