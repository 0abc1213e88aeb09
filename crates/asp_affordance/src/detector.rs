//! Affordance detection for an object and an action (SPEC §1.5) around the harness: the
//! VLM proposes (skill, part) pairs from the object's best crops; each pair is grounded on
//! each view; masks are lifted to 3D with the view's depth, intrinsics and camera pose;
//! affordances from several views merge by 3D IoU. Memories seed the router and accepted
//! groundings are written back.

use std::collections::BTreeMap;
use std::sync::Arc;

use asp_config::sections::affordance::{AffordanceConfig, GroundingMode};
use asp_config::sections::verifier::GateConfig;
use asp_core::models::{AffordanceProposal, ImageEmbedder, TextEmbedder};
use asp_core::{Affordance, AffordanceProvenance, Mask, PointCloud, RgbdFrame, Skill};
use asp_memory::{
    AffordanceMemory, CompactMask, EpisodeDraft, EvidenceSummary, ParamRange, Recalled,
};
use asp_verify::{CommitRule, GroundingSummary, RetryAction};
use serde::{Deserialize, Serialize};

use crate::AffordanceError;
use crate::harness::{Grounding, GroundingTask, GroundingView, Harness, Models, StopCause};
use crate::router::{Router, RouterAdvisor, RouterStats};
use crate::store::SkillCall;

/// The memory and the embedders that make `g = normalize(f_visual ‖ f_text)`.
#[derive(Clone)]
pub struct MemoryLink {
    pub memory: Arc<AffordanceMemory>,
    pub image: Arc<dyn ImageEmbedder>,
    pub text: Arc<dyn TextEmbedder>,
    /// Entries retrieved to seed the router (N).
    pub top_n: usize,
}

impl std::fmt::Debug for MemoryLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryLink")
            .field("memory", &self.memory.path())
            .field("top_n", &self.top_n)
            .finish_non_exhaustive()
    }
}

/// An affordance and how it was grounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DetectedAffordance {
    pub affordance: Affordance,
    /// The diagnostics to put in a commit request.
    pub summary: GroundingSummary,
    /// The verifier committed it (its `provenance.verifier_score` is then set).
    pub committed: bool,
}

/// One pair grounded on one view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairReport {
    pub keyframe: u32,
    pub skill: Skill,
    pub part: String,
    pub committed: bool,
    pub stop: StopCause,
    pub summary: GroundingSummary,
    pub actions: Vec<SkillCall>,
    pub router: RouterStats,
    pub memories_used: usize,
    /// The episode written back on acceptance.
    pub written_back: Option<u64>,
}

/// Everything a detection did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AffordanceReport {
    pub proposals: Vec<AffordanceProposal>,
    /// Best first: committed before uncommitted, then by verifier score.
    pub affordances: Vec<DetectedAffordance>,
    pub pairs: Vec<PairReport>,
    pub skill_calls: u32,
    pub router: RouterStats,
}

/// The grounding of one view: every pair tried, and the chosen one.
#[derive(Debug)]
pub struct ViewGrounding {
    pub groundings: Vec<Grounding>,
    /// Index of the chosen grounding: the first that committed, else the best v.
    pub chosen: Option<usize>,
    pub pair_reports: Vec<PairReport>,
}

impl ViewGrounding {
    pub fn chosen(&self) -> Option<&Grounding> {
        self.chosen.map(|i| &self.groundings[i])
    }
    pub fn skill_calls(&self) -> u32 {
        self.groundings.iter().map(Grounding::skill_calls).sum()
    }
    pub fn router(&self) -> RouterStats {
        let mut s = RouterStats::default();
        for g in &self.groundings {
            s += g.router;
        }
        s
    }
}

/// Affordance detection with the A-Harness loop.
#[derive(Debug, Clone)]
pub struct AffordanceDetector {
    harness: Harness,
    config: AffordanceConfig,
    budget: u32,
    memory: Option<MemoryLink>,
}

impl AffordanceDetector {
    /// `gate` is the verifier's configuration (the harness scores with the same rule the
    /// commit gate applies).
    pub fn new(
        models: Models,
        config: &AffordanceConfig,
        gate: &GateConfig,
        advisor: Option<Arc<dyn RouterAdvisor>>,
        memory: Option<MemoryLink>,
    ) -> Self {
        Self {
            harness: Harness::new(
                models,
                config.detection.clone(),
                CommitRule::new(gate.clone()),
                Router::new(config.router.clone(), advisor),
            ),
            config: config.clone(),
            budget: gate.budget,
            memory,
        }
    }

    pub fn config(&self) -> &AffordanceConfig {
        &self.config
    }

    /// The VLM's (skill, part) pairs for `action` on these views (SPEC §1.5 step 1).
    pub async fn propose(
        &self,
        action: &str,
        views: &[GroundingView],
    ) -> Result<Vec<AffordanceProposal>, AffordanceError> {
        let obs: Vec<_> = views
            .iter()
            .take(self.config.detection.crops)
            .map(|v| v.observation.clone())
            .collect();
        let mut proposals = self.harness.models.vlm.propose(action, &obs).await?;
        proposals.retain(|p| {
            let keep = !contradicts_action(action, &p.part);
            if !keep {
                tracing::debug!(action, part = %p.part, "proposal dropped: the action names another one");
            }
            keep
        });
        Ok(proposals)
    }

    fn embedding(
        &self,
        link: &MemoryLink,
        view: &GroundingView,
        text: &str,
    ) -> Result<Vec<f32>, AffordanceError> {
        let f_visual = link
            .image
            .embed_image(&view.observation, view.object_mask.as_ref())?;
        let f_text = link.text.embed_text(text)?;
        Ok(asp_memory::joint_embedding(&f_visual, &f_text))
    }

    /// Grounds `proposals` (in order, at most `max_pairs`) on one view; the budget is
    /// shared by the pairs, and the first pair that commits ends the view.
    pub async fn ground_view(
        &self,
        view: &GroundingView,
        object: &str,
        action: &str,
        proposals: &[AffordanceProposal],
        mode: GroundingMode,
    ) -> Result<ViewGrounding, AffordanceError> {
        let mut out = ViewGrounding {
            groundings: Vec::new(),
            chosen: None,
            pair_reports: Vec::new(),
        };
        let pairs = if mode == GroundingMode::FixedChain {
            1
        } else {
            self.config.detection.max_pairs
        };
        for proposal in proposals.iter().take(pairs) {
            let spent: u32 = out.groundings.iter().map(Grounding::skill_calls).sum();
            if spent >= self.budget {
                break;
            }
            let text = format!("{action} | {object} | {}", proposal.part);
            let (g, recalled) = match (&self.memory, mode) {
                (Some(link), GroundingMode::Harness) => {
                    let g = self.embedding(link, view, &text)?;
                    let r = link.memory.retrieve(&g, link.top_n)?;
                    (Some(g), r)
                }
                _ => (None, Vec::new()),
            };
            let memory_prior = memory_prior(&recalled);
            let memories: Vec<String> = recalled.iter().map(Recalled::describe).collect();
            let task = GroundingTask {
                view,
                object,
                action,
                proposal,
                budget: self.budget - spent,
                memory_prior: &memory_prior,
                memories: &memories,
            };
            let mut grounding = self.harness.ground(&task, mode).await?;
            let mut written_back = None;
            if let (Some(link), Some(g)) = (&self.memory, g)
                && let Some(acceptance) = grounding.acceptance.take()
            {
                // write-back only on acceptance: the memory consumes the proof
                let draft = self.draft(link, view, object, &grounding, g);
                written_back = Some(link.memory.write_back(acceptance, draft)?.episode);
            }
            let committed = grounding.stop == StopCause::Committed;
            out.pair_reports.push(PairReport {
                keyframe: view.keyframe,
                skill: grounding.skill,
                part: grounding.part.clone(),
                committed,
                stop: grounding.stop,
                summary: grounding.summary(),
                actions: grounding.store.actions(),
                router: grounding.router,
                memories_used: recalled.len(),
                written_back,
            });
            // The pairs come in the VLM's order of preference. The next one is an
            // alternative for when this part is not there ("not every cup has a
            // handle"), not a second opinion: once this pair's part was found, a
            // lower-ranked pair that verifies better would still be the wrong part.
            let found = grounding.diagnostics.hypothesis.is_some();
            out.groundings.push(grounding);
            if committed || found {
                break;
            }
        }
        out.chosen = out
            .groundings
            .iter()
            .position(|g| g.stop == StopCause::Committed)
            .or_else(|| {
                (0..out.groundings.len()).max_by(|&a, &b| {
                    out.groundings[a]
                        .diagnostics
                        .v
                        .total_cmp(&out.groundings[b].diagnostics.v)
                        .then(b.cmp(&a))
                })
            });
        Ok(out)
    }

    fn draft(
        &self,
        link: &MemoryLink,
        view: &GroundingView,
        object: &str,
        g: &Grounding,
        embedding: Vec<f32>,
    ) -> EpisodeDraft {
        let category = link
            .memory
            .prior_for(object, &g.part)
            .ok()
            .flatten()
            .map_or_else(|| object.to_owned(), |p| p.category);
        let mut parameters: BTreeMap<String, ParamRange> = g
            .parameters
            .iter()
            .map(|(k, v)| (k.clone(), ParamRange::point(*v)))
            .collect();
        let ob = view.object_box();
        if let Some((x, y)) = g.keypoint
            && ob.width() > 0.0
            && ob.height() > 0.0
        {
            parameters.insert(
                "keypoint_rel_x".into(),
                ParamRange::point((x - ob.x0) / ob.width()),
            );
            parameters.insert(
                "keypoint_rel_y".into(),
                ParamRange::point((y - ob.y0) / ob.height()),
            );
        }
        let reference_mask = view
            .object_mask
            .as_ref()
            .and_then(Mask::bounding_rect)
            .map(|r| {
                let cropped = g.mask.crop(&r);
                CompactMask::from_mask(&cropped.resize_nearest(32, 32))
            });
        EpisodeDraft {
            embedding,
            category,
            part: g.part.clone(),
            skill: g.skill,
            actions: g
                .store
                .actions()
                .iter()
                .map(|a| a.name().to_owned())
                .collect(),
            parameters,
            evidence: EvidenceSummary {
                text: g.store.summary_lines().join("; "),
                diagnostics: g.diagnostics.summary(),
                skill_calls: g.store.skill_calls(),
            },
            reference_mask,
        }
    }

    /// Detects the affordances of an object for an action over its views (best crops
    /// first; at most `detection.crops` are used).
    pub async fn detect(
        &self,
        views: &[GroundingView],
        object: &str,
        action: &str,
        mode: Option<GroundingMode>,
    ) -> Result<AffordanceReport, AffordanceError> {
        let mode = mode.unwrap_or(self.config.detection.mode);
        let views = &views[..views.len().min(self.config.detection.crops)];
        let proposals = self.propose(action, views).await?;
        let mut report = AffordanceReport {
            proposals: proposals.clone(),
            affordances: Vec::new(),
            pairs: Vec::new(),
            skill_calls: 0,
            router: RouterStats::default(),
        };
        let mut found: Vec<DetectedAffordance> = Vec::new();
        for view in views {
            let vg = self
                .ground_view(view, object, action, &proposals, mode)
                .await?;
            report.skill_calls += vg.skill_calls();
            report.router += vg.router();
            report.pairs.extend(vg.pair_reports.iter().cloned());
            let Some(g) = vg.chosen() else { continue };
            if g.mask.is_empty() {
                continue;
            }
            let cloud = self.lift(view, &g.mask)?;
            if cloud.is_empty() {
                tracing::warn!(keyframe = view.keyframe, part = %g.part, "affordance mask has no valid depth");
                continue;
            }
            let committed = g.stop == StopCause::Committed;
            let confidence = g
                .store
                .records()
                .iter()
                .filter(|r| matches!(r.payload, asp_core::EvidencePayload::Box(_)))
                .map(|r| r.confidence)
                .fold(0.0f32, f32::max);
            let detected = DetectedAffordance {
                affordance: Affordance {
                    point_cloud: cloud,
                    part: g.part.clone(),
                    skill: g.skill,
                    provenance: AffordanceProvenance {
                        producers: g.store.producers().into_iter().map(|p| p.0).collect(),
                        keyframes: vec![view.keyframe],
                        confidence,
                        verifier_score: committed.then_some(g.diagnostics.v as f32),
                    },
                },
                summary: g.summary(),
                committed,
            };
            self.merge(&mut found, detected)?;
        }
        found.sort_by(|a, b| {
            b.committed
                .cmp(&a.committed)
                .then(b.summary.v.total_cmp(&a.summary.v))
        });
        report.affordances = found;
        Ok(report)
    }

    /// Lifts a view mask to a map-frame point cloud, voxel-downsampled.
    pub fn lift(&self, view: &GroundingView, mask: &Mask) -> Result<PointCloud, AffordanceError> {
        let missing = |what: &str| AffordanceError::CannotLift {
            keyframe: view.keyframe,
            missing: what.into(),
        };
        let frame = RgbdFrame {
            rgb: view.observation.rgb.clone(),
            depth: view
                .observation
                .depth
                .clone()
                .ok_or_else(|| missing("depth"))?,
            intrinsics: view.intrinsics.ok_or_else(|| missing("intrinsics"))?,
            camera_pose: view
                .camera_pose
                .clone()
                .ok_or_else(|| missing("camera pose"))?,
            stamp: 0.0,
            ground_truth: None,
        };
        let d = &self.config.detection;
        let on_object = on_object(mask, view.object_mask.as_ref());
        let cloud = frame.back_project(
            Some(on_object.as_ref().unwrap_or(mask)),
            d.min_depth,
            d.max_depth,
        )?;
        Ok(cloud.voxel_downsample(d.voxel_size)?)
    }

    /// Merges `new` into an affordance with the same skill and part whose 3D IoU exceeds
    /// `multiview_iou`, else adds it.
    fn merge(
        &self,
        found: &mut Vec<DetectedAffordance>,
        new: DetectedAffordance,
    ) -> Result<(), AffordanceError> {
        let d = &self.config.detection;
        for f in found.iter_mut() {
            if f.affordance.skill != new.affordance.skill
                || f.affordance.part != new.affordance.part
            {
                continue;
            }
            let iou = f
                .affordance
                .point_cloud
                .voxel_iou(&new.affordance.point_cloud, d.voxel_size)?;
            if iou > d.multiview_iou {
                f.affordance
                    .point_cloud
                    .extend(&new.affordance.point_cloud)?;
                f.affordance.point_cloud =
                    f.affordance.point_cloud.voxel_downsample(d.voxel_size)?;
                let p = &mut f.affordance.provenance;
                for k in &new.affordance.provenance.keyframes {
                    if !p.keyframes.contains(k) {
                        p.keyframes.push(*k);
                    }
                }
                for prod in &new.affordance.provenance.producers {
                    if !p.producers.contains(prod) {
                        p.producers.push(prod.clone());
                    }
                }
                p.confidence = p.confidence.max(new.affordance.provenance.confidence);
                p.verifier_score =
                    match (p.verifier_score, new.affordance.provenance.verifier_score) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    };
                if new.committed && (!f.committed || new.summary.v > f.summary.v) {
                    f.summary = new.summary.clone();
                }
                f.committed |= new.committed;
                return Ok(());
            }
        }
        found.push(new);
        Ok(())
    }
}

/// Per action, the share of retrieved memories (weighted by similarity × outcome) whose
/// action sequence used it.
pub fn memory_prior(recalled: &[Recalled]) -> BTreeMap<RetryAction, f64> {
    let mut total = 0.0;
    let mut acc: BTreeMap<RetryAction, f64> = BTreeMap::new();
    for r in recalled {
        let (actions, outcome) = r.actions();
        let w = f64::from(r.similarity().max(0.0)) * outcome.max(0.0);
        total += w;
        for a in RetryAction::ALL {
            if actions.iter().any(|s| s == a.name()) {
                *acc.entry(a).or_default() += w;
            }
        }
    }
    if total > 0.0 {
        acc.values_mut().for_each(|v| *v /= total);
    }
    acc
}

/// The part mask's pixels that are also the object's: a part is a piece of its object,
/// and what a mask shows outside the object — the table through a mug handle's loop, the
/// wall around a plug — would lift to points the gripper must not aim at. `None` (lift
/// the mask as it is) without an object mask of the same size, or when the two do not
/// overlap at all (the verifier judges such a mask; it is not silently emptied).
fn on_object(mask: &Mask, object: Option<&Mask>) -> Option<Mask> {
    let object = object.filter(|o| o.width() == mask.width() && o.height() == mask.height())?;
    let mut out = Mask::empty(mask.width(), mask.height());
    let mut any = false;
    for (x, y) in mask.set_pixels() {
        if object.get(x, y) {
            out.set(x, y, true);
            any = true;
        }
    }
    any.then_some(out)
}

#[cfg(test)]
mod lift_tests {
    use super::*;

    fn mask(w: u32, h: u32, px: &[(u32, u32)]) -> Mask {
        let mut m = Mask::empty(w, h);
        for &(x, y) in px {
            m.set(x, y, true);
        }
        m
    }

    #[test]
    fn a_part_mask_is_cut_to_its_object() {
        let part = mask(4, 4, &[(1, 1), (2, 1), (3, 3)]);
        let object = mask(4, 4, &[(1, 1), (2, 1), (2, 2)]);
        let cut = on_object(&part, Some(&object)).unwrap();
        assert_eq!(cut.set_pixels().collect::<Vec<_>>(), [(1, 1), (2, 1)]);
        // no overlap, no object mask, or another size: the mask stays as it is
        assert_eq!(on_object(&part, Some(&mask(4, 4, &[(0, 0)]))), None);
        assert_eq!(on_object(&part, None), None);
        assert_eq!(on_object(&part, Some(&mask(5, 4, &[(1, 1)]))), None);
    }
}

/// Whether a proposed part is another one than the action names: the action picks one
/// of several like parts by a label ("press the 7 key", "the h key") and the proposal's
/// label differs ("key 4", "key q"). Labels are single letters and numbers: what tells a
/// key, a keypad digit or a numbered button from its siblings, which a VLM confuses most.
pub fn contradicts_action(action: &str, part: &str) -> bool {
    let labels = |text: &str| -> Vec<String> {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| {
                let n = w.chars().count();
                (n == 1 && w.chars().all(char::is_alphanumeric))
                    || (!w.is_empty() && w.chars().all(|c| c.is_ascii_digit()))
            })
            .map(str::to_lowercase)
            // "a" is an article far more often than a key's label
            .filter(|w| w != "a")
            .collect()
    };
    let wanted = labels(action);
    let got = labels(part);
    !wanted.is_empty() && !got.is_empty() && !got.iter().all(|l| wanted.contains(l))
}

#[cfg(test)]
mod tests {
    use super::contradicts_action;

    #[test]
    fn a_proposal_with_another_label_than_the_action_names_contradicts_it() {
        assert!(contradicts_action("press the h key", "key q"));
        assert!(contradicts_action("dial 7 on the phone", "phone key 4"));
        assert!(!contradicts_action("press the h key", "key h"));
        assert!(!contradicts_action("Press the H key", "key h"));
        // an action that names no label, or a part without one: nothing to contradict
        assert!(!contradicts_action(
            "turn on the kettle",
            "kettle power button"
        ));
        assert!(!contradicts_action("press the keys", "key h"));
        assert!(!contradicts_action("press the h key", "keyboard"));
        // "a" is an article, not the a key
        assert!(!contradicts_action("press a key", "key h"));
    }
}
