//! Evidence records with provenance (SPEC §2.2): ⟨type, payload, ROI, scale, producer,
//! cost, step⟩.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::image::{Box2, Mask, RgbImage};

/// The kind of an evidence record (τ).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EvidenceType {
    Box,
    Mask,
    Point,
    Text,
    Image,
}

/// The payload (p) of a record; its variant is the record's type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "data", rename_all = "snake_case")]
pub enum EvidencePayload {
    /// A box in full-image pixel coordinates.
    Box(Box2),
    /// A full-image mask.
    Mask(Mask),
    /// A keypoint in full-image pixel coordinates.
    Point { x: f32, y: f32 },
    /// Text, such as web-search keywords or a VLM's description.
    Text(String),
    /// An image, such as an imagined view or a web collage.
    Image(RgbImage),
}

impl EvidencePayload {
    pub fn evidence_type(&self) -> EvidenceType {
        match self {
            EvidencePayload::Box(_) => EvidenceType::Box,
            EvidencePayload::Mask(_) => EvidenceType::Mask,
            EvidencePayload::Point { .. } => EvidenceType::Point,
            EvidencePayload::Text(_) => EvidenceType::Text,
            EvidencePayload::Image(_) => EvidenceType::Image,
        }
    }
}

/// Identifies the skill or model that produced a record (ι), e.g. `detector/vlm_box`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct ProducerId(pub String);

impl fmt::Display for ProducerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ProducerId {
    fn from(s: &str) -> Self {
        ProducerId(s.to_owned())
    }
}

/// What producing a record cost (c): skill calls are the primary budget, the rest are
/// tracked as secondary costs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Cost {
    pub skill_calls: u32,
    pub latency_s: f64,
    pub tokens: u64,
    pub money_usd: f64,
}

impl std::ops::AddAssign for Cost {
    fn add_assign(&mut self, o: Cost) {
        self.skill_calls += o.skill_calls;
        self.latency_s += o.latency_s;
        self.tokens += o.tokens;
        self.money_usd += o.money_usd;
    }
}

/// One piece of evidence ξ.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceRecord {
    pub payload: EvidencePayload,
    /// Region of interest the producer looked at, full-image pixels (r).
    pub roi: Box2,
    /// Zoom relative to the full image, 1.0 = native (λ).
    pub scale: f32,
    pub producer: ProducerId,
    pub cost: Cost,
    /// Loop iteration that produced it (t).
    pub step: u32,
    /// The producer's self-confidence ρ in `[0, 1]`.
    pub confidence: f32,
}

impl EvidenceRecord {
    pub fn evidence_type(&self) -> EvidenceType {
        self.payload.evidence_type()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_follows_payload_and_survives_serde() {
        let r = EvidenceRecord {
            payload: EvidencePayload::Box(Box2::new(1.0, 2.0, 3.0, 4.0)),
            roi: Box2::new(0.0, 0.0, 10.0, 10.0),
            scale: 2.0,
            producer: "detector/vlm_box".into(),
            cost: Cost {
                skill_calls: 1,
                ..Cost::default()
            },
            step: 0,
            confidence: 0.9,
        };
        assert_eq!(r.evidence_type(), EvidenceType::Box);
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["payload"]["type"], "box");
        let back: EvidenceRecord = serde_json::from_value(json).unwrap();
        assert_eq!(back, r);
        let mut c = Cost::default();
        c += r.cost;
        c += r.cost;
        assert_eq!(c.skill_calls, 2);
    }
}
