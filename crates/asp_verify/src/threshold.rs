//! The threshold verifier of Articulate-Anything (SPEC §5.1): when to stop an iterative
//! refinement loop (articulation estimates, critiques). Scores are on a 0–10 scale.
//!
//! Checks, in this order, on the latest result of the history:
//! 1. `iteration ≥ max_iterations` → stop (`max_iterations`);
//! 2. `score ≥ overall threshold` → stop, success (`overall_threshold`);
//! 3. both component scores (position, joint) at or above theirs → stop, success
//!    (`component_thresholds`);
//! 4. no improvement over the best earlier score for `patience` iterations → stop
//!    (`converged`);
//! 5. otherwise continue.
//!
//! Iterations count from 1 (the first result is iteration 1), so `max_iterations = 10`
//! stops after the tenth result. With `adaptive`, the overall threshold in force at
//! iteration `i` is `overall · decay^⌊i / adaptation_interval⌋`, never below
//! `min_threshold` (and never above `overall`).

use asp_config::sections::verifier::ThresholdVerifierConfig;
use serde::{Deserialize, Serialize};

/// Optional per-component scores of one result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ComponentScores {
    pub position: f64,
    pub joint: f64,
}

/// One refinement result.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RefinementResult {
    pub iteration: u32,
    pub score: f64,
    pub components: Option<ComponentScores>,
}

/// Why the loop stops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    MaxIterations,
    OverallThreshold,
    ComponentThresholds,
    Converged,
}

/// The verifier's decision; serialisable for the verdict topic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "decision", rename_all = "snake_case")]
pub enum ThresholdDecision {
    Continue {
        /// The overall threshold in force at this iteration.
        threshold: f64,
    },
    Stop {
        reason: StopReason,
        /// True for the two threshold stops.
        success: bool,
        /// The best result so far (what the caller should keep).
        best_iteration: u32,
        best_score: f64,
        /// Human-readable reason string.
        message: String,
    },
}

impl ThresholdDecision {
    pub fn should_stop(&self) -> bool {
        matches!(self, ThresholdDecision::Stop { .. })
    }
}

/// SPEC §5.1's ThresholdVerifier.
#[derive(Debug, Clone, PartialEq)]
pub struct ThresholdVerifier {
    cfg: ThresholdVerifierConfig,
}

impl ThresholdVerifier {
    pub fn new(cfg: ThresholdVerifierConfig) -> Self {
        Self { cfg }
    }

    /// The overall threshold in force at `iteration`.
    pub fn overall_threshold(&self, iteration: u32) -> f64 {
        let c = &self.cfg;
        if !c.adaptive {
            return c.overall;
        }
        let steps = iteration / c.adaptation_interval.max(1);
        let decayed = c.overall * c.decay.powi(i32::try_from(steps).unwrap_or(i32::MAX));
        decayed.max(c.min_threshold).min(c.overall)
    }

    /// Decides on `history` (in order; the last entry is the latest result).
    pub fn check(&self, history: &[RefinementResult]) -> ThresholdDecision {
        let c = &self.cfg;
        let Some(latest) = history.last() else {
            return ThresholdDecision::Continue {
                threshold: self.overall_threshold(0),
            };
        };
        let (best_iteration, best_score) =
            history
                .iter()
                .fold((latest.iteration, f64::NEG_INFINITY), |(bi, bs), r| {
                    if r.score > bs {
                        (r.iteration, r.score)
                    } else {
                        (bi, bs)
                    }
                });
        let threshold = self.overall_threshold(latest.iteration);
        let stop = |reason, success, message: String| ThresholdDecision::Stop {
            reason,
            success,
            best_iteration,
            best_score,
            message,
        };
        if latest.iteration >= c.max_iterations {
            return stop(
                StopReason::MaxIterations,
                false,
                format!(
                    "reached max iterations ({}) with best score {best_score:.2} at iteration {best_iteration}",
                    c.max_iterations
                ),
            );
        }
        if latest.score >= threshold {
            return stop(
                StopReason::OverallThreshold,
                true,
                format!(
                    "score {:.2} reached the overall threshold {threshold:.2}",
                    latest.score
                ),
            );
        }
        if let Some(comp) = latest.components
            && comp.position >= c.position
            && comp.joint >= c.joint
        {
            return stop(
                StopReason::ComponentThresholds,
                true,
                format!(
                    "position {:.2} ≥ {:.2} and joint {:.2} ≥ {:.2}",
                    comp.position, c.position, comp.joint, c.joint
                ),
            );
        }
        let patience = c.patience as usize;
        if history.len() > patience {
            let split = history.len() - patience;
            let best_before = history[..split]
                .iter()
                .map(|r| r.score)
                .fold(f64::NEG_INFINITY, f64::max);
            let recent_best = history[split..]
                .iter()
                .map(|r| r.score)
                .fold(f64::NEG_INFINITY, f64::max);
            if recent_best <= best_before {
                return stop(
                    StopReason::Converged,
                    false,
                    format!("no improvement over {best_before:.2} for {patience} iterations"),
                );
            }
        }
        ThresholdDecision::Continue { threshold }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(iteration: u32, score: f64) -> RefinementResult {
        RefinementResult {
            iteration,
            score,
            components: None,
        }
    }

    fn hist(scores: &[f64]) -> Vec<RefinementResult> {
        scores
            .iter()
            .enumerate()
            .map(|(i, &s)| r(i as u32 + 1, s))
            .collect()
    }

    fn v() -> ThresholdVerifier {
        ThresholdVerifier::new(ThresholdVerifierConfig::default())
    }

    fn reason(d: &ThresholdDecision) -> Option<StopReason> {
        match d {
            ThresholdDecision::Stop { reason, .. } => Some(*reason),
            ThresholdDecision::Continue { .. } => None,
        }
    }

    #[test]
    fn continues_while_improving_below_threshold() {
        assert_eq!(reason(&v().check(&[])), None);
        assert_eq!(reason(&v().check(&hist(&[3.0, 4.0, 5.0, 6.0]))), None);
    }

    #[test]
    fn overall_threshold_stops_with_success() {
        let d = v().check(&hist(&[3.0, 7.5]));
        match d {
            ThresholdDecision::Stop {
                reason,
                success,
                best_score,
                message,
                ..
            } => {
                assert_eq!(reason, StopReason::OverallThreshold);
                assert!(success);
                assert_eq!(best_score, 7.5);
                assert!(message.contains("7.50"), "{message}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn components_stop_with_success_only_when_both_pass() {
        let mut h = hist(&[3.0, 6.0]);
        h[1].components = Some(ComponentScores {
            position: 7.0,
            joint: 8.0,
        });
        assert_eq!(
            reason(&v().check(&h)),
            Some(StopReason::ComponentThresholds)
        );
        h[1].components = Some(ComponentScores {
            position: 7.0,
            joint: 7.9,
        });
        assert_eq!(reason(&v().check(&h)), None);
    }

    #[test]
    fn max_iterations_is_checked_first() {
        // the tenth result would also pass the threshold, but max comes first
        let mut h = hist(&[1.0, 2.0, 3.0, 4.0, 5.0, 5.5, 6.0, 6.5, 7.0, 9.0]);
        let d = v().check(&h);
        match &d {
            ThresholdDecision::Stop {
                reason,
                success,
                best_iteration,
                ..
            } => {
                assert_eq!(*reason, StopReason::MaxIterations);
                assert!(!success);
                assert_eq!(*best_iteration, 10);
            }
            other => panic!("{other:?}"),
        }
        h.pop();
        assert_eq!(
            reason(&v().check(&h)),
            None,
            "nine results, still improving"
        );
    }

    #[test]
    fn converges_after_patience_iterations_without_improvement() {
        // best 6.0 at iteration 2; iterations 3, 4, 5 do not beat it
        assert_eq!(
            reason(&v().check(&hist(&[5.0, 6.0, 5.5, 6.0, 4.0]))),
            Some(StopReason::Converged)
        );
        // only two without improvement: continue
        assert_eq!(reason(&v().check(&hist(&[5.0, 6.0, 5.5, 6.0]))), None);
        // an improvement inside the window resets it
        assert_eq!(reason(&v().check(&hist(&[5.0, 6.0, 5.5, 6.1, 4.0]))), None);
    }

    #[test]
    fn adaptive_threshold_decays_every_interval_down_to_the_floor() {
        let cfg = ThresholdVerifierConfig {
            adaptive: true,
            max_iterations: 100,
            patience: 100,
            ..ThresholdVerifierConfig::default()
        };
        let tv = ThresholdVerifier::new(cfg);
        assert_eq!(tv.overall_threshold(2), 7.5);
        assert!((tv.overall_threshold(3) - 7.5 * 0.95).abs() < 1e-12);
        assert!((tv.overall_threshold(7) - 7.5 * 0.95 * 0.95).abs() < 1e-12);
        assert_eq!(tv.overall_threshold(99), 5.0, "never below min_threshold");
        // 7.2 fails at iteration 2 (7.5) but passes at iteration 3 (7.125)
        let mut h = hist(&[7.0, 7.2]);
        assert_eq!(reason(&tv.check(&h)), None);
        h.push(r(3, 7.2));
        assert_eq!(reason(&tv.check(&h)), Some(StopReason::OverallThreshold));
        // without adaptation 7.2 never passes
        assert_eq!(v().overall_threshold(9), 7.5);
    }

    #[test]
    fn decisions_serialise_with_a_tag() {
        let d = v().check(&hist(&[9.0]));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["decision"], "stop");
        assert_eq!(json["reason"], "overall_threshold");
        assert_eq!(
            serde_json::from_value::<ThresholdDecision>(json).unwrap(),
            d
        );
    }
}
