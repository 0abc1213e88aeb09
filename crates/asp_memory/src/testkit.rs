//! Helpers shared by the tests and the crash-test writer: a real acceptance from the
//! commit rule, and episode drafts with embeddings derived from an index.

use std::collections::BTreeMap;

use asp_config::sections::verifier::GateConfig;
use asp_core::{Box2, Cost, EvidencePayload, EvidenceRecord, Mask, Skill};
use asp_verify::{Acceptance, CommitRule, GateDecision, RetryContext, producer};

use crate::{EpisodeDraft, EvidenceSummary, ParamRange};

/// Evidence records of a clean detection (box and mask agree) on a 32×32 view.
pub fn clean_evidence() -> Vec<EvidenceRecord> {
    let b = Box2::new(8.0, 8.0, 20.0, 20.0);
    let rec = |payload, producer: &str, confidence| EvidenceRecord {
        payload,
        roi: Box2::new(0.0, 0.0, 32.0, 32.0),
        scale: 1.0,
        producer: producer.into(),
        cost: Cost::default(),
        step: 0,
        confidence,
    };
    vec![
        rec(EvidencePayload::Box(b), producer::DETECTOR, 0.9),
        rec(
            EvidencePayload::Mask(Mask::fill_box(32, 32, &b)),
            producer::SEGMENTER,
            0.9,
        ),
    ]
}

/// An acceptance earned the only way there is: the commit rule on evidence. `None` when
/// the evidence does not pass.
pub fn acceptance_for(records: &[EvidenceRecord]) -> Option<Acceptance> {
    let rule = CommitRule::new(GateConfig::default());
    match rule.evaluate(records, 32, 32, &RetryContext::default()).1 {
        GateDecision::Commit { acceptance } => Some(acceptance),
        GateDecision::Retry { .. } => None,
    }
}

/// A draft whose embedding points in a direction determined by `i` (dimension 8) and
/// whose parameters and actions encode `i`, so a reader can tell episodes apart.
pub fn draft(i: u64, category: &str) -> EpisodeDraft {
    let mut embedding: Vec<f32> = (0..8)
        .map(|d| ((i as f32 + 1.0) * (d as f32 + 1.0) * 0.37).sin())
        .collect();
    asp_core::map::normalize(&mut embedding);
    EpisodeDraft {
        embedding,
        category: category.into(),
        part: "handle".into(),
        skill: Skill::GraspPart,
        actions: vec!["detection".into(), format!("episode_{i}")],
        parameters: BTreeMap::from([(
            "zoom".to_owned(),
            ParamRange {
                lo: 2.0,
                hi: 2.0 + (i % 5) as f32,
            },
        )]),
        evidence: EvidenceSummary {
            text: format!("episode {i}"),
            diagnostics: asp_verify::DiagnosticsSummary {
                omega: 1.0,
                zeta: 1.0,
                mu: 1.0,
                v: 0.9,
            },
            skill_calls: 1,
        },
        reference_mask: None,
    }
}
