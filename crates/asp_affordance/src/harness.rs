//! The A-Harness loop for one (skill, part) pair on one view (SPEC §2): detect, score with
//! the verifier, commit or run the targeted retry the router picks, within the budget,
//! then the final fusion Φ. Also the two comparison modes: verifier off (every skill in a
//! fixed order, no gate) and the fixed detect-then-segment chain.
//!
//! Coordinates: the *view* is the object's crop; every record is in the view's pixels
//! ("the full image" of SPEC §2.5). Zoomed and refined predictions are projected back.
//!
//! Budget accounting: one skill call is one detection (the VLM's box and the segmenter's
//! box-prompted mask, SPEC §1.5 step 2), one re-segmentation, one zoomed re-detection,
//! one imagination or one web search. The VLM's (skill, part) proposal is common to all
//! modes and counted separately; the final fusion's point-prompted segmentation is part
//! of committing and is tracked as a secondary cost.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use asp_config::sections::affordance::{DetectionConfig, GroundingMode};
use asp_core::models::{
    AffordanceProposal, AffordanceVlm, ModelError, Observation, Prompt, PromptableSegmenter,
};
use asp_core::{Box2, Cost, EvidencePayload, EvidenceRecord, Mask, Skill};
use asp_verify::{
    Acceptance, CommitRule, Deficiency, Diagnostics, GateDecision, GroundingSummary, RetryAction,
    RetryContext, diagnostics::record_mask, diagnostics::record_similarity, producer,
};

use crate::AffordanceError;
use crate::producers::{Imagination, ImaginationRequest, WebSearch};
use crate::router::{RouteInput, Router, RouterStats};
use crate::store::{EvidenceStore, SkillCall};

/// One view of the object, as grounding sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct GroundingView {
    pub observation: Observation,
    /// The object's segment in the view; the whole view when unknown.
    pub object_mask: Option<Mask>,
    /// Intrinsics of the view and `map → camera`, to lift masks to 3D.
    pub intrinsics: Option<asp_core::CameraIntrinsics>,
    pub camera_pose: Option<asp_core::Transform>,
    pub keyframe: u32,
}

impl GroundingView {
    /// A view from an object map crop.
    pub fn from_crop(crop: &asp_core::Crop) -> Self {
        Self {
            observation: crop.observation(),
            object_mask: Some(crop.mask.clone()),
            intrinsics: Some(crop.intrinsics),
            camera_pose: Some(crop.camera_pose.clone()),
            keyframe: crop.keyframe,
        }
    }

    pub fn width(&self) -> u32 {
        self.observation.width()
    }
    pub fn height(&self) -> u32 {
        self.observation.height()
    }
    pub fn full_box(&self) -> Box2 {
        Box2::new(0.0, 0.0, self.width() as f32, self.height() as f32)
    }

    /// The object's box in the view.
    pub fn object_box(&self) -> Box2 {
        self.object_mask
            .as_ref()
            .and_then(Mask::bounding_rect)
            .map_or_else(|| self.full_box(), |r| r.to_box())
    }
}

/// The models and producers grounding calls.
#[derive(Clone)]
pub struct Models {
    pub vlm: Arc<dyn AffordanceVlm>,
    pub segmenter: Arc<dyn PromptableSegmenter>,
    pub imagination: Option<Arc<dyn Imagination>>,
    pub web: Option<Arc<dyn WebSearch>>,
}

impl std::fmt::Debug for Models {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Models")
            .field("imagination", &self.imagination.is_some())
            .field("web", &self.web.is_some())
            .finish_non_exhaustive()
    }
}

/// Why a grounding loop ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopCause {
    Committed,
    BudgetExhausted,
    /// No feasible action was expected to raise v.
    NoUsefulAction,
    /// A comparison mode ran its fixed sequence.
    FixedSequence,
}

/// The result of grounding one pair on one view.
#[derive(Debug)]
pub struct Grounding {
    pub skill: Skill,
    pub part: String,
    /// The final mask in the view (empty when nothing was found).
    pub mask: Mask,
    /// The fusion keypoint, view pixels.
    pub keypoint: Option<(f32, f32)>,
    /// The verifier's diagnostics of the final evidence (computed in every mode, for
    /// reporting; only the harness acts on them).
    pub diagnostics: Diagnostics,
    /// The commit rule accepted the evidence (only in harness mode).
    pub acceptance: Option<Acceptance>,
    pub stop: StopCause,
    pub store: EvidenceStore,
    pub router: RouterStats,
    /// Parameters used, for memory write-back.
    pub parameters: BTreeMap<String, f32>,
}

impl Grounding {
    /// The commit rule accepted the evidence (the acceptance itself may since have been
    /// consumed by a memory write-back).
    pub fn committed(&self) -> bool {
        self.stop == StopCause::Committed
    }

    pub fn skill_calls(&self) -> u32 {
        self.store.skill_calls()
    }

    /// What a commit request carries for this grounding.
    pub fn summary(&self) -> GroundingSummary {
        GroundingSummary {
            omega: self.diagnostics.omega,
            zeta: self.diagnostics.zeta,
            mu: self.diagnostics.mu,
            v: self.diagnostics.v,
            skill_calls: self.store.skill_calls(),
            producers: self.store.producers().into_iter().map(|p| p.0).collect(),
        }
    }
}

/// What to ground.
#[derive(Debug, Clone, Copy)]
pub struct GroundingTask<'a> {
    pub view: &'a GroundingView,
    /// The object as the agent named it.
    pub object: &'a str,
    pub action: &'a str,
    pub proposal: &'a AffordanceProposal,
    /// Skill calls this grounding may spend.
    pub budget: u32,
    /// Memory prior per action (from retrieved episodes) and their descriptions.
    pub memory_prior: &'a BTreeMap<RetryAction, f64>,
    pub memories: &'a [String],
}

/// Runs grounding loops.
#[derive(Debug, Clone)]
pub struct Harness {
    pub(crate) models: Models,
    pub(crate) detection: DetectionConfig,
    pub(crate) rule: CommitRule,
    pub(crate) router: Router,
}

/// Model errors that mean "this call produced nothing" rather than a misconfiguration.
fn recoverable(e: &ModelError) -> bool {
    matches!(e, ModelError::Backend { .. } | ModelError::BadAnswer { .. })
}

fn record(
    payload: EvidencePayload,
    producer: &str,
    roi: Box2,
    scale: f32,
    confidence: f32,
    step: u32,
) -> EvidenceRecord {
    EvidenceRecord {
        payload,
        roi,
        scale,
        producer: producer.into(),
        cost: Cost::default(),
        step,
        confidence: confidence.clamp(0.0, 1.0),
    }
}

fn box_of(rec: &EvidenceRecord, w: u32, h: u32) -> Option<Box2> {
    match &rec.payload {
        EvidencePayload::Box(b) => Some(*b),
        EvidencePayload::Mask(m) => m.bounding_rect().map(|r| r.to_box()),
        EvidencePayload::Point { x, y } => Some(Box2::new(*x - 0.5, *y - 0.5, *x + 0.5, *y + 0.5)),
        _ => Some(rec.roi).filter(|b| b.to_pixel_rect(w, h).area() > 0),
    }
}

impl Harness {
    pub fn new(
        models: Models,
        detection: DetectionConfig,
        rule: CommitRule,
        router: Router,
    ) -> Self {
        Self {
            models,
            detection,
            rule,
            router,
        }
    }

    pub fn rule(&self) -> &CommitRule {
        &self.rule
    }

    /// Grounds `task` in `mode`.
    pub async fn ground(
        &self,
        task: &GroundingTask<'_>,
        mode: GroundingMode,
    ) -> Result<Grounding, AffordanceError> {
        match mode {
            GroundingMode::Harness => self.run_harness(task).await,
            GroundingMode::VerifierOff => self.run_verifier_off(task).await,
            GroundingMode::FixedChain => self.run_fixed_chain(task).await,
        }
    }

    fn familiar(&self, task: &GroundingTask<'_>) -> bool {
        self.models
            .imagination
            .as_ref()
            .is_some_and(|im| im.is_familiar(task.object, &task.proposal.part))
    }

    fn available(&self, task: &GroundingTask<'_>) -> Vec<RetryAction> {
        let mut a = vec![RetryAction::RefineSegment, RetryAction::ZoomRedetect];
        if self.familiar(task) {
            a.push(RetryAction::Imagination);
        }
        if self.models.web.is_some() {
            a.push(RetryAction::WebSearch);
        }
        a
    }

    async fn run_fixed_chain(
        &self,
        task: &GroundingTask<'_>,
    ) -> Result<Grounding, AffordanceError> {
        let mut store = EvidenceStore::new();
        self.detect(&mut store, task, false).await?;
        let (w, h) = (task.view.width(), task.view.height());
        let mask = store
            .records()
            .iter()
            .rev()
            .find(|r| r.producer.0 == producer::SEGMENTER)
            .map_or_else(|| Mask::empty(w, h), |r| record_mask(r, w, h));
        let diagnostics = asp_verify::diagnose(store.records(), w, h, self.rule.config());
        Ok(Grounding {
            skill: task.proposal.skill,
            part: task.proposal.part.clone(),
            mask,
            keypoint: None,
            diagnostics,
            acceptance: None,
            stop: StopCause::FixedSequence,
            store,
            router: RouterStats::default(),
            parameters: BTreeMap::new(),
        })
    }

    async fn run_verifier_off(
        &self,
        task: &GroundingTask<'_>,
    ) -> Result<Grounding, AffordanceError> {
        let mut store = EvidenceStore::new();
        let mut parameters = BTreeMap::new();
        let (w, h) = (task.view.width(), task.view.height());
        self.detect(&mut store, task, false).await?;
        let mut done = BTreeSet::new();
        for action in RetryAction::ALL {
            if store.skill_calls() >= task.budget {
                break;
            }
            if !self.available(task).contains(&action) {
                continue;
            }
            let d = asp_verify::diagnose(store.records(), w, h, self.rule.config());
            if self.feasible(task, &store, &d, &done).contains(&action) {
                self.execute(&mut store, task, &d, action, false, &mut parameters)
                    .await?;
                done.insert(action);
            }
        }
        let diagnostics = asp_verify::diagnose(store.records(), w, h, self.rule.config());
        let (mask, keypoint) = self.fuse(&mut store, task, &diagnostics)?;
        Ok(Grounding {
            skill: task.proposal.skill,
            part: task.proposal.part.clone(),
            mask,
            keypoint,
            diagnostics,
            acceptance: None,
            stop: StopCause::FixedSequence,
            store,
            router: RouterStats::default(),
            parameters,
        })
    }

    async fn run_harness(&self, task: &GroundingTask<'_>) -> Result<Grounding, AffordanceError> {
        let mut store = EvidenceStore::new();
        let mut stats = RouterStats::default();
        let mut parameters = BTreeMap::new();
        let mut history: Vec<Deficiency> = Vec::new();
        let mut used: BTreeSet<RetryAction> = BTreeSet::new();
        let (w, h) = (task.view.width(), task.view.height());
        self.detect(&mut store, task, false).await?;
        let (diagnostics, acceptance, stop) = loop {
            let ctx = RetryContext {
                familiar: self.familiar(task),
                used: used.iter().copied().collect(),
                available: self.available(task),
            };
            let (d, decision) = self.rule.evaluate(store.records(), w, h, &ctx);
            let (deficiency, gaps, proposal) = match decision {
                GateDecision::Commit { acceptance } => {
                    break (d, Some(acceptance), StopCause::Committed);
                }
                GateDecision::Retry {
                    deficiency,
                    gaps,
                    proposal,
                } => (deficiency, gaps, proposal),
            };
            if store.skill_calls() >= task.budget {
                break (d, None, StopCause::BudgetExhausted);
            }
            let feasible = self.feasible(task, &store, &d, &used);
            let input = RouteInput {
                diagnostics: d.summary(),
                deficiency,
                gaps,
                proposal: proposal.filter(|p| feasible.contains(p)),
                feasible: &feasible,
                memory_prior: task.memory_prior,
                history: &history,
                action_text: task.action,
                part: &task.proposal.part,
                evidence: store.summary_lines(),
                memories: task.memories.to_vec(),
                remaining_budget: task.budget - store.skill_calls(),
            };
            let Some(choice) = self.router.choose(&input, &mut stats).await else {
                break (d, None, StopCause::NoUsefulAction);
            };
            tracing::debug!(
                action = choice.action.name(),
                deficiency = deficiency.symbol(),
                v = d.v,
                by_llm = choice.by_llm,
                "targeted retry"
            );
            let proposed = Some(choice.action) == input.proposal;
            drop(input);
            history.push(deficiency);
            used.insert(choice.action);
            self.execute(
                &mut store,
                task,
                &d,
                choice.action,
                choice.by_llm,
                &mut parameters,
            )
            .await?;
            store.mark_decision(deficiency, proposed);
        };
        let (mask, keypoint) = self.fuse(&mut store, task, &diagnostics)?;
        Ok(Grounding {
            skill: task.proposal.skill,
            part: task.proposal.part.clone(),
            mask,
            keypoint,
            diagnostics,
            acceptance,
            stop,
            store,
            router: stats,
            parameters,
        })
    }

    /// The actions that can run now and would see an input they have not seen.
    fn feasible(
        &self,
        task: &GroundingTask<'_>,
        store: &EvidenceStore,
        d: &Diagnostics,
        used: &BTreeSet<RetryAction>,
    ) -> Vec<RetryAction> {
        let mut out = Vec::new();
        if let Some(roi) = self.refine_roi(task, store, d)
            && !store
                .records()
                .iter()
                .any(|r| r.producer.0 == producer::REFINED_SEGMENTER && r.roi == roi)
        {
            out.push(RetryAction::RefineSegment);
        }
        let (_, scale) = self.zoom_roi(task, store, d);
        if scale > 1.0 + 1e-3 {
            out.push(RetryAction::ZoomRedetect);
        }
        if self.familiar(task) && !used.contains(&RetryAction::Imagination) {
            out.push(RetryAction::Imagination);
        }
        if self.models.web.is_some() && !used.contains(&RetryAction::WebSearch) {
            out.push(RetryAction::WebSearch);
        }
        out
    }

    /// The localiser box that best agrees with the hypothesis, and the ROI around it.
    fn refine_roi(
        &self,
        task: &GroundingTask<'_>,
        store: &EvidenceStore,
        d: &Diagnostics,
    ) -> Option<Box2> {
        let (w, h) = (task.view.width(), task.view.height());
        let hyp = d.hypothesis?;
        let recs = store.records();
        let (_, b) = recs
            .iter()
            .filter(|r| matches!(r.payload, EvidencePayload::Box(_)))
            .map(|r| (record_similarity(r, &recs[hyp], w, h), r))
            .max_by(|a, b| a.0.total_cmp(&b.0))?;
        let EvidencePayload::Box(bx) = b.payload else {
            return None;
        };
        let margin = self.detection.refine_margin * bx.width().max(bx.height());
        let roi = bx.padded(margin).to_pixel_rect(w, h);
        (roi.area() > 0).then(|| roi.to_box())
    }

    /// The zoom ROI around the hypothesis (or the object) and its scale λ.
    fn zoom_roi(
        &self,
        task: &GroundingTask<'_>,
        store: &EvidenceStore,
        d: &Diagnostics,
    ) -> (Box2, f32) {
        let (w, h) = (task.view.width() as f32, task.view.height() as f32);
        let max_scale = store
            .records()
            .iter()
            .map(|r| r.scale)
            .fold(1.0f32, f32::max);
        let target = max_scale * self.detection.zoom;
        let focus = d
            .hypothesis
            .and_then(|i| box_of(&store.records()[i], task.view.width(), task.view.height()))
            .unwrap_or_else(|| task.view.object_box());
        let (cx, cy) = focus.center();
        // the part must fit with some context: at least 1.5× its box, at least 8 px
        let rw = (w / target).max(focus.width() * 1.5).max(8.0).min(w);
        let rh = (h / target).max(focus.height() * 1.5).max(8.0).min(h);
        let x0 = (cx - rw / 2.0).clamp(0.0, w - rw);
        let y0 = (cy - rh / 2.0).clamp(0.0, h - rh);
        let roi = Box2::new(x0, y0, x0 + rw, y0 + rh)
            .to_pixel_rect(task.view.width(), task.view.height())
            .to_box();
        let scale = (w / roi.width().max(1.0)).min(h / roi.height().max(1.0));
        // no zoom beyond what is already there
        (roi, if scale > max_scale + 1e-3 { scale } else { 1.0 })
    }

    /// The detection skill: VLM box on the view, then the box-prompted mask.
    async fn detect(
        &self,
        store: &mut EvidenceStore,
        task: &GroundingTask<'_>,
        by_llm: bool,
    ) -> Result<(), AffordanceError> {
        let step = store.begin(SkillCall::Detection, by_llm);
        let view = &task.view.observation;
        let full = task.view.full_box();
        match self.models.vlm.locate_part(&task.proposal.part, view).await {
            Ok(Some(loc)) => {
                store.add(record(
                    EvidencePayload::Box(loc.bbox),
                    producer::DETECTOR,
                    full,
                    1.0,
                    loc.confidence,
                    step,
                ));
                match self
                    .models
                    .segmenter
                    .segment_prompt(view, &Prompt::Box { bbox: loc.bbox })
                {
                    Ok(seg) => {
                        store.add(record(
                            EvidencePayload::Mask(seg.mask),
                            producer::SEGMENTER,
                            full,
                            1.0,
                            seg.score,
                            step,
                        ));
                    }
                    Err(e) if recoverable(&e) => store.note(format!("segmenter failed: {e}")),
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(None) => store.note(format!("{} not found", task.proposal.part)),
            Err(e) if recoverable(&e) => store.note(format!("VLM failed: {e}")),
            Err(e) => return Err(e.into()),
        }
        Ok(())
    }

    async fn execute(
        &self,
        store: &mut EvidenceStore,
        task: &GroundingTask<'_>,
        d: &Diagnostics,
        action: RetryAction,
        by_llm: bool,
        parameters: &mut BTreeMap<String, f32>,
    ) -> Result<(), AffordanceError> {
        let (w, h) = (task.view.width(), task.view.height());
        let view = &task.view.observation;
        match action {
            RetryAction::RefineSegment => {
                let roi = self.refine_roi(task, store, d);
                let prompt_box = roi.and_then(|_| {
                    let hyp = d.hypothesis?;
                    let recs = store.records();
                    recs.iter()
                        .filter_map(|r| match r.payload {
                            EvidencePayload::Box(b) => {
                                Some((record_similarity(r, &recs[hyp], w, h), b))
                            }
                            _ => None,
                        })
                        .max_by(|a, b| a.0.total_cmp(&b.0))
                        .map(|(_, b)| b)
                });
                let step = store.begin(SkillCall::RefineSegment, by_llm);
                let (Some(roi), Some(b)) = (roi, prompt_box) else {
                    store.note("no box to refine");
                    return Ok(());
                };
                parameters.insert("refine_margin".into(), self.detection.refine_margin);
                let rect = roi.to_pixel_rect(w, h);
                let crop = view.crop(&rect);
                let local = b.translated(-(rect.x0 as f32), -(rect.y0 as f32));
                match self
                    .models
                    .segmenter
                    .segment_prompt(&crop, &Prompt::Box { bbox: local })
                {
                    Ok(seg) => {
                        let full = seg.mask.paste_into(&rect, w, h);
                        store.add(record(
                            EvidencePayload::Mask(full),
                            producer::REFINED_SEGMENTER,
                            roi,
                            1.0,
                            seg.score,
                            step,
                        ));
                    }
                    Err(e) if recoverable(&e) => store.note(format!("segmenter failed: {e}")),
                    Err(e) => return Err(e.into()),
                }
            }
            RetryAction::ZoomRedetect => {
                let (roi, scale) = self.zoom_roi(task, store, d);
                let step = store.begin(SkillCall::ZoomRedetect, by_llm);
                parameters.insert("zoom_scale".into(), scale);
                let rect = roi.to_pixel_rect(w, h);
                let crop = view.crop(&rect);
                let (dx, dy) = (rect.x0 as f32, rect.y0 as f32);
                match self
                    .models
                    .vlm
                    .locate_part(&task.proposal.part, &crop)
                    .await
                {
                    Ok(Some(loc)) => {
                        let back = loc.bbox.translated(dx, dy);
                        store.add(record(
                            EvidencePayload::Box(back),
                            producer::ZOOM_DETECTOR,
                            roi,
                            scale,
                            loc.confidence,
                            step,
                        ));
                        match self
                            .models
                            .segmenter
                            .segment_prompt(&crop, &Prompt::Box { bbox: loc.bbox })
                        {
                            Ok(seg) => {
                                let full = seg.mask.paste_into(&rect, w, h);
                                store.add(record(
                                    EvidencePayload::Mask(full),
                                    producer::ZOOM_SEGMENTER,
                                    roi,
                                    scale,
                                    seg.score,
                                    step,
                                ));
                            }
                            Err(e) if recoverable(&e) => {
                                store.note(format!("segmenter failed: {e}"))
                            }
                            Err(e) => return Err(e.into()),
                        }
                    }
                    Ok(None) => {
                        store.note(format!("{} not found at {scale:.1}x", task.proposal.part))
                    }
                    Err(e) if recoverable(&e) => store.note(format!("VLM failed: {e}")),
                    Err(e) => return Err(e.into()),
                }
            }
            RetryAction::Imagination => {
                let step = store.begin(SkillCall::Imagination, by_llm);
                let Some(im) = &self.models.imagination else {
                    store.note("no imagination producer");
                    return Ok(());
                };
                let req = ImaginationRequest {
                    object: task.object,
                    part: &task.proposal.part,
                    skill: task.proposal.skill,
                    view,
                    object_box: task.view.object_box(),
                };
                match im.imagine(&req).await {
                    Ok(Some(r)) => {
                        store.add(record(
                            EvidencePayload::Box(r.bbox),
                            producer::IMAGINATION,
                            task.view.full_box(),
                            1.0,
                            r.confidence,
                            step,
                        ));
                        store.note(r.note);
                    }
                    Ok(None) => store.note("nothing imagined"),
                    Err(e) if recoverable(&e) => store.note(format!("imagination failed: {e}")),
                    Err(e) => return Err(e.into()),
                }
            }
            RetryAction::WebSearch => {
                let step = store.begin(SkillCall::WebSearch, by_llm);
                let Some(web) = &self.models.web else {
                    store.note("no web search producer");
                    return Ok(());
                };
                let keywords = match web.keywords(&task.proposal.part, task.object).await {
                    Ok(k) => k,
                    Err(e) if recoverable(&e) => {
                        store.note(format!("web search failed: {e}"));
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                };
                let query = if keywords.is_empty() {
                    task.proposal.part.clone()
                } else {
                    format!("{} ({})", task.proposal.part, keywords.join(", "))
                };
                store.note(format!("re-detect as {query:?}"));
                match self.models.vlm.locate_part(&query, view).await {
                    Ok(Some(loc)) => {
                        store.add(record(
                            EvidencePayload::Box(loc.bbox),
                            producer::WEB,
                            task.view.full_box(),
                            1.0,
                            loc.confidence,
                            step,
                        ));
                    }
                    Ok(None) => store.note("not found with keywords"),
                    Err(e) if recoverable(&e) => store.note(format!("VLM failed: {e}")),
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// Final fusion Φ: votes of the weighted evidence over the hypothesis region pick a
    /// keypoint on the actionable region; the segmenter, prompted with the hypothesis box
    /// and that point, gives the final mask. If its answer disagrees with the hypothesis
    /// (IoU below `corroboration_iou`), the hypothesis region is kept instead.
    fn fuse(
        &self,
        store: &mut EvidenceStore,
        task: &GroundingTask<'_>,
        d: &Diagnostics,
    ) -> Result<(Mask, Option<(f32, f32)>), AffordanceError> {
        let (w, h) = (task.view.width(), task.view.height());
        let Some(hyp) = d.hypothesis else {
            return Ok((Mask::empty(w, h), None));
        };
        let recs = store.records();
        let h_mask = record_mask(&recs[hyp], w, h);
        let Some(h_rect) = h_mask.bounding_rect() else {
            return Ok((Mask::empty(w, h), None));
        };
        let cfg = self.rule.config();
        let weights: Vec<f64> = if d.weights.iter().any(|&x| x > 0.0) {
            d.weights.clone()
        } else {
            recs.iter().map(|r| f64::from(r.confidence)).collect()
        };
        let masks: Vec<Mask> = recs.iter().map(|r| record_mask(r, w, h)).collect();
        let mut best: Option<(f64, f32, (u32, u32))> = None;
        let (mut sx, mut sy, mut sw) = (0.0f64, 0.0f64, 0.0f64);
        let mut votes = Vec::new();
        for (x, y) in h_mask.set_pixels() {
            let v: f64 = masks
                .iter()
                .zip(&weights)
                .filter(|(m, _)| m.get(x, y))
                .map(|(_, w)| *w)
                .sum();
            sx += v * f64::from(x);
            sy += v * f64::from(y);
            sw += v;
            votes.push((x, y, v));
        }
        let (cx, cy) = if sw > 0.0 {
            (sx / sw, sy / sw)
        } else {
            h_rect.to_box().center().into_f64()
        };
        for (x, y, v) in votes {
            let dist = (f64::from(x) - cx).hypot(f64::from(y) - cy) as f32;
            let better = match best {
                None => true,
                Some((bv, bd, _)) => v > bv + 1e-12 || ((v - bv).abs() <= 1e-12 && dist < bd),
            };
            if better {
                best = Some((v, dist, (x, y)));
            }
        }
        let Some((_, _, (kx, ky))) = best else {
            return Ok((h_mask, None));
        };
        let (px, py) = (kx as f32 + 0.5, ky as f32 + 0.5);
        let prompt = Prompt::BoxAndPoint {
            bbox: h_rect.to_box(),
            x: px,
            y: py,
        };
        store.count_fusion();
        let fused = match self
            .models
            .segmenter
            .segment_prompt(&task.view.observation, &prompt)
        {
            Ok(seg) => seg.mask,
            Err(e) if recoverable(&e) => return Ok((h_mask, Some((px, py)))),
            Err(e) => return Err(e.into()),
        };
        let agree = fused.iou(&h_mask).map(f64::from).unwrap_or(0.0);
        let mask = if agree >= cfg.corroboration_iou {
            fused
        } else {
            h_mask
        };
        Ok((mask, Some((px, py))))
    }
}

trait IntoF64 {
    fn into_f64(self) -> (f64, f64);
}

impl IntoF64 for (f32, f32) {
    fn into_f64(self) -> (f64, f64) {
        (f64::from(self.0), f64::from(self.1))
    }
}
