//! The per-subtask Yes/No verifier measured (VLA² §4.3, SPEC): every outcome verdict of
//! an episode set against the simulated world at the times of the views it judged. This
//! is the evaluation's judge reading simulator truth; nothing here reaches the system.
//!
//! The acted-on object is the world's object the cloud the skill was given showed: among
//! those within 6 cm of its centre (the robot's frame is a few centimetres off after a
//! drive), one its name calls, else the nearest box; for a place,
//! the object the gripper held before the step and the target nearest the target's
//! cloud. Truth per verb, on the world when the "after" views were captured:
//! - pick up: the gripper holds the object (one of those within 6 cm when the robot's
//!   name for it calls none of them);
//! - place: the gripper no longer holds it and it rests in (`in`) or on or in (`on`)
//!   the target;
//! - open / close: the link the step moved most (the one nearest the part when none
//!   moved) is open by the scenarios' default (0.1 m or rad) / within their closed
//!   default (0.01) of its closed limit;
//! - press, turn on, turn off: a button or key of the object (the named one where the
//!   world has a part of that name) was pressed more often than before the step.
//!
//! A step on the wrong thing (retrieval took another object for the one the goal named)
//! is judged on what it acted on: this measures the verifier's answer about the object
//! it was shown, not the retrieval; the goal's false success claims count the latter.

use std::collections::BTreeMap;

use asp_core::{Point3, Real};
use asp_sim::SimRobot;
use asp_sim::history::WorldMark;
use asp_sim::predicate::{is_in, is_on};
use asp_sim::world::{ObjectIdx, PartFunction, World};
use asp_skills::SkillRequest;
use asp_system::JournalEntry;
use asp_verify::{Answer, OutcomeVerdict, Relation, Verb};
use serde::{Deserialize, Serialize};

/// A link at least this far from its closed limit is open (the scenarios' `open` default).
const OPEN_MIN: Real = 0.1;
/// A link within this of its closed limit is closed (the scenarios' `closed` default).
const CLOSED_MAX: Real = 0.01;

/// One outcome verdict and the world's answer to its question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeJudgement {
    /// The tool call the skill ran for (1-based).
    pub call_index: u32,
    pub verb: Verb,
    pub question: String,
    pub answer: Answer,
    /// What the world says; `None` when it cannot be told (no views' times, the history
    /// does not reach back, no object near the skill's cloud).
    pub truth: Option<bool>,
}

/// Every outcome verdict in `journal`, judged on `sim`'s kept history.
pub fn judge_outcomes(journal: &[JournalEntry], sim: &SimRobot) -> Vec<OutcomeJudgement> {
    journal
        .iter()
        .filter_map(|e| match e {
            JournalEntry::Skill {
                call_index,
                request,
                reply,
            } => reply
                .report
                .outcome
                .as_ref()
                .map(|v| (*call_index, request.as_ref(), v)),
            _ => None,
        })
        .map(|(call_index, request, verdict)| {
            let truth = verdict.observed.and_then(|span| {
                let before = sim.world_at(span.before)?;
                let after = sim.world_at(span.after)?;
                step_truth(verdict, request, &before, &after)
            });
            OutcomeJudgement {
                call_index,
                verb: verdict.verb,
                question: verdict.question.clone(),
                answer: verdict.answer,
                truth,
            }
        })
        .collect()
}

/// Whether the step of `verdict` did what its question asks, by the world `before` and
/// `after` it.
pub fn step_truth(
    verdict: &OutcomeVerdict,
    request: &SkillRequest,
    before: &WorldMark,
    after: &WorldMark,
) -> Option<bool> {
    let cloud_centre = request.object_cloud.centroid();
    match verdict.verb {
        Verb::PickUp => {
            // any of the objects the cloud may have shown: a reference by look ("the
            // something red") names none of them
            let could_be = acted_objects(&before.world, &cloud_centre?, &request.object_name, None);
            Some(after.held.is_some_and(|h| could_be.contains(&h)))
        }
        Verb::Place => {
            let held = before.held.or_else(|| {
                let h = request.held.as_ref()?;
                acted_object(&before.world, &h.cloud.as_ref()?.centroid()?, &h.name, None)
            })?;
            let target = acted_object(
                &before.world,
                &cloud_centre?,
                &request.object_name,
                Some(held),
            )?;
            let w = &after.world;
            let rests = match request.relation {
                Relation::In => is_in(w, held, target),
                Relation::On => is_on(w, held, target) || is_in(w, held, target),
            };
            Some(after.held != Some(held) && rests)
        }
        Verb::Open | Verb::Close => {
            let x = acted_object(&before.world, &cloud_centre?, &request.object_name, None)?;
            let part_centre = request
                .affordance
                .as_ref()
                .and_then(|a| a.point_cloud.centroid());
            let link = acted_link(&before.world, &after.world, x, part_centre.as_ref())?;
            let l = &after.world.objects[x].links[link];
            let from_closed = l.position - l.lower;
            Some(if verdict.verb == Verb::Open {
                from_closed >= OPEN_MIN
            } else {
                from_closed <= CLOSED_MAX
            })
        }
        Verb::Press | Verb::TurnOn | Verb::TurnOff => {
            let x = acted_object(&before.world, &cloud_centre?, &request.object_name, None)?;
            let part = request.affordance.as_ref().map(|a| a.part.as_str());
            Some(pressed_between(&before.world, &after.world, x, part))
        }
    }
}

/// How far from a cloud's centre an object's box may be and still be what the cloud
/// showed: the robot's clouds are in the frame it believes it is in, a few centimetres
/// off the world's after a drive.
const NEAR_M: Real = 0.06;

/// The object the cloud centred at `p` showed, other than `except`: the first of
/// [`acted_objects`].
fn acted_object(
    world: &World,
    p: &Point3,
    name: &str,
    except: Option<ObjectIdx>,
) -> Option<ObjectIdx> {
    acted_objects(world, p, name, except).first().copied()
}

/// The objects the cloud centred at `p` may have shown, other than `except`, the
/// likeliest first: those whose boxes lie within [`NEAR_M`] of `p` and whose names share
/// a word with `name` (the words the robot called it by), else all within [`NEAR_M`],
/// else the nearest box. Nearer first (within 5 mm, the smaller object: a tack in its
/// cork board). Boxes, not surfaces: the centre of a basket's cloud lies in its hollow,
/// nearer the table top under it than its walls.
fn acted_objects(
    world: &World,
    p: &Point3,
    name: &str,
    except: Option<ObjectIdx>,
) -> Vec<ObjectIdx> {
    let volume = |i: ObjectIdx| {
        let b = world.objects[i].aabb();
        let e = b.extents();
        e.x * e.y * e.z
    };
    let box_distance = |i: ObjectIdx| {
        let b = world.objects[i].aabb();
        let d = (b.mins - p)
            .sup(&(p - b.maxs))
            .sup(&asp_core::Vector3::zeros());
        d.norm()
    };
    let words = |s: &str| -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| w.len() > 2 && !matches!(*w, "the" | "and" | "with"))
            .map(|w| w.to_lowercase().trim_end_matches('s').to_owned())
            .collect()
    };
    let called = words(name);
    let ranked = |mut pool: Vec<ObjectIdx>| {
        let bucket = |i: ObjectIdx| (box_distance(i) / 0.005).floor() as i64;
        pool.sort_by(|&a, &b| {
            bucket(a)
                .cmp(&bucket(b))
                .then(volume(a).total_cmp(&volume(b)))
        });
        pool
    };
    let others: Vec<ObjectIdx> = (0..world.objects.len())
        .filter(|i| Some(*i) != except)
        .collect();
    let near: Vec<ObjectIdx> = others
        .iter()
        .copied()
        .filter(|&i| box_distance(i) <= NEAR_M)
        .collect();
    let named: Vec<ObjectIdx> = near
        .iter()
        .copied()
        .filter(|&i| {
            words(&world.objects[i].name)
                .iter()
                .any(|w| called.contains(w))
        })
        .collect();
    if !named.is_empty() {
        ranked(named)
    } else if !near.is_empty() {
        ranked(near)
    } else {
        ranked(others).into_iter().take(1).collect()
    }
}

/// The link of object `x` the step moved most, or, when none moved, the one whose parts
/// lie nearest `part` (the only one when `part` is unknown).
fn acted_link(before: &World, after: &World, x: ObjectIdx, part: Option<&Point3>) -> Option<usize> {
    let (b, a) = (&before.objects[x], &after.objects[x]);
    let moved = (0..a.links.len())
        .map(|l| ((a.links[l].position - b.links[l].position).abs(), l))
        .filter(|(d, _)| *d > 1e-4)
        .max_by(|(da, _), (db, _)| da.total_cmp(db))
        .map(|(_, l)| l);
    if moved.is_some() || a.links.len() <= 1 {
        return moved.or((!a.links.is_empty()).then_some(0));
    }
    let part = part?;
    (0..a.links.len()).min_by(|&i, &j| {
        let d = |l: usize| {
            b.geoms
                .iter()
                .filter(|g| g.link == Some(l))
                .map(|g| g.prim.distance(&b.geom_pose(g), part))
                .fold(Real::INFINITY, Real::min)
        };
        d(i).total_cmp(&d(j))
    })
}

/// Whether a button or key of object `x` was pressed between the two worlds: the one
/// named `part` (spaces, underscores and case aside) when `x` has a part of that name,
/// else any.
fn pressed_between(before: &World, after: &World, x: ObjectIdx, part: Option<&str>) -> bool {
    let fold = |s: &str| {
        s.chars()
            .filter(|c| c.is_alphanumeric())
            .flat_map(char::to_lowercase)
            .collect::<String>()
    };
    let (b, a) = (&before.objects[x], &after.objects[x]);
    let pressable = |i: usize| {
        matches!(
            a.parts[i].function,
            PartFunction::Button | PartFunction::Key
        )
    };
    let named: Vec<usize> = part
        .map(|p| {
            (0..a.parts.len())
                .filter(|&i| pressable(i) && fold(&a.parts[i].name) == fold(p))
                .collect()
        })
        .unwrap_or_default();
    let candidates: Vec<usize> = if named.is_empty() {
        (0..a.parts.len()).filter(|&i| pressable(i)).collect()
    } else {
        named
    };
    candidates
        .into_iter()
        .any(|i| a.parts[i].presses > b.parts[i].presses)
}

/// Precision and recall of the Yes answers against the world, for one verb or all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct YesNoScore {
    /// The verb (`all` for the total).
    pub verb: String,
    /// Said yes, and it was so.
    pub true_yes: u32,
    /// Said yes, and it was not.
    pub false_yes: u32,
    /// Said no, and it was not.
    pub true_no: u32,
    /// Said no, and it was so.
    pub false_no: u32,
    /// Answered "cannot tell".
    pub cannot_tell: u32,
    /// Answers the world could not judge.
    pub unjudged: u32,
}

impl YesNoScore {
    /// Of the Yes answers, the share that were so; `None` without one.
    pub fn precision(&self) -> Option<f64> {
        let yes = self.true_yes + self.false_yes;
        (yes > 0).then(|| f64::from(self.true_yes) / f64::from(yes))
    }

    /// Of the steps that did succeed (answered yes or no), the share answered yes; `None`
    /// without one.
    pub fn recall(&self) -> Option<f64> {
        let so = self.true_yes + self.false_no;
        (so > 0).then(|| f64::from(self.true_yes) / f64::from(so))
    }

    fn add(&mut self, j: &OutcomeJudgement) {
        match (j.answer, j.truth) {
            (Answer::Unknown, _) => self.cannot_tell += 1,
            (_, None) => self.unjudged += 1,
            (Answer::Yes, Some(true)) => self.true_yes += 1,
            (Answer::Yes, Some(false)) => self.false_yes += 1,
            (Answer::No, Some(false)) => self.true_no += 1,
            (Answer::No, Some(true)) => self.false_no += 1,
        }
    }

    /// One score per verb that was asked, in the verbs' order, then `all`.
    pub fn per_verb<'a>(judged: impl IntoIterator<Item = &'a OutcomeJudgement>) -> Vec<YesNoScore> {
        let mut by_verb: BTreeMap<String, YesNoScore> = BTreeMap::new();
        let mut all = YesNoScore {
            verb: "all".into(),
            ..YesNoScore::default()
        };
        for j in judged {
            let verb = serde_json::to_value(j.verb)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            by_verb
                .entry(verb.clone())
                .or_insert_with(|| YesNoScore {
                    verb,
                    ..YesNoScore::default()
                })
                .add(j);
            all.add(j);
        }
        if by_verb.is_empty() {
            return Vec::new();
        }
        by_verb.into_values().chain([all]).collect()
    }
}
