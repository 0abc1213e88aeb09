//! What the memory stores: common-sense priors, verifier-accepted episodes and the
//! experience capsules evicted episodes are compressed into (SPEC §2.3).

use std::collections::BTreeMap;

use asp_core::{Mask, Skill};
use asp_verify::DiagnosticsSummary;
use serde::{Deserialize, Serialize};

use crate::MemoryError;

/// A run-length encoded binary mask: alternating runs starting with `false`, row-major.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompactMask {
    pub width: u32,
    pub height: u32,
    pub runs: Vec<u32>,
}

impl CompactMask {
    pub fn from_mask(mask: &Mask) -> Self {
        let mut runs = Vec::new();
        let mut current = false;
        let mut len = 0u32;
        for &p in mask.image().pixels() {
            if p == current {
                len += 1;
            } else {
                runs.push(len);
                current = p;
                len = 1;
            }
        }
        runs.push(len);
        Self {
            width: mask.width(),
            height: mask.height(),
            runs,
        }
    }

    pub fn to_mask(&self) -> Result<Mask, MemoryError> {
        let total: u64 = self.runs.iter().map(|&r| u64::from(r)).sum();
        let expected = u64::from(self.width) * u64::from(self.height);
        if total != expected {
            return Err(MemoryError::Corrupt(format!(
                "reference mask runs cover {total} pixels, {}×{} needs {expected}",
                self.width, self.height
            )));
        }
        let mut data = Vec::with_capacity(expected as usize);
        for (i, &r) in self.runs.iter().enumerate() {
            data.extend(std::iter::repeat_n(i % 2 == 1, r as usize));
        }
        asp_core::Image::from_vec(self.width, self.height, data)
            .map(Mask::from_image)
            .map_err(|e| MemoryError::Corrupt(e.to_string()))
    }
}

/// A closed range of a numeric parameter, e.g. the zoom factor that worked.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ParamRange {
    pub lo: f32,
    pub hi: f32,
}

impl ParamRange {
    pub fn point(v: f32) -> Self {
        Self { lo: v, hi: v }
    }
    pub fn mid(&self) -> f32 {
        (self.lo + self.hi) / 2.0
    }
}

/// A curated prior about one part of one object category (M_cs).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommonSensePrior {
    pub category: String,
    pub part: String,
    pub skill: Skill,
    #[serde(default)]
    pub description: String,
    /// Where the part usually lies in the object's bounding box, `[x0, y0, x1, y1]` in
    /// `[0, 1]`.
    #[serde(default)]
    pub relative_box: Option<[f32; 4]>,
    /// Trust in `relative_box`, in `[0, 1]`.
    #[serde(default = "default_prior_confidence")]
    pub confidence: f32,
    #[serde(default)]
    pub keywords: Vec<String>,
    /// A reference mask in the object's normalised box, when one was curated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference_mask: Option<CompactMask>,
    /// Text embedding of "category part", when an embedder filled it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub embedding: Option<Vec<f32>>,
}

fn default_prior_confidence() -> f32 {
    0.4
}

impl CommonSensePrior {
    /// Checks ranges; the error names the prior and the field.
    pub fn validate(&self) -> Result<(), MemoryError> {
        let name = format!("{}/{}", self.category, self.part);
        if self.category.trim().is_empty() || self.part.trim().is_empty() {
            return Err(MemoryError::InvalidPrior {
                prior: name,
                problem: "category and part must not be empty".into(),
            });
        }
        if let Some(b) = self.relative_box
            && !(b.iter().all(|v| (0.0..=1.0).contains(v)) && b[0] < b[2] && b[1] < b[3])
        {
            return Err(MemoryError::InvalidPrior {
                prior: name,
                problem: format!(
                    "relative_box {b:?} must be [x0, y0, x1, y1] in [0, 1] with x0 < x1, y0 < y1"
                ),
            });
        }
        if !(0.0..=1.0).contains(&self.confidence) {
            return Err(MemoryError::InvalidPrior {
                prior: name,
                problem: format!("confidence {} must be in [0, 1]", self.confidence),
            });
        }
        Ok(())
    }
}

/// The seed file layout: `priors: [ … ]`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SeedFile {
    pub priors: Vec<CommonSensePrior>,
}

impl SeedFile {
    /// Reads and validates a seed file; errors name the file and the offending entry.
    pub fn load(path: &std::path::Path) -> Result<SeedFile, MemoryError> {
        let text = std::fs::read_to_string(path).map_err(|e| MemoryError::Seed {
            file: path.display().to_string(),
            problem: e.to_string(),
        })?;
        Self::parse(&text).map_err(|e| match e {
            MemoryError::Seed { problem, .. } => MemoryError::Seed {
                file: path.display().to_string(),
                problem,
            },
            other => MemoryError::Seed {
                file: path.display().to_string(),
                problem: other.to_string(),
            },
        })
    }

    pub fn parse(text: &str) -> Result<SeedFile, MemoryError> {
        let seed: SeedFile = serde_yaml_ng::from_str(text).map_err(|e| MemoryError::Seed {
            file: "<text>".into(),
            problem: e.to_string(),
        })?;
        for p in &seed.priors {
            p.validate()?;
        }
        Ok(seed)
    }
}

/// The text of a grounding's evidence and its diagnostics, kept with an episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EvidenceSummary {
    /// e.g. "detector/vlm_box box 0.82; segmenter/box_prompt mask 0.91".
    pub text: String,
    pub diagnostics: DiagnosticsSummary,
    pub skill_calls: u32,
}

/// What the harness hands over to remember an accepted grounding.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EpisodeDraft {
    /// `g = normalize(f_visual ‖ f_text)`, see [`joint_embedding`].
    pub embedding: Vec<f32>,
    pub category: String,
    pub part: String,
    pub skill: Skill,
    /// The action sequence u_1:T (skill names, in order).
    pub actions: Vec<String>,
    pub parameters: BTreeMap<String, ParamRange>,
    pub evidence: EvidenceSummary,
    pub reference_mask: Option<CompactMask>,
}

/// A verifier-accepted episode in M_tt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Episode {
    /// Monotonic: a smaller id is older.
    pub id: u64,
    pub embedding: Vec<f32>,
    pub category: String,
    pub part: String,
    pub skill: Skill,
    pub actions: Vec<String>,
    pub parameters: BTreeMap<String, ParamRange>,
    pub evidence: EvidenceSummary,
    /// Outcome score ρ: the verifier score v the episode was accepted with.
    pub outcome: f64,
    pub reference_mask: Option<CompactMask>,
}

/// A robust summary of one parameter over the episodes a capsule absorbed.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RobustRange {
    /// 10th percentile of the kept samples.
    pub lo: f32,
    pub median: f32,
    /// 90th percentile.
    pub hi: f32,
    /// Samples behind it (at most the capsule's sample budget).
    pub samples: u32,
}

/// What remains of evicted episodes: one capsule per (category, part, skill).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capsule {
    pub id: u64,
    pub category: String,
    pub part: String,
    pub skill: Skill,
    /// Mean of the absorbed episodes' embeddings, renormalised.
    pub embedding: Vec<f32>,
    pub episodes: u32,
    pub mean_outcome: f64,
    /// The action sequence of the best-scoring absorbed episode.
    pub best_actions: Vec<String>,
    pub best_outcome: f64,
    pub parameters: BTreeMap<String, RobustRange>,
    /// Recent parameter samples (midpoints of the episodes' ranges), bounded.
    pub samples: BTreeMap<String, Vec<f32>>,
    /// Episode ids absorbed, oldest and newest.
    pub first_episode: u64,
    pub last_episode: u64,
    pub summary: String,
}

impl Capsule {
    pub(crate) fn key(category: &str, part: &str, skill: Skill) -> String {
        format!(
            "{}|{}|{}",
            normalise(category),
            normalise(part),
            skill.name()
        )
    }

    /// Folds an evicted episode in, keeping at most `max_samples` per parameter.
    pub(crate) fn absorb(
        capsule: Option<Capsule>,
        id: u64,
        e: &Episode,
        max_samples: usize,
    ) -> Capsule {
        let mut c = capsule.unwrap_or_else(|| Capsule {
            id,
            category: e.category.clone(),
            part: e.part.clone(),
            skill: e.skill,
            embedding: vec![0.0; e.embedding.len()],
            episodes: 0,
            mean_outcome: 0.0,
            best_actions: Vec::new(),
            best_outcome: f64::NEG_INFINITY,
            parameters: BTreeMap::new(),
            samples: BTreeMap::new(),
            first_episode: e.id,
            last_episode: e.id,
            summary: String::new(),
        });
        let n = f64::from(c.episodes);
        if c.embedding.len() == e.embedding.len() {
            let w = c.episodes as f32;
            for (a, b) in c.embedding.iter_mut().zip(&e.embedding) {
                *a = (*a * w + b) / (w + 1.0);
            }
            asp_core::map::normalize(&mut c.embedding);
        }
        c.mean_outcome = (c.mean_outcome * n + e.outcome) / (n + 1.0);
        c.episodes += 1;
        if e.outcome > c.best_outcome {
            c.best_outcome = e.outcome;
            c.best_actions = e.actions.clone();
        }
        c.first_episode = c.first_episode.min(e.id);
        c.last_episode = c.last_episode.max(e.id);
        for (name, range) in &e.parameters {
            let s = c.samples.entry(name.clone()).or_default();
            s.push(range.mid());
            if s.len() > max_samples {
                let excess = s.len() - max_samples;
                s.drain(..excess);
            }
        }
        c.parameters = c
            .samples
            .iter()
            .map(|(k, v)| (k.clone(), robust_range(v)))
            .collect();
        let params: Vec<String> = c
            .parameters
            .iter()
            .map(|(k, r)| format!("{k} {:.2}..{:.2}", r.lo, r.hi))
            .collect();
        c.summary = format!(
            "{} {} with {}: {} accepted episodes, mean v {:.2}; best sequence [{}]; {}",
            c.category,
            c.part,
            c.skill,
            c.episodes,
            c.mean_outcome,
            c.best_actions.join(", "),
            if params.is_empty() {
                "no parameters".to_owned()
            } else {
                params.join(", ")
            }
        );
        c
    }
}

/// 10th percentile, median and 90th percentile (nearest rank) of `samples`.
pub fn robust_range(samples: &[f32]) -> RobustRange {
    let mut s: Vec<f32> = samples.iter().copied().filter(|v| v.is_finite()).collect();
    s.sort_by(f32::total_cmp);
    if s.is_empty() {
        return RobustRange {
            lo: 0.0,
            median: 0.0,
            hi: 0.0,
            samples: 0,
        };
    }
    let at = |q: f64| s[((q * (s.len() - 1) as f64).round() as usize).min(s.len() - 1)];
    RobustRange {
        lo: at(0.1),
        median: at(0.5),
        hi: at(0.9),
        samples: s.len() as u32,
    }
}

/// `normalize(normalize(f_visual) ‖ normalize(f_text))`: both halves weigh the same.
pub fn joint_embedding(visual: &[f32], text: &[f32]) -> Vec<f32> {
    let mut v = visual.to_vec();
    let mut t = text.to_vec();
    asp_core::map::normalize(&mut v);
    asp_core::map::normalize(&mut t);
    v.extend_from_slice(&t);
    asp_core::map::normalize(&mut v);
    v
}

/// Lowercase words, without articles.
pub(crate) fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !matches!(w.as_str(), "the" | "a" | "an" | "of" | "on" | "its"))
        .collect()
}

pub(crate) fn normalise(s: &str) -> String {
    tokens(s).join(" ")
}

/// One retrieval hit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "tier", rename_all = "snake_case")]
pub enum Recalled {
    Episode { similarity: f32, episode: Episode },
    Capsule { similarity: f32, capsule: Capsule },
}

impl Recalled {
    pub fn similarity(&self) -> f32 {
        match self {
            Recalled::Episode { similarity, .. } | Recalled::Capsule { similarity, .. } => {
                *similarity
            }
        }
    }
    /// The action sequence this memory suggests and how well it did (ρ).
    pub fn actions(&self) -> (&[String], f64) {
        match self {
            Recalled::Episode { episode, .. } => (&episode.actions, episode.outcome),
            Recalled::Capsule { capsule, .. } => (&capsule.best_actions, capsule.best_outcome),
        }
    }
    /// A one-line description for prompts and logs.
    pub fn describe(&self) -> String {
        match self {
            Recalled::Episode {
                similarity,
                episode,
            } => format!(
                "episode {} (sim {:.2}): {} {} via {} [{}], v {:.2}",
                episode.id,
                similarity,
                episode.category,
                episode.part,
                episode.skill,
                episode.actions.join(", "),
                episode.outcome
            ),
            Recalled::Capsule {
                similarity,
                capsule,
            } => {
                format!(
                    "capsule {} (sim {:.2}): {}",
                    capsule.id, similarity, capsule.summary
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use asp_core::Box2;

    #[test]
    fn compact_mask_round_trips() {
        let mut m = Mask::fill_box(7, 5, &Box2::new(1.0, 1.0, 4.0, 3.0));
        m.set(6, 4, true);
        let c = CompactMask::from_mask(&m);
        assert_eq!(c.to_mask().unwrap(), m);
        let full = Mask::fill_box(3, 3, &Box2::new(0.0, 0.0, 3.0, 3.0));
        let c = CompactMask::from_mask(&full);
        assert_eq!(c.runs, vec![0, 9]);
        assert_eq!(c.to_mask().unwrap(), full);
        let bad = CompactMask {
            width: 3,
            height: 3,
            runs: vec![1, 2],
        };
        assert!(bad.to_mask().unwrap_err().to_string().contains("3 pixels"));
    }

    #[test]
    fn robust_range_uses_nearest_rank_percentiles() {
        let s: Vec<f32> = (1..=11).map(|v| v as f32).collect();
        let r = robust_range(&s);
        assert_eq!((r.lo, r.median, r.hi, r.samples), (2.0, 6.0, 10.0, 11));
        // an outlier does not move the range
        let mut s2 = s.clone();
        s2.push(1000.0);
        assert!(robust_range(&s2).hi < 100.0);
    }

    #[test]
    fn joint_embedding_weighs_both_halves() {
        let g = joint_embedding(&[3.0, 0.0], &[0.0, 10.0]);
        let h = std::f32::consts::FRAC_1_SQRT_2;
        assert!((g[0] - h).abs() < 1e-6 && (g[3] - h).abs() < 1e-6);
        assert_eq!(g.len(), 4);
    }

    #[test]
    fn seed_validation_names_the_prior() {
        let err = SeedFile::parse("priors:\n  - {category: mug, part: handle, skill: grasp_part, relative_box: [0.8, 0, 0.2, 1]}\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("mug/handle") && err.contains("relative_box"),
            "{err}"
        );
        let err = SeedFile::parse("priors:\n  - {category: mug, part: handle, skill: teleport}\n")
            .unwrap_err();
        assert!(err.to_string().contains("teleport"), "{err}");
    }
}
