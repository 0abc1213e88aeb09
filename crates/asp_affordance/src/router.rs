//! The A-Harness router (SPEC §2.4): the next action is `argmax Δv̂(u)/ĉ(u)` over the
//! feasible actions. For the verifier's proposal Γ(ℓ), `Δv̂ = λ_ℓ·(τ_ℓ − ℓ)₊`; every other
//! feasible action gets the same expected gain times the off-target discount η_off;
//! ĉ = 1 per call. Retrieved memories multiply an action's gain by
//! `1 + memory_weight · prior`, `prior` the similarity- and outcome-weighted share of
//! memories whose action sequence used it.
//!
//! The LLM is needed when the top two are within `near_tie` of each other (e.g. the
//! proposal is infeasible and the off-target actions tie) or the same deficiency
//! persisted `persistence` retries in a row. With an advisor configured it chooses; an
//! unusable answer, or no advisor, falls back to the argmax, whose ties are broken by
//! each action's gain on the diagnostic it targets itself (`λ_j · gap_j`: refine when ω
//! is short, zoom when ζ is), then by a fixed relevance order per deficiency: for ω
//! refine, zoom, imagination, web; for ζ zoom, web, imagination, refine; for μ the
//! complementary skills, then zoom (a new localiser), then refine. No feasible action
//! means stop.

use std::collections::BTreeMap;
use std::sync::Arc;

use asp_config::sections::affordance::RouterConfig;
use asp_verify::{Deficiency, DiagnosticsSummary, Gaps, RetryAction};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};

/// One scored candidate action.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub action: RetryAction,
    /// Δv̂(u).
    pub gain: f64,
    /// ĉ(u).
    pub cost: f64,
    /// The verifier's proposal Γ(ℓ).
    pub proposed: bool,
}

impl Candidate {
    pub fn score(&self) -> f64 {
        self.gain / self.cost.max(1e-9)
    }
}

/// Why the LLM was consulted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConsultReason {
    NearTie,
    Persistence,
}

/// What the LLM advisor is told (SPEC §2.4: the evidence summary, the scores, the skills
/// and the memories).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisorRequest {
    pub reason: ConsultReason,
    pub action_text: String,
    pub part: String,
    pub diagnostics: DiagnosticsSummary,
    pub deficiency: Deficiency,
    pub candidates: Vec<Candidate>,
    pub evidence: Vec<String>,
    pub memories: Vec<String>,
    pub remaining_budget: u32,
}

impl AdvisorRequest {
    /// A self-contained prompt asking for a JSON answer `{"action": …, "rationale": …}`.
    pub fn prompt(&self) -> String {
        let mut s = String::new();
        s.push_str("You choose the next perception skill for grounding an affordance.\n");
        s.push_str(&format!(
            "Action: {}\nPart: {}\n",
            self.action_text, self.part
        ));
        let d = &self.diagnostics;
        s.push_str(&format!(
            "Scores: consistency omega {:.2}, stability zeta {:.2}, sufficiency mu {:.2}, v {:.2}; dominant deficiency: {}\n",
            d.omega,
            d.zeta,
            d.mu,
            d.v,
            self.deficiency.symbol()
        ));
        s.push_str(&format!(
            "Remaining budget: {} skill calls\nEvidence:\n",
            self.remaining_budget
        ));
        for e in &self.evidence {
            s.push_str(&format!("- {e}\n"));
        }
        if !self.memories.is_empty() {
            s.push_str("Similar past episodes:\n");
            for m in &self.memories {
                s.push_str(&format!("- {m}\n"));
            }
        }
        s.push_str("Candidate skills (expected gain per call):\n");
        for c in &self.candidates {
            s.push_str(&format!(
                "- {}: {:.3}{}\n",
                c.action.name(),
                c.score(),
                if c.proposed {
                    " (verifier's proposal)"
                } else {
                    ""
                }
            ));
        }
        s.push_str("Answer with JSON only: {\"action\": \"<one candidate name>\", \"rationale\": \"<why>\"}\n");
        s
    }
}

/// The advisor's choice.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AdvisorAnswer {
    pub action: RetryAction,
    pub rationale: String,
}

impl AdvisorAnswer {
    /// Parses the JSON answer (the first `{…}` in `text`, so a model's chatter around it
    /// is tolerated); the error names what was wrong.
    pub fn parse(text: &str) -> Result<AdvisorAnswer, AdvisorError> {
        let start = text.find('{');
        let end = text.rfind('}');
        let json = match (start, end) {
            (Some(a), Some(b)) if b > a => &text[a..=b],
            _ => {
                return Err(AdvisorError::BadAnswer(format!(
                    "no JSON object in {text:?}"
                )));
            }
        };
        serde_json::from_str(json).map_err(|e| AdvisorError::BadAnswer(format!("{e} in {json:?}")))
    }
}

/// Why the advisor gave nothing usable.
#[derive(Debug, Clone, PartialEq, thiserror::Error, Serialize, Deserialize)]
pub enum AdvisorError {
    #[error("router advisor failed: {0}")]
    Backend(String),
    #[error("router advisor gave an unusable answer: {0}")]
    BadAnswer(String),
}

/// The LLM fallback of the router; `asp_llm` implements it over a chat model.
#[async_trait]
pub trait RouterAdvisor: Send + Sync {
    async fn choose(&self, request: &AdvisorRequest) -> Result<AdvisorAnswer, AdvisorError>;
}

/// A routing decision.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouteChoice {
    pub action: RetryAction,
    pub candidates: Vec<Candidate>,
    /// The LLM was consulted (whether or not its answer was used).
    pub consulted: Option<ConsultReason>,
    /// The LLM's answer was used.
    pub by_llm: bool,
    pub rationale: String,
}

/// Counts for the report: how often the LLM was needed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterStats {
    pub decisions: u32,
    /// Decisions that met the consult condition (near-tie or persistence), whether or
    /// not an advisor was configured: "how often the LLM was needed".
    pub llm_needed: u32,
    pub llm_consultations: u32,
    pub llm_decisions: u32,
    pub llm_failures: u32,
}

impl std::ops::AddAssign for RouterStats {
    fn add_assign(&mut self, o: Self) {
        self.decisions += o.decisions;
        self.llm_needed += o.llm_needed;
        self.llm_consultations += o.llm_consultations;
        self.llm_decisions += o.llm_decisions;
        self.llm_failures += o.llm_failures;
    }
}

/// What a routing decision needs besides the configuration.
#[derive(Debug, Clone)]
pub struct RouteInput<'a> {
    pub diagnostics: DiagnosticsSummary,
    pub deficiency: Deficiency,
    pub gaps: Gaps,
    pub proposal: Option<RetryAction>,
    pub feasible: &'a [RetryAction],
    /// Memory prior per action, in `[0, 1]`.
    pub memory_prior: &'a BTreeMap<RetryAction, f64>,
    /// Deficiencies of the previous retries, oldest first.
    pub history: &'a [Deficiency],
    /// For the advisor.
    pub action_text: &'a str,
    pub part: &'a str,
    pub evidence: Vec<String>,
    pub memories: Vec<String>,
    pub remaining_budget: u32,
}

/// SPEC §2.4's router.
#[derive(Clone)]
pub struct Router {
    cfg: RouterConfig,
    advisor: Option<Arc<dyn RouterAdvisor>>,
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router")
            .field("cfg", &self.cfg)
            .field("advisor", &self.advisor.is_some())
            .finish()
    }
}

impl Router {
    pub fn new(cfg: RouterConfig, advisor: Option<Arc<dyn RouterAdvisor>>) -> Self {
        Self { cfg, advisor }
    }

    fn lambda(&self, d: Deficiency) -> f64 {
        match d {
            Deficiency::Consistency => self.cfg.lambda_omega,
            Deficiency::Stability => self.cfg.lambda_zeta,
            Deficiency::Sufficiency => self.cfg.lambda_mu,
        }
    }

    /// `(τ_j − j)₊`, how far diagnostic `j` falls short: below its floor, or, when
    /// every diagnostic meets its floor but `v < δ`, its weighted distance to 1 (the
    /// gaps of [`Gaps::of`]). The loop stops on a commit or a spent budget (SPEC §2.5),
    /// not while evidence could still raise `v`: a second, zoomed look at a part whose
    /// first box was loose is what lifts ω above the jitter of one detection.
    fn shortfall(gaps: &Gaps, d: Deficiency) -> f64 {
        gaps.get(d)
    }

    /// Tie-break rank of `a` when repairing `d` (lower first).
    fn relevance(d: Deficiency, a: RetryAction) -> u8 {
        use RetryAction::*;
        let order: [RetryAction; 4] = match d {
            Deficiency::Consistency => [RefineSegment, ZoomRedetect, Imagination, WebSearch],
            Deficiency::Stability => [ZoomRedetect, WebSearch, Imagination, RefineSegment],
            Deficiency::Sufficiency => [Imagination, WebSearch, ZoomRedetect, RefineSegment],
        };
        order.iter().position(|x| *x == a).unwrap_or(order.len()) as u8
    }

    /// Scores every feasible action, best first (ties: the proposal, then the gain on
    /// the action's own target, then the relevance order of the deficiency).
    pub fn candidates(&self, input: &RouteInput<'_>) -> Vec<Candidate> {
        let base = self.lambda(input.deficiency) * Self::shortfall(&input.gaps, input.deficiency);
        let mut out: Vec<Candidate> = input
            .feasible
            .iter()
            .map(|&a| {
                let proposed = Some(a) == input.proposal;
                let discount = if proposed { 1.0 } else { self.cfg.eta_off };
                let prior = input
                    .memory_prior
                    .get(&a)
                    .copied()
                    .unwrap_or(0.0)
                    .clamp(0.0, 1.0);
                Candidate {
                    action: a,
                    gain: discount * base * (1.0 + self.cfg.memory_weight * prior),
                    cost: 1.0,
                    proposed,
                }
            })
            .filter(|c| c.gain > 0.0)
            .collect();
        let own =
            |a: RetryAction| self.lambda(a.target()) * Self::shortfall(&input.gaps, a.target());
        out.sort_by(|a, b| {
            b.score()
                .total_cmp(&a.score())
                .then(b.proposed.cmp(&a.proposed))
                .then(own(b.action).total_cmp(&own(a.action)))
                .then(
                    Self::relevance(input.deficiency, a.action)
                        .cmp(&Self::relevance(input.deficiency, b.action)),
                )
        });
        out
    }

    /// Chooses the next action, or `None` when no feasible action is expected to help.
    pub async fn choose(
        &self,
        input: &RouteInput<'_>,
        stats: &mut RouterStats,
    ) -> Option<RouteChoice> {
        let candidates = self.candidates(input);
        let best = *candidates.first()?;
        stats.decisions += 1;
        let near_tie = candidates.get(1).is_some_and(|second| {
            best.score() - second.score() <= self.cfg.near_tie * best.score()
        });
        let p = self.cfg.persistence as usize;
        let persistent = input.history.len() >= p
            && input.history[input.history.len() - p..]
                .iter()
                .all(|d| *d == input.deficiency);
        let reason = if near_tie {
            Some(ConsultReason::NearTie)
        } else if persistent {
            Some(ConsultReason::Persistence)
        } else {
            None
        };
        let mut choice = RouteChoice {
            action: best.action,
            candidates: candidates.clone(),
            consulted: None,
            by_llm: false,
            rationale: format!("highest expected gain per call ({:.3})", best.score()),
        };
        if reason.is_some() {
            stats.llm_needed += 1;
        }
        if let (Some(reason), Some(advisor), true) = (reason, &self.advisor, self.cfg.llm_fallback)
        {
            stats.llm_consultations += 1;
            choice.consulted = Some(reason);
            let request = AdvisorRequest {
                reason,
                action_text: input.action_text.to_owned(),
                part: input.part.to_owned(),
                diagnostics: input.diagnostics,
                deficiency: input.deficiency,
                candidates: candidates.clone(),
                evidence: input.evidence.clone(),
                memories: input.memories.clone(),
                remaining_budget: input.remaining_budget,
            };
            match advisor.choose(&request).await {
                Ok(answer) if candidates.iter().any(|c| c.action == answer.action) => {
                    stats.llm_decisions += 1;
                    choice.action = answer.action;
                    choice.by_llm = true;
                    choice.rationale = answer.rationale;
                }
                Ok(answer) => {
                    stats.llm_failures += 1;
                    tracing::warn!(
                        action = answer.action.name(),
                        "router advisor chose an infeasible action; taking the argmax"
                    );
                }
                Err(e) => {
                    stats.llm_failures += 1;
                    tracing::warn!(error = %e, "router advisor failed; taking the argmax");
                }
            }
        }
        Some(choice)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    fn gaps(omega: f64, zeta: f64, mu: f64) -> Gaps {
        Gaps {
            omega,
            zeta,
            mu,
            below_floor: true,
        }
    }

    fn input<'a>(
        g: Gaps,
        deficiency: Deficiency,
        proposal: Option<RetryAction>,
        prior: &'a BTreeMap<RetryAction, f64>,
        history: &'a [Deficiency],
    ) -> RouteInput<'a> {
        RouteInput {
            diagnostics: DiagnosticsSummary {
                omega: 0.4,
                zeta: 1.0,
                mu: 1.0,
                v: 0.6,
            },
            deficiency,
            gaps: g,
            proposal,
            feasible: &RetryAction::ALL,
            memory_prior: prior,
            history,
            action_text: "open the drawer",
            part: "drawer handle",
            evidence: vec![],
            memories: vec![],
            remaining_budget: 2,
        }
    }

    struct Scripted(
        Mutex<Vec<Result<AdvisorAnswer, AdvisorError>>>,
        Mutex<Vec<AdvisorRequest>>,
    );

    #[async_trait]
    impl RouterAdvisor for Scripted {
        async fn choose(&self, r: &AdvisorRequest) -> Result<AdvisorAnswer, AdvisorError> {
            self.1.lock().unwrap().push(r.clone());
            self.0.lock().unwrap().remove(0)
        }
    }

    #[tokio::test]
    async fn proposal_gets_the_full_gain_and_the_others_the_discounted_one() {
        let r = Router::new(RouterConfig::default(), None);
        let none = BTreeMap::new();
        let mut stats = RouterStats::default();
        // ℓ = ω with gap 0.1: refine 1.0·0.1; every other action 0.5·1.0·0.1
        let c = r
            .choose(
                &input(
                    gaps(0.1, 0.0, 0.3),
                    Deficiency::Consistency,
                    Some(RetryAction::RefineSegment),
                    &none,
                    &[],
                ),
                &mut stats,
            )
            .await
            .unwrap();
        assert_eq!(c.action, RetryAction::RefineSegment);
        assert_eq!(c.candidates.len(), 4);
        assert!((c.candidates[0].gain - 0.1).abs() < 1e-12);
        assert!(
            c.candidates[1..]
                .iter()
                .all(|x| (x.gain - 0.05).abs() < 1e-12)
        );
        assert_eq!(c.consulted, None);
        assert_eq!((stats.decisions, stats.llm_needed), (1, 0));
    }

    #[tokio::test]
    async fn without_a_feasible_proposal_the_relevance_order_breaks_the_tie() {
        let r = Router::new(RouterConfig::default(), None);
        let none = BTreeMap::new();
        let mut stats = RouterStats::default();
        // μ deficit, complementary skills used up: zoom (a new localiser) before refine
        let feasible = [RetryAction::RefineSegment, RetryAction::ZoomRedetect];
        let mut i = input(
            gaps(0.0, 0.0, 0.5),
            Deficiency::Sufficiency,
            None,
            &none,
            &[],
        );
        i.feasible = &feasible;
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert_eq!(c.action, RetryAction::ZoomRedetect);
        assert_eq!(
            stats.llm_needed, 1,
            "a tie needs the LLM even when none is configured"
        );
        assert_eq!(stats.llm_consultations, 0);
    }

    #[tokio::test]
    async fn no_positive_gain_means_stop() {
        let r = Router::new(RouterConfig::default(), None);
        let none = BTreeMap::new();
        let mut stats = RouterStats::default();
        assert!(
            r.choose(
                &input(
                    gaps(0.0, 0.0, 0.0),
                    Deficiency::Consistency,
                    None,
                    &none,
                    &[]
                ),
                &mut stats
            )
            .await
            .is_none()
        );
        assert_eq!(stats.decisions, 0);
    }

    #[tokio::test]
    async fn ties_go_to_the_action_that_repairs_its_own_shortfall() {
        let r = Router::new(RouterConfig::default(), None);
        let none = BTreeMap::new();
        let mut stats = RouterStats::default();
        // μ is dominant (0.5) but ω is short too (0.4): refine repairs ω, zoom nothing
        let feasible = [RetryAction::RefineSegment, RetryAction::ZoomRedetect];
        let mut i = input(
            gaps(0.4, 0.0, 0.5),
            Deficiency::Sufficiency,
            None,
            &none,
            &[],
        );
        i.feasible = &feasible;
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert_eq!(c.action, RetryAction::RefineSegment);
        assert_eq!(c.candidates[0].gain, c.candidates[1].gain, "a tie on Δv̂");
    }

    #[tokio::test]
    async fn near_ties_and_persistence_consult_the_advisor() {
        let adv = Arc::new(Scripted(
            Mutex::new(vec![
                Ok(AdvisorAnswer {
                    action: RetryAction::WebSearch,
                    rationale: "unknown part name".into(),
                }),
                Ok(AdvisorAnswer {
                    action: RetryAction::ZoomRedetect,
                    rationale: "not a candidate".into(),
                }),
                Err(AdvisorError::Backend("timeout".into())),
            ]),
            Mutex::new(vec![]),
        ));
        let r = Router::new(RouterConfig::default(), Some(adv.clone()));
        let none = BTreeMap::new();
        let mut stats = RouterStats::default();
        let g = gaps(0.0, 0.0, 0.5);
        let complementary = [RetryAction::Imagination, RetryAction::WebSearch];
        // imagination proposed: 0.3 vs 0.15, no tie, no consult
        let mut i = input(
            g,
            Deficiency::Sufficiency,
            Some(RetryAction::Imagination),
            &none,
            &[],
        );
        i.feasible = &complementary;
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert_eq!((c.action, c.consulted), (RetryAction::Imagination, None));
        // no proposal: both tie at 0.15, the advisor decides
        i.proposal = None;
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert_eq!(
            (c.action, c.consulted, c.by_llm),
            (RetryAction::WebSearch, Some(ConsultReason::NearTie), true)
        );
        assert_eq!(c.rationale, "unknown part name");
        // μ persisted two retries: consult; an infeasible answer falls back to the argmax
        let hist = [Deficiency::Sufficiency, Deficiency::Sufficiency];
        let mut j = input(
            g,
            Deficiency::Sufficiency,
            Some(RetryAction::Imagination),
            &none,
            &hist,
        );
        j.feasible = &complementary;
        let c = r.choose(&j, &mut stats).await.unwrap();
        assert_eq!(
            (c.action, c.consulted, c.by_llm),
            (
                RetryAction::Imagination,
                Some(ConsultReason::Persistence),
                false
            )
        );
        // an advisor error falls back too
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert!(!c.by_llm);
        assert_eq!(c.action, RetryAction::Imagination, "relevance order for μ");
        assert_eq!(
            stats,
            RouterStats {
                decisions: 4,
                llm_needed: 3,
                llm_consultations: 3,
                llm_decisions: 1,
                llm_failures: 2
            }
        );
        let asked = adv.1.lock().unwrap();
        assert!(asked[0].prompt().contains("web_search") && asked[0].prompt().contains("JSON"));
    }

    #[tokio::test]
    async fn memories_favour_the_actions_they_used() {
        let r = Router::new(RouterConfig::default(), None);
        let prior = BTreeMap::from([(RetryAction::WebSearch, 1.0)]);
        let mut stats = RouterStats::default();
        let complementary = [RetryAction::Imagination, RetryAction::WebSearch];
        let mut i = input(
            gaps(0.0, 0.0, 0.5),
            Deficiency::Sufficiency,
            None,
            &prior,
            &[],
        );
        i.feasible = &complementary;
        // the tie is broken by memory: web 0.15·1.5 beats imagination 0.15
        let c = r.choose(&i, &mut stats).await.unwrap();
        assert_eq!(c.action, RetryAction::WebSearch);
        assert_eq!((c.consulted, stats.llm_needed), (None, 0));
    }

    #[test]
    fn advisor_answers_parse_from_chatty_text() {
        let a = AdvisorAnswer::parse(
            "Sure! {\"action\": \"zoom_redetect\", \"rationale\": \"small part\"} hope it helps",
        )
        .unwrap();
        assert_eq!(a.action, RetryAction::ZoomRedetect);
        assert!(
            AdvisorAnswer::parse("{\"action\": \"teleport\", \"rationale\": \"\"}")
                .unwrap_err()
                .to_string()
                .contains("teleport")
        );
        assert!(AdvisorAnswer::parse("no json").is_err());
    }
}
