//! The A-Harness commit rule (SPEC §2.5): commit iff `v ≥ δ ∧ ω ≥ ω_floor`; otherwise
//! the dominant deficiency `ℓ = argmax_j (floor_j − j)₊` picks a targeted retry Γ(ℓ).
//!
//! An [`Acceptance`] is the only proof that a grounding passed the rule. It is made only
//! by [`CommitRule::evaluate`] from evidence records, cannot be cloned or deserialised,
//! and is what the episodic memory demands before it writes anything back.
//!
//! ```compile_fail
//! // an acceptance cannot be read off the wire …
//! let a: asp_verify::Acceptance = serde_json::from_str("{}").unwrap();
//! ```
//! ```compile_fail
//! // … nor copied to license a second write-back
//! fn copy(a: &asp_verify::Acceptance) -> asp_verify::Acceptance { a.clone() }
//! ```

use asp_config::sections::verifier::GateConfig;
use asp_core::EvidenceRecord;
use serde::{Deserialize, Serialize};

use crate::diagnostics::{Diagnostics, DiagnosticsSummary, diagnose};

/// A diagnostic below its floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Deficiency {
    /// ω: the localiser and the segmenter disagree.
    Consistency,
    /// ζ: predictions change with the zoom.
    Stability,
    /// μ: too little confident, corroborated evidence supports the hypothesis.
    Sufficiency,
}

impl Deficiency {
    pub const ALL: [Deficiency; 3] = [Self::Consistency, Self::Stability, Self::Sufficiency];

    pub fn symbol(self) -> &'static str {
        match self {
            Self::Consistency => "omega",
            Self::Stability => "zeta",
            Self::Sufficiency => "mu",
        }
    }
}

/// The perception skills a retry can call (SPEC §2.1), each aimed at one diagnostic.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RetryAction {
    /// Refine the ROI around the hypothesis and re-segment (targets ω).
    RefineSegment,
    /// Zoom 2× around the hypothesis and re-detect (targets ζ).
    ZoomRedetect,
    /// Interaction imagination from a common-sense prior (targets μ).
    Imagination,
    /// Web-search keywords, then re-detect (targets μ).
    WebSearch,
}

impl RetryAction {
    pub const ALL: [RetryAction; 4] = [
        Self::RefineSegment,
        Self::ZoomRedetect,
        Self::Imagination,
        Self::WebSearch,
    ];

    /// The diagnostic the action is expected to raise.
    pub fn target(self) -> Deficiency {
        match self {
            Self::RefineSegment => Deficiency::Consistency,
            Self::ZoomRedetect => Deficiency::Stability,
            Self::Imagination | Self::WebSearch => Deficiency::Sufficiency,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Self::RefineSegment => "refine_segment",
            Self::ZoomRedetect => "zoom_redetect",
            Self::Imagination => "imagination",
            Self::WebSearch => "web_search",
        }
    }
}

/// How far each diagnostic falls short, the quantity `(τ_j − j)₊` the router scales.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Gaps {
    pub omega: f64,
    pub zeta: f64,
    pub mu: f64,
    /// True when the gaps are shortfalls below the floors; false when every diagnostic
    /// meets its floor but `v < δ`, and the gaps are the weighted distances to 1
    /// (`α(1−ω)`, `β(1−ζ)`, `γ(1−μ)`) instead, each kept only when repairing that
    /// diagnostic alone could lift `v` to `δ` (a retry that cannot is not worth a call).
    pub below_floor: bool,
}

impl Gaps {
    pub fn of(d: &Diagnostics, cfg: &GateConfig) -> Gaps {
        let f = &cfg.floors;
        let below = Gaps {
            omega: (f.omega - d.omega).max(0.0),
            zeta: (f.zeta - d.zeta).max(0.0),
            mu: (f.mu - d.mu).max(0.0),
            below_floor: true,
        };
        if below.omega > 0.0 || below.zeta > 0.0 || below.mu > 0.0 {
            below
        } else {
            let needed = (cfg.delta - d.v).max(0.0);
            let reach = |g: f64| if g >= needed { g } else { 0.0 };
            Gaps {
                omega: reach(cfg.alpha * (1.0 - d.omega).max(0.0)),
                zeta: reach(cfg.beta * (1.0 - d.zeta).max(0.0)),
                mu: reach(cfg.gamma * (1.0 - d.mu).max(0.0)),
                below_floor: false,
            }
        }
    }

    pub fn get(&self, d: Deficiency) -> f64 {
        match d {
            Deficiency::Consistency => self.omega,
            Deficiency::Stability => self.zeta,
            Deficiency::Sufficiency => self.mu,
        }
    }
}

/// `ℓ = argmax_j (floor_j − j)₊` (ties in the order ω, ζ, μ). Without any hypothesis the
/// deficiency is sufficiency: nothing was found, so more evidence is needed (VLA²: a
/// detector that finds nothing calls for a complementary source).
pub fn dominant_deficiency(d: &Diagnostics, cfg: &GateConfig) -> (Deficiency, Gaps) {
    let gaps = Gaps::of(d, cfg);
    if d.hypothesis.is_none() {
        return (Deficiency::Sufficiency, gaps);
    }
    let mut best = Deficiency::Consistency;
    for k in Deficiency::ALL {
        if gaps.get(k) > gaps.get(best) {
            best = k;
        }
    }
    (best, gaps)
}

/// What Γ needs to know besides the deficiency.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RetryContext {
    /// The object category has a common-sense prior (imagination applies).
    pub familiar: bool,
    /// Actions already run in this grounding.
    pub used: Vec<RetryAction>,
    /// Actions with an implementation (imagination and web search may be absent).
    pub available: Vec<RetryAction>,
}

/// Γ(ℓ): ω → refine and re-segment; ζ → zoom 2× and re-detect; μ → a complementary
/// skill not used yet, imagination for familiar categories and web search otherwise
/// (the other one when the preferred one is absent or used). `None` when no
/// complementary skill is left.
pub fn targeted_retry(deficiency: Deficiency, ctx: &RetryContext) -> Option<RetryAction> {
    match deficiency {
        Deficiency::Consistency => Some(RetryAction::RefineSegment),
        Deficiency::Stability => Some(RetryAction::ZoomRedetect),
        Deficiency::Sufficiency => {
            let order = if ctx.familiar {
                [RetryAction::Imagination, RetryAction::WebSearch]
            } else {
                [RetryAction::WebSearch, RetryAction::Imagination]
            };
            order
                .into_iter()
                .find(|a| ctx.available.contains(a) && !ctx.used.contains(a))
        }
    }
}

/// Proof that an evidence set passed the commit rule. Made only by
/// [`CommitRule::evaluate`]; not `Clone`, not `Deserialize`.
#[derive(Debug, PartialEq, Serialize)]
pub struct Acceptance {
    summary: DiagnosticsSummary,
    delta: f64,
}

impl Acceptance {
    pub fn summary(&self) -> DiagnosticsSummary {
        self.summary
    }
    pub fn v(&self) -> f64 {
        self.summary.v
    }
    /// The threshold δ it was accepted under.
    pub fn delta(&self) -> f64 {
        self.delta
    }
}

/// The outcome of the commit rule on one evidence set.
#[derive(Debug, PartialEq, Serialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum GateDecision {
    Commit {
        acceptance: Acceptance,
    },
    Retry {
        deficiency: Deficiency,
        gaps: Gaps,
        /// Γ(ℓ); `None` when the deficiency has no untried remedy.
        proposal: Option<RetryAction>,
    },
}

impl GateDecision {
    pub fn is_commit(&self) -> bool {
        matches!(self, GateDecision::Commit { .. })
    }
}

/// `commit iff v ≥ δ ∧ ω ≥ ω_floor`, with every constant from [`GateConfig`].
#[derive(Debug, Clone, PartialEq)]
pub struct CommitRule {
    cfg: GateConfig,
}

impl CommitRule {
    pub fn new(cfg: GateConfig) -> Self {
        Self { cfg }
    }

    pub fn config(&self) -> &GateConfig {
        &self.cfg
    }

    /// Whether diagnostics pass the rule (no proof object; see [`CommitRule::evaluate`]).
    pub fn passes(&self, omega: f64, v: f64) -> bool {
        v >= self.cfg.delta && omega >= self.cfg.floors.omega
    }

    /// Scores `records` on a `width × height` image and applies the rule.
    pub fn evaluate(
        &self,
        records: &[EvidenceRecord],
        width: u32,
        height: u32,
        ctx: &RetryContext,
    ) -> (Diagnostics, GateDecision) {
        let d = diagnose(records, width, height, &self.cfg);
        let decision = if d.hypothesis.is_some() && self.passes(d.omega, d.v) {
            GateDecision::Commit {
                acceptance: Acceptance {
                    summary: d.summary(),
                    delta: self.cfg.delta,
                },
            }
        } else {
            let (deficiency, gaps) = dominant_deficiency(&d, &self.cfg);
            GateDecision::Retry {
                deficiency,
                gaps,
                proposal: targeted_retry(deficiency, ctx),
            }
        };
        (d, decision)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::diagnostics::producer;
    use crate::diagnostics::verifier_score;
    use asp_core::{Box2, Cost, EvidencePayload, Mask};

    pub(crate) const W: u32 = 40;
    pub(crate) const H: u32 = 40;

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
    pub(crate) fn full() -> Box2 {
        Box2::new(0.0, 0.0, W as f32, H as f32)
    }
    pub(crate) fn det(b: Box2, conf: f32, scale: f32, step: u32) -> EvidenceRecord {
        rec(
            EvidencePayload::Box(b),
            producer::DETECTOR,
            full(),
            scale,
            conf,
            step,
        )
    }
    pub(crate) fn seg(b: Box2, conf: f32, scale: f32, step: u32) -> EvidenceRecord {
        rec(
            EvidencePayload::Mask(Mask::fill_box(W, H, &b)),
            producer::SEGMENTER,
            full(),
            scale,
            conf,
            step,
        )
    }
    fn all_available() -> RetryContext {
        RetryContext {
            familiar: true,
            used: vec![],
            available: RetryAction::ALL.to_vec(),
        }
    }

    #[test]
    fn clean_detection_commits_with_an_acceptance() {
        let rule = CommitRule::new(GateConfig::default());
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        let (d, decision) = rule.evaluate(
            &[det(b, 0.9, 1.0, 0), seg(b, 0.95, 1.0, 0)],
            W,
            H,
            &all_available(),
        );
        match decision {
            GateDecision::Commit { acceptance } => {
                assert!(acceptance.v() >= 0.8);
                assert_eq!(acceptance.summary(), d.summary());
                assert_eq!(acceptance.delta(), 0.8);
            }
            other => panic!("expected commit, got {other:?}"),
        }
    }

    #[test]
    fn moderate_inconsistency_asks_to_refine_and_resegment() {
        let rule = CommitRule::new(GateConfig::default());
        // the mask leaks below the box: 10×10 vs 10×17, ω = 100/170 ≈ 0.59 ≥ ω_floor, but
        // v = 0.29 + 0.3 + 0.2·σ(1) ≈ 0.74 < δ: no floor is broken, the weighted gap decides
        let (d, decision) = rule.evaluate(
            &[
                det(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9, 1.0, 0),
                seg(Box2::new(10.0, 10.0, 20.0, 27.0), 0.9, 1.0, 0),
            ],
            W,
            H,
            &all_available(),
        );
        assert!((d.omega - 100.0 / 170.0).abs() < 1e-9, "{}", d.omega);
        match decision {
            GateDecision::Retry {
                deficiency,
                proposal,
                gaps,
            } => {
                assert_eq!(deficiency, Deficiency::Consistency);
                assert_eq!(proposal, Some(RetryAction::RefineSegment));
                assert!(!gaps.below_floor);
                assert!((gaps.omega - 0.5 * (1.0 - 100.0 / 170.0)).abs() < 1e-9);
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn severe_inconsistency_also_empties_sufficiency() {
        // box and mask overlap at IoU 0.4: neither corroborates the other (φ = 0), so every
        // weight is zero and μ = 0; μ's gap (0.5) beats ω's (0.1): a complementary source
        // is asked to arbitrate
        let rule = CommitRule::new(GateConfig::default());
        let (d, decision) = rule.evaluate(
            &[
                det(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9, 1.0, 0),
                seg(Box2::new(10.0, 10.0, 20.0, 35.0), 0.9, 1.0, 0),
            ],
            W,
            H,
            &all_available(),
        );
        assert!((d.omega - 0.4).abs() < 1e-9);
        assert_eq!(d.mu, 0.0);
        let GateDecision::Retry {
            deficiency,
            proposal,
            ..
        } = decision
        else {
            panic!()
        };
        assert_eq!(deficiency, Deficiency::Sufficiency);
        assert_eq!(proposal, Some(RetryAction::Imagination));
    }

    #[test]
    fn stability_deficit_asks_to_zoom() {
        let rule = CommitRule::new(GateConfig::default());
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        // the zoomed detection lands on another region entirely
        let moved = Box2::new(26.0, 26.0, 36.0, 36.0);
        let recs = [
            det(b, 0.9, 1.0, 0),
            seg(b, 0.9, 1.0, 0),
            det(moved, 0.9, 2.0, 1),
            seg(moved, 0.9, 2.0, 1),
        ];
        let (d, decision) = rule.evaluate(&recs, W, H, &all_available());
        assert_eq!(d.zeta, 0.0);
        assert_eq!(d.omega, 1.0, "each scale is self-consistent");
        let GateDecision::Retry {
            deficiency,
            proposal,
            gaps,
        } = decision
        else {
            panic!("no commit expected")
        };
        // ψ = 0 empties μ too, but the ζ gap (0.7) beats the μ gap (0.5)
        assert_eq!((gaps.zeta, gaps.mu), (0.7, 0.5));
        assert_eq!(deficiency, Deficiency::Stability);
        assert_eq!(proposal, Some(RetryAction::ZoomRedetect));
    }

    #[test]
    fn sufficiency_deficit_asks_for_a_complementary_skill() {
        let rule = CommitRule::new(GateConfig::default());
        let b = Box2::new(10.0, 10.0, 20.0, 20.0);
        // ω = 100/130 ≈ 0.77 would commit with a confident localiser (v ≈ 0.83) …
        let leaky = Box2::new(10.0, 10.0, 20.0, 23.0);
        let mut ctx = all_available();
        let (_, decision) =
            rule.evaluate(&[det(b, 0.9, 1.0, 0), seg(leaky, 0.9, 1.0, 0)], W, H, &ctx);
        assert!(decision.is_commit());
        // … but the localiser is unsure (0.3 < confident_localizer): μ = 0, v ≈ 0.78
        let recs = [det(b, 0.3, 1.0, 0), seg(leaky, 0.9, 1.0, 0)];
        let (d, decision) = rule.evaluate(&recs, W, H, &ctx);
        assert_eq!(d.mu, 0.0);
        let GateDecision::Retry {
            deficiency,
            proposal,
            ..
        } = decision
        else {
            panic!("{d:?}")
        };
        assert_eq!(deficiency, Deficiency::Sufficiency);
        assert_eq!(
            proposal,
            Some(RetryAction::Imagination),
            "familiar category"
        );
        ctx.familiar = false;
        assert_eq!(
            targeted_retry(deficiency, &ctx),
            Some(RetryAction::WebSearch)
        );
        ctx.used = vec![RetryAction::WebSearch];
        assert_eq!(
            targeted_retry(deficiency, &ctx),
            Some(RetryAction::Imagination)
        );
        ctx.available = vec![
            RetryAction::RefineSegment,
            RetryAction::ZoomRedetect,
            RetryAction::WebSearch,
        ];
        assert_eq!(
            targeted_retry(deficiency, &ctx),
            None,
            "imagination absent, web used"
        );
    }

    #[test]
    fn nothing_found_is_a_sufficiency_deficit() {
        let rule = CommitRule::new(GateConfig::default());
        let (d, decision) = rule.evaluate(&[], W, H, &all_available());
        assert_eq!(d.hypothesis, None);
        let GateDecision::Retry { deficiency, .. } = decision else {
            panic!()
        };
        assert_eq!(deficiency, Deficiency::Sufficiency);
    }

    #[test]
    fn omega_floor_blocks_a_commit_even_with_a_high_v() {
        // weights pushed onto stability so v passes while ω sits below its floor
        let cfg = GateConfig {
            alpha: 0.1,
            beta: 0.8,
            gamma: 0.1,
            delta: 0.5,
            ..GateConfig::default()
        };
        let rule = CommitRule::new(cfg);
        let recs = [
            det(Box2::new(10.0, 10.0, 20.0, 20.0), 0.9, 1.0, 0),
            seg(Box2::new(10.0, 10.0, 20.0, 35.0), 0.9, 1.0, 0),
        ];
        let (d, decision) = rule.evaluate(&recs, W, H, &all_available());
        assert!(d.v >= 0.5 && d.omega < 0.5, "{d:?}");
        assert!(!decision.is_commit());
    }

    #[test]
    fn without_floor_shortfall_the_weighted_gap_decides() {
        let cfg = GateConfig::default();
        let d = Diagnostics {
            omega: 0.6,
            zeta: 1.0,
            mu: 1.0,
            v: verifier_score(0.6, 1.0, 1.0, &cfg),
            hypothesis: Some(0),
            omega_pair: None,
            cross_scale_pairs: 0,
            weights: vec![],
            supports: vec![],
            hypothesis_corroborated: true,
        };
        let (l, gaps) = dominant_deficiency(&d, &cfg);
        assert!(!gaps.below_floor);
        assert_eq!(l, Deficiency::Consistency);
        assert!((gaps.omega - 0.5 * 0.4).abs() < 1e-12);
    }

    #[test]
    fn a_repair_that_cannot_reach_delta_is_no_gap() {
        // every floor just met, v ≈ 0.61: repairing ζ (0.3·0.3 = 0.09) or μ (0.2·0.5 = 0.1)
        // cannot add the 0.19 that v lacks; repairing ω (0.5·0.45 = 0.225) can
        let cfg = GateConfig::default();
        let (omega, zeta, mu) = (0.55, 0.7, 0.5);
        let d = Diagnostics {
            omega,
            zeta,
            mu,
            v: verifier_score(omega, zeta, mu, &cfg),
            hypothesis: Some(0),
            omega_pair: None,
            cross_scale_pairs: 0,
            weights: vec![],
            supports: vec![],
            hypothesis_corroborated: true,
        };
        assert!(d.v < cfg.delta);
        let (l, gaps) = dominant_deficiency(&d, &cfg);
        assert!(!gaps.below_floor);
        assert_eq!((gaps.zeta, gaps.mu), (0.0, 0.0), "{gaps:?}");
        assert!((gaps.omega - 0.5 * 0.45).abs() < 1e-12, "{gaps:?}");
        assert_eq!(l, Deficiency::Consistency);
    }
}
