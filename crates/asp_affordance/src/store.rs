//! The evidence store with provenance (SPEC §2.2): every record ⟨type, payload, ROI,
//! scale, producer, cost, step⟩, and a log of the skill calls that produced them.

use asp_core::{Cost, EvidencePayload, EvidenceRecord, ProducerId};
use asp_verify::{Deficiency, RetryAction};
use serde::{Deserialize, Serialize};

/// A perception skill call of the harness (SPEC §2.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SkillCall {
    /// VLM box for the part, then the box-prompted mask (one call: SPEC §1.5 step 2).
    Detection,
    /// Re-segmentation in a refined ROI.
    RefineSegment,
    /// Zoom, re-detect and re-segment in the zoomed crop.
    ZoomRedetect,
    Imagination,
    WebSearch,
}

impl SkillCall {
    pub fn name(self) -> &'static str {
        match self {
            Self::Detection => "detection",
            Self::RefineSegment => "refine_segment",
            Self::ZoomRedetect => "zoom_redetect",
            Self::Imagination => "imagination",
            Self::WebSearch => "web_search",
        }
    }
}

impl From<RetryAction> for SkillCall {
    fn from(a: RetryAction) -> Self {
        match a {
            RetryAction::RefineSegment => Self::RefineSegment,
            RetryAction::ZoomRedetect => Self::ZoomRedetect,
            RetryAction::Imagination => Self::Imagination,
            RetryAction::WebSearch => Self::WebSearch,
        }
    }
}

/// One skill call and what it added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActionLog {
    pub step: u32,
    pub skill: SkillCall,
    /// Indices of the records it added.
    pub records: Vec<usize>,
    pub note: String,
    /// The router asked the LLM for this choice.
    pub by_llm: bool,
    /// For retries: the deficiency being repaired, and whether the action was the
    /// verifier's proposal Γ(ℓ).
    pub deficiency: Option<Deficiency>,
    pub proposed: bool,
}

/// Records and the calls that made them, for one grounding.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvidenceStore {
    records: Vec<EvidenceRecord>,
    log: Vec<ActionLog>,
    cost: Cost,
    /// Segmentations of the final fusion (outside the budget).
    fusion_segmentations: u32,
}

impl EvidenceStore {
    pub fn new() -> Self {
        Self::default()
    }

    pub fn records(&self) -> &[EvidenceRecord] {
        &self.records
    }

    pub fn log(&self) -> &[ActionLog] {
        &self.log
    }

    /// Skill calls spent (the budget's unit).
    pub fn skill_calls(&self) -> u32 {
        self.cost.skill_calls
    }

    pub fn cost(&self) -> Cost {
        self.cost
    }

    pub fn fusion_segmentations(&self) -> u32 {
        self.fusion_segmentations
    }

    pub(crate) fn count_fusion(&mut self) {
        self.fusion_segmentations += 1;
    }

    /// Records why the last call was made.
    pub(crate) fn mark_decision(&mut self, deficiency: Deficiency, proposed: bool) {
        if let Some(l) = self.log.last_mut() {
            l.deficiency = Some(deficiency);
            l.proposed = proposed;
        }
    }

    /// Opens the next step (one skill call) and returns its number.
    pub(crate) fn begin(&mut self, skill: SkillCall, by_llm: bool) -> u32 {
        let step = self.log.len() as u32;
        self.log.push(ActionLog {
            step,
            skill,
            records: Vec::new(),
            note: String::new(),
            by_llm,
            deficiency: None,
            proposed: false,
        });
        self.cost += Cost {
            skill_calls: 1,
            ..Cost::default()
        };
        step
    }

    /// Adds a record to the current step.
    pub(crate) fn add(&mut self, record: EvidenceRecord) -> usize {
        self.cost += record.cost;
        self.records.push(record);
        let i = self.records.len() - 1;
        if let Some(l) = self.log.last_mut() {
            l.records.push(i);
        }
        i
    }

    pub(crate) fn note(&mut self, note: impl Into<String>) {
        if let Some(l) = self.log.last_mut() {
            if !l.note.is_empty() {
                l.note.push_str("; ");
            }
            l.note.push_str(&note.into());
        }
    }

    /// The skills called so far, in order.
    pub fn actions(&self) -> Vec<SkillCall> {
        self.log.iter().map(|l| l.skill).collect()
    }

    /// The distinct producers, in order of first appearance.
    pub fn producers(&self) -> Vec<ProducerId> {
        let mut out: Vec<ProducerId> = Vec::new();
        for r in &self.records {
            if !out.contains(&r.producer) {
                out.push(r.producer.clone());
            }
        }
        out
    }

    /// One line per record: producer, type, confidence, scale, step.
    pub fn summary_lines(&self) -> Vec<String> {
        self.records
            .iter()
            .map(|r| {
                let what = match &r.payload {
                    EvidencePayload::Box(b) => {
                        format!("box [{:.0}, {:.0}, {:.0}, {:.0}]", b.x0, b.y0, b.x1, b.y1)
                    }
                    EvidencePayload::Mask(m) => format!("mask of {} px", m.area()),
                    EvidencePayload::Point { x, y } => format!("point ({x:.0}, {y:.0})"),
                    EvidencePayload::Text(t) => format!("text {t:?}"),
                    EvidencePayload::Image(_) => "image".to_owned(),
                };
                format!(
                    "step {} {}: {what}, confidence {:.2}, scale {:.1}",
                    r.step, r.producer, r.confidence, r.scale
                )
            })
            .collect()
    }
}
