//! The offline agent: no model server. It plans with the goal grammar and drives
//! the same tools through the same [`GoalRuntime`] (guards, retry limit, call cap,
//! remapping, state publication, events) as the LLM agent.
//!
//! Per subtask:
//! - every object phrase is resolved to a key: `object_retrieval` of the phrase's query
//!   (category and attributes), then, when the phrase singles one out by place or size
//!   ("near the tomato", "left", "biggest", "closest"), the spatial tools choose among
//!   the candidates;
//! - pick up → `grasp` (or `interact` with the subtask's action, e.g. "pull the power
//!   adapter out of the socket", "grasp the mug by its handle");
//! - place on → `place`, place in → `drop` (whichever is allowed if one is not), after
//!   resolving the location;
//! - open / close / turn on / turn off → `interact` with the subtask's action (or "open
//!   the drawer", …);
//! - with `agent_node.mobile`, `go_to(obj, action)` first, unless the previous subtask
//!   already drove to the same object (typing "911" drives to the phone once); a retry
//!   after a failed step drives again.
//!
//! A failed step is retried (after re-resolving objects the inventory lost) while the
//! failure is retryable or asks for a remap, up to `limits.max_retries_per_call` times.
//!
//! "both X" / "the two X" become X and "other X": the second resolves to a retrieved X
//! other than the first.
//!
//! What it cannot do (it reads the goal literally): goals that need commonsense
//! inference not in the text ("I'm thirsty", "tidy up", "make coffee", "put the fruit
//! away" — which objects, where?); quantifiers and sets beyond a pair ("all the cups",
//! "every red block") — it handles the objects it is given one by one, up to those
//! named; negation
//! and exclusion ("the cup that is not red"); ordinals and counting ("the second cup
//! from the left", "three apples"); chained relations ("the cup left of the bowl near the
//! plate": only the first relation is used); conditions ("if the drawer is open, close
//! it"); placements other than on/in ("next to", "under", "in front of"); verbs outside
//! its lexicon (pour, wipe, stir, fold, cut, hand over); and recovery that needs new
//! steps (moving an obstacle, emptying the gripper of something the goal does not
//! mention).

use std::collections::HashMap;

use asp_core::{ObjectKey, Skill, Within};

use crate::events::{GoalError, GoalErrorCode};
use crate::llm_agent::DriveEnd;
use crate::planner::phrases::{Relation, parse_object_phrase};
use crate::planner::{Plan, Preposition, Subtask, Verb};
use crate::runtime::{CallOutcome, GoalRuntime, Stop};
use crate::tools::{ToolName, ToolRequest};

/// Why a subtask step did not work.
enum StepError {
    /// The runtime ended the goal.
    Stop(Stop),
    /// The step failed; `retryable` when trying again may help.
    Failed { message: String, retryable: bool },
}

impl From<Stop> for StepError {
    fn from(s: Stop) -> Self {
        StepError::Stop(s)
    }
}

type Step<T> = Result<T, StepError>;

struct Offline<'r, 'a> {
    rt: &'r mut GoalRuntime<'a>,
    /// Object phrase → key, while the key is in the inventory.
    resolved: HashMap<String, ObjectKey>,
    /// Queries already looked for again because too few were found.
    looked_again: std::collections::HashSet<String>,
    /// The object the base was last driven to by `go_to`; consecutive subtasks on it
    /// (the keys of one keyboard) do not drive again.
    at: Option<ObjectKey>,
    next_call: u32,
    /// The object a pick-up step the verifier confirmed put in the gripper.
    picked: Option<ObjectKey>,
    /// The subtask running is the plan's last.
    last: bool,
    /// Choices no check could confirm, said in the summary.
    unconfirmed: Vec<String>,
    /// An object retrieval may answer that cannot be what is looked for now: the held
    /// object while resolving where it goes (a view that takes it for the location
    /// misjudged).
    ruled_out: Option<ObjectKey>,
}

/// Runs the plan's subtasks in order.
pub(crate) async fn drive(rt: &mut GoalRuntime<'_>, plan: &Plan) -> DriveEnd {
    let mut agent = Offline {
        rt,
        resolved: HashMap::new(),
        looked_again: Default::default(),
        at: None,
        next_call: 0,
        picked: None,
        last: false,
        unconfirmed: Vec::new(),
        ruled_out: None,
    };
    let max_retries = agent.rt.settings.max_retries_per_call;
    let mut done = Vec::new();
    for (i, st) in plan.subtasks.iter().enumerate() {
        let mut failures = 0;
        agent.last = i + 1 == plan.subtasks.len();
        loop {
            match agent.subtask(st).await {
                Ok(()) => break,
                Err(StepError::Stop(stop)) => return DriveEnd::Stopped(stop),
                Err(StepError::Failed { message, retryable }) => {
                    failures += 1;
                    // the retry drives again: what the failed step did (a door half
                    // open, an object pushed) may call for another base pose
                    agent.at = None;
                    if !retryable || failures > max_retries {
                        let tries = if retryable {
                            format!(" after {failures} attempts")
                        } else {
                            String::new()
                        };
                        let error = GoalError {
                            code: GoalErrorCode::SubtaskFailed,
                            message: format!("subtask {} \"{st}\" failed{tries}: {message}", i + 1),
                        };
                        let summary = format!("{}; {}", error.message, summary(&done));
                        return DriveEnd::Failed(error, summary);
                    }
                }
            }
        }
        done.push(st.to_string());
    }
    let mut said = summary(&done);
    if !agent.unconfirmed.is_empty() {
        said.push_str(&format!("; unconfirmed: {}", agent.unconfirmed.join("; ")));
    }
    DriveEnd::Completed(said)
}

/// Answers a question of where `object` is (in `room`) from the building memory
/// (`recall_memory`), without moving: the remembered places, or why there are none.
pub(crate) async fn answer_where(
    rt: &mut GoalRuntime<'_>,
    object: &str,
    within: &Within,
) -> DriveEnd {
    let failed = |message: String| {
        DriveEnd::Failed(
            GoalError {
                code: GoalErrorCode::SubtaskFailed,
                message,
            },
            String::new(),
        )
    };
    if !rt.offered().contains(&ToolName::RecallMemory) {
        return failed(format!(
            "cannot say where the {object} is: only a mobile robot keeps a memory of its tour (agent_node.mobile is false)"
        ));
    }
    let req = ToolRequest::RecallMemory {
        query: object.to_owned(),
        within: within.clone(),
    };
    let out = match rt.call("offline_1", req).await {
        Ok(out) => out.output,
        Err(stop) => return DriveEnd::Stopped(stop),
    };
    let said = sentence(&out.feedback_msg);
    match &out.output {
        asp_core::ToolValue::Recollection(r) if out.success && !r.places.is_empty() => {
            DriveEnd::Completed(said)
        }
        _ => failed(said),
    }
}

/// `text` with a capital first letter and a full stop.
fn sentence(text: &str) -> String {
    let mut chars = text.trim().chars();
    let mut out: String = chars
        .next()
        .map(|c| c.to_uppercase().collect())
        .unwrap_or_default();
    out.push_str(chars.as_str());
    if !out.ends_with(['.', '!', '?', ')']) {
        out.push('.');
    }
    out
}

fn summary(done: &[String]) -> String {
    if done.is_empty() {
        "no subtask completed".into()
    } else {
        format!("completed {} subtask(s): {}", done.len(), done.join("; "))
    }
}

impl Offline<'_, '_> {
    async fn call(&mut self, req: ToolRequest) -> Step<CallOutcome> {
        self.next_call += 1;
        let id = format!("offline_{}", self.next_call);
        Ok(self.rt.call(&id, req).await?)
    }

    /// Calls and requires success.
    async fn must(&mut self, req: ToolRequest) -> Step<CallOutcome> {
        let out = self.call(req).await?;
        if out.output.success {
            Ok(out)
        } else {
            let retryable = out
                .output
                .failure
                .as_ref()
                .is_some_and(|f| f.retryable || f.needs_remap);
            Err(StepError::Failed {
                message: out.output.feedback_msg,
                retryable,
            })
        }
    }

    fn allowed(&self, skill: Skill) -> bool {
        self.rt.offered().contains(&ToolName::Skill(skill))
    }

    async fn subtask(&mut self, st: &Subtask) -> Step<()> {
        match st.verb {
            Verb::PickUp => {
                let key = self.resolve(&st.object, &st.excluded, &st.within()).await?;
                if self.rt.state.held_object.as_ref() == Some(&key) {
                    // a failed grasp may leave it in the gripper unconfirmed: that is a
                    // pick only when a later verified step (the place) shows it
                    if self.picked.as_ref() == Some(&key) || !self.last {
                        return Ok(());
                    }
                    return Err(StepError::Failed {
                        message: format!(
                            "the gripper holds {key}, but the verifier did not confirm the pick"
                        ),
                        retryable: false,
                    });
                }
                if let Some(held) = self.rt.state.held_object.clone() {
                    return Err(StepError::Failed {
                        message: format!(
                            "the gripper holds {held} and the goal does not say where to put it"
                        ),
                        retryable: false,
                    });
                }
                let action = st
                    .action
                    .clone()
                    .unwrap_or_else(|| format!("pick up the {}", st.object));
                self.approach(&key, &action).await?;
                let req = match &st.action {
                    Some(a) => ToolRequest::Interact {
                        obj: key.clone(),
                        action: a.clone(),
                    },
                    None => ToolRequest::Skill {
                        skill: Skill::Grasp,
                        obj: key.clone(),
                    },
                };
                self.must(req).await?;
                self.picked = Some(key);
                Ok(())
            }
            Verb::Place => {
                let held = self
                    .rt
                    .state
                    .held_object
                    .clone()
                    .ok_or_else(|| StepError::Failed {
                        message: format!(
                            "nothing is held to place; the {} was not picked up",
                            st.object
                        ),
                        retryable: false,
                    })?;
                let location = st.location.clone().unwrap_or_default();
                // the drop target is the part when one is named ("top drawer")
                let target_phrase = st.location_part.clone().unwrap_or(location);
                self.ruled_out = Some(held.clone());
                let target = self
                    .resolve(&target_phrase, &[], &st.location_within())
                    .await;
                self.ruled_out = None;
                let target = target?;
                if target == held {
                    return Err(StepError::Failed {
                        message: format!(
                            "the location {target_phrase:?} resolved to the held object {held}"
                        ),
                        retryable: false,
                    });
                }
                let wanted = match st.preposition {
                    Some(Preposition::In) => Skill::Drop,
                    _ => Skill::Place,
                };
                let other = if wanted == Skill::Drop {
                    Skill::Place
                } else {
                    Skill::Drop
                };
                let skill = if self.allowed(wanted) || !self.allowed(other) {
                    wanted
                } else {
                    other
                };
                self.approach(
                    &target,
                    &format!("{skill} the held object on the {target_phrase}"),
                )
                .await?;
                self.must(ToolRequest::Skill { skill, obj: target }).await?;
                Ok(())
            }
            Verb::GoTo => {
                if !self.rt.settings.mobile {
                    return Err(StepError::Failed {
                        message: format!(
                            "cannot go to the {}: this robot has no base to drive (agent_node.mobile is false)",
                            st.object
                        ),
                        retryable: false,
                    });
                }
                let key = match st.room_drive() {
                    Some(room) => self.landmark_of(room, &st.within()).await?,
                    None => self.resolve(&st.object, &st.excluded, &st.within()).await?,
                };
                // the base goes even when it stood there for an earlier step: the goal
                // is to be there now
                self.at = None;
                self.approach(&key, &format!("go to the {}", st.object))
                    .await?;
                Ok(())
            }
            Verb::Open | Verb::Close | Verb::TurnOn | Verb::TurnOff => {
                let key = self.resolve(&st.object, &st.excluded, &st.within()).await?;
                let action = st.action.clone().unwrap_or_else(|| {
                    let what = st.part.as_deref().unwrap_or(&st.object);
                    format!("{} the {what}", st.verb.phrase())
                });
                self.approach(&key, &action).await?;
                self.must(ToolRequest::Interact { obj: key, action })
                    .await?;
                Ok(())
            }
        }
    }

    /// What to drive to for "go to the {room}": the robot has no room polygons, so the
    /// room is reached by the objects the building memory took it for (furniture first,
    /// which stays put and is found again on arrival; then the most telling: a fridge
    /// says kitchen, a chair does not), each looked for in the room as any object (the
    /// live map, then where the memory saw it). The drive's arrival is then checked as
    /// any drive's: that object found again from where the base stops.
    async fn landmark_of(&mut self, room: &str, within: &Within) -> Step<ObjectKey> {
        let failed = |message: String| StepError::Failed {
            message,
            retryable: false,
        };
        if !self.rt.offered().contains(&ToolName::RecallMemory) {
            return Err(failed(format!(
                "cannot go to the {room}: rooms are known from the building memory of a tour, which this robot does not consult"
            )));
        }
        let out = self
            .call(ToolRequest::RecallMemory {
                query: room.to_owned(),
                within: within.clone(),
            })
            .await?;
        let landmarks = match &out.output.output {
            asp_core::ToolValue::Recollection(r) if out.output.success => r.room_landmarks.clone(),
            _ => Vec::new(),
        };
        if landmarks.is_empty() {
            return Err(failed(format!(
                "cannot tell where the {room} is ({}); name something in it to go to, e.g. \"go to the table in the {room}\"",
                out.output.feedback_msg.trim_end_matches('.')
            )));
        }
        let mut tried = Vec::new();
        for landmark in &landmarks {
            // any one of them will do: "small black reading glasses" is no request to
            // single out the smallest pair
            let query = parse_object_phrase(landmark).query;
            match self.retrieve(&query, within).await {
                Ok(found) if !found.is_empty() => return Ok(found[0].clone()),
                Ok(_) => tried.push(format!("{landmark}: nothing found")),
                Err(StepError::Failed { message, .. }) => {
                    tried.push(format!("{landmark}: {message}"))
                }
                Err(stop) => return Err(stop),
            }
        }
        Err(failed(format!(
            "cannot go to the {room}: none of what the building memory saw there was found again ({})",
            tried.join("; ")
        )))
    }

    /// `go_to` first on a mobile robot, unless the base already stands at this object.
    async fn approach(&mut self, key: &ObjectKey, action: &str) -> Step<()> {
        if self.rt.settings.mobile && self.at.as_ref() != Some(key) {
            self.at = None;
            self.must(ToolRequest::GoTo {
                obj: key.clone(),
                action: action.to_owned(),
            })
            .await?;
            self.at = Some(key.clone());
        }
        Ok(())
    }

    /// Retrieves the objects the phrase's query names, leaves out those that retrieval
    /// also finds for an `excluded` attribute ("not the red one"), and picks one by its
    /// relation.
    async fn resolve(
        &mut self,
        phrase: &str,
        excluded: &[String],
        within: &Within,
    ) -> Step<ObjectKey> {
        if !excluded.is_empty() {
            return self.resolve_excluding(phrase, excluded, within).await;
        }
        let memo = in_room(phrase, within);
        if let Some(k) = self.resolved.get(&memo)
            && self.rt.state.in_inventory(k)
        {
            return Ok(k.clone());
        }
        // "other green apple": a green apple other than the one already resolved
        if let Some(base) = phrase.strip_prefix("other ") {
            let taken = self.resolved.get(&in_room(base, within)).cloned();
            let query = parse_object_phrase(base).query;
            let mut other = self
                .retrieve(&query, within)
                .await?
                .into_iter()
                .find(|k| Some(k) != taken.as_ref());
            // the map may have missed it or a look misjudged it: look again once
            if other.is_none() && self.looked_again.insert(phrase.to_owned()) {
                self.rt.look_again(&format!(
                    "{phrase:?} needs a second {query:?}, but only one was found"
                ));
                other = self
                    .retrieve(&query, within)
                    .await?
                    .into_iter()
                    .find(|k| Some(k) != taken.as_ref());
            }
            let key = other.ok_or_else(|| StepError::Failed {
                message: format!(
                    "no other {query:?} than {}",
                    taken.map_or_else(|| "the first".to_owned(), |k| k.to_string())
                ),
                retryable: false,
            })?;
            self.resolved.insert(memo, key.clone());
            return Ok(key);
        }
        let p = parse_object_phrase(phrase);
        let mut candidates = self.retrieve(&p.query, within).await?;
        // "the cup on the left", "the small ball", "the egg near the tomato": the goal
        // singles one out of several; one found means the map missed the others or a
        // look misjudged them, so look again (once per query) before settling for it
        if let (Some(_), [_]) = (&p.relation, candidates.as_slice())
            && self.looked_again.insert(p.query.clone())
        {
            self.rt.look_again(&format!(
                "{phrase:?} singles one out of several, but one {:?} was found",
                p.query
            ));
            candidates = self.retrieve(&p.query, within).await?;
        }
        // still one, and the goal compares it with its twins ("the small ball"): a twin
        // usually lies near it, so on a mobile robot drive up to the one found and look
        // from there (once per query) before settling for it
        if let (Some(rel), [only]) = (&p.relation, candidates.as_slice())
            && rel.compares_candidates()
            && self.rt.settings.mobile
            && self
                .looked_again
                .insert(format!("{} (from close by)", p.query))
        {
            let only = only.clone();
            self.approach(&only, &format!("look at the {}", p.query))
                .await?;
            self.rt.look_again(&format!(
                "{phrase:?} singles one out of several, but one {:?} was found: looking again from beside {only}",
                p.query
            ));
            candidates = self.retrieve(&p.query, within).await?;
        }
        let key = match (&p.relation, candidates.as_slice()) {
            (_, []) => {
                return Err(StepError::Failed {
                    message: format!("nothing matched {:?}", p.query),
                    retryable: false,
                });
            }
            (Some(rel), [only]) if rel.compares_candidates() => {
                // it may be the one meant, or its twin, missed by every look
                let why = format!(
                    "{phrase:?} singles one out of several, but {only} was the only {:?} found: it may not be the one meant",
                    p.query
                );
                if !self.unconfirmed.contains(&why) {
                    self.rt.unconfirmed(why.clone());
                    self.unconfirmed.push(why);
                }
                only.clone()
            }
            (_, [only]) => only.clone(),
            (None, [first, ..]) => first.clone(),
            (Some(rel), _) => self.choose(rel.clone(), candidates.clone()).await?,
        };
        // the held object is never where it goes: the best of the others instead
        let key = match &self.ruled_out {
            Some(r) if *r == key => candidates.iter().find(|c| *c != r).cloned().unwrap_or(key),
            _ => key,
        };
        self.resolved.insert(memo, key.clone());
        Ok(key)
    }

    /// [`Self::resolve`] for an object with attributes ruled out.
    async fn resolve_excluding(
        &mut self,
        phrase: &str,
        excluded: &[String],
        within: &Within,
    ) -> Step<ObjectKey> {
        let memo = in_room(&format!("{phrase} (not {})", excluded.join(", ")), within);
        if let Some(k) = self.resolved.get(&memo)
            && self.rt.state.in_inventory(k)
        {
            return Ok(k.clone());
        }
        let p = parse_object_phrase(phrase);
        let mut candidates = self.retrieve(&p.query, within).await?;
        for a in excluded {
            let ruled_out = self
                .retrieve_if_any(&format!("{a} {}", p.query), within)
                .await?;
            candidates.retain(|c| !ruled_out.contains(c));
        }
        let key = match (&p.relation, candidates.as_slice()) {
            (_, []) => {
                return Err(StepError::Failed {
                    message: format!("every {:?} found is {}", p.query, excluded.join(" or ")),
                    retryable: false,
                });
            }
            (_, [only]) => only.clone(),
            (None, [first, ..]) => first.clone(),
            (Some(rel), _) => self.choose(rel.clone(), candidates).await?,
        };
        self.resolved.insert(memo, key.clone());
        Ok(key)
    }

    /// A reference object of a relation ("the tomato" in "the egg near the tomato"): the
    /// best retrieval match; its own relations are not followed.
    async fn resolve_reference(&mut self, phrase: &str) -> Step<ObjectKey> {
        if let Some(k) = self.resolved.get(phrase)
            && self.rt.state.in_inventory(k)
        {
            return Ok(k.clone());
        }
        let query = parse_object_phrase(phrase).query;
        let key = self
            .retrieve(&query, &Within::anywhere())
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| StepError::Failed {
                message: format!("nothing matched {query:?}"),
                retryable: false,
            })?;
        self.resolved.insert(phrase.to_owned(), key.clone());
        Ok(key)
    }

    /// The objects retrieval finds for `query`, best first. Nothing found may be the
    /// map's miss or one look's misjudgement (each view errs on its own): look again
    /// once per query before answering that nothing matched.
    async fn retrieve(&mut self, query: &str, within: &Within) -> Step<Vec<ObjectKey>> {
        let req = ToolRequest::ObjectRetrieval {
            query: query.to_owned(),
            within: within.clone(),
        };
        match self.must(req.clone()).await {
            Err(StepError::Failed { .. })
                if self.rt.nothing_matched && self.looked_again.insert(query.to_owned()) =>
            {
                self.rt.look_again(&format!(
                    "nothing matched {query:?}: the map may have missed it or a look misjudged it"
                ));
                self.must(req.clone()).await?;
            }
            first => {
                first?;
            }
        }
        let Some(ruled_out) = self.ruled_out.clone() else {
            return Ok(self.rt.last_retrieval.clone());
        };
        // the held object stays among the candidates (it counts in "the big box" when
        // the small one is held) but cannot be chosen; when it is all that matched,
        // that view misjudged it and the location may be out of the map's view: look
        // again (once per query) before giving up
        let only_it = |found: &[ObjectKey]| found.iter().all(|k| *k == ruled_out);
        if only_it(&self.rt.last_retrieval)
            && self
                .looked_again
                .insert(format!("{query} (not {ruled_out})"))
        {
            self.rt.look_again(&format!(
                "only the held object {ruled_out} matched {query:?}, and it cannot be where it goes"
            ));
            self.must(req).await?;
        }
        if only_it(&self.rt.last_retrieval) {
            return Err(StepError::Failed {
                message: format!(
                    "nothing but the held object {ruled_out} matched {query:?}, and it cannot be where it goes"
                ),
                retryable: false,
            });
        }
        Ok(self.rt.last_retrieval.clone())
    }

    /// The objects retrieval finds for `query`; none is an answer, not a failure (an
    /// attribute ruled out that no candidate has).
    async fn retrieve_if_any(&mut self, query: &str, within: &Within) -> Step<Vec<ObjectKey>> {
        let out = self
            .call(ToolRequest::ObjectRetrieval {
                query: query.to_owned(),
                within: within.clone(),
            })
            .await?;
        if out.output.success || self.rt.nothing_matched {
            Ok(self.rt.last_retrieval.clone())
        } else {
            Err(StepError::Failed {
                message: out.output.feedback_msg,
                retryable: false,
            })
        }
    }

    async fn number(&mut self, req: ToolRequest) -> Step<f64> {
        let out = self.must(req).await?;
        match out.output.output {
            asp_core::ToolValue::Number(n) => Ok(n),
            other => Err(StepError::Failed {
                message: format!("expected a number, got {other:?}"),
                retryable: false,
            }),
        }
    }

    async fn truth(&mut self, req: ToolRequest) -> Step<bool> {
        let out = self.must(req).await?;
        match out.output.output {
            asp_core::ToolValue::Bool(b) => Ok(b),
            other => Err(StepError::Failed {
                message: format!("expected a truth value, got {other:?}"),
                retryable: false,
            }),
        }
    }

    /// The candidate that fits the relation best.
    async fn choose(&mut self, rel: Relation, candidates: Vec<ObjectKey>) -> Step<ObjectKey> {
        let far = matches!(rel, Relation::FarFrom(_));
        let left = matches!(rel, Relation::LeftOf(_));
        match rel {
            Relation::Near(r) | Relation::FarFrom(r) => {
                let reference = self.resolve_reference(&r).await?;
                let mut best: Option<(f64, ObjectKey)> = None;
                for c in candidates.into_iter().filter(|c| *c != reference) {
                    let d = self
                        .number(ToolRequest::DistanceBetween {
                            a: c.clone(),
                            b: reference.clone(),
                        })
                        .await?;
                    let better = best
                        .as_ref()
                        .is_none_or(|(bd, _)| if far { d > *bd } else { d < *bd });
                    if better {
                        best = Some((d, c));
                    }
                }
                best.map(|(_, k)| k).ok_or_else(|| StepError::Failed {
                    message: format!("the only candidate is the reference object {reference}"),
                    retryable: false,
                })
            }
            Relation::LeftOf(r) | Relation::RightOf(r) => {
                let reference = self.resolve_reference(&r).await?;
                for c in candidates.into_iter().filter(|c| *c != reference) {
                    let req = if left {
                        ToolRequest::LeftOf {
                            a: c.clone(),
                            b: reference.clone(),
                        }
                    } else {
                        ToolRequest::RightOf {
                            a: c.clone(),
                            b: reference.clone(),
                        }
                    };
                    if self.truth(req).await? {
                        return Ok(c);
                    }
                }
                Err(StepError::Failed {
                    message: format!(
                        "no candidate is {} of {reference}",
                        if left { "left" } else { "right" }
                    ),
                    retryable: false,
                })
            }
            Relation::Leftmost | Relation::Rightmost => {
                let left = rel == Relation::Leftmost;
                let mut iter = candidates.into_iter();
                let mut best = iter.next().ok_or_else(|| StepError::Failed {
                    message: "no candidates".into(),
                    retryable: false,
                })?;
                for c in iter {
                    let req = if left {
                        ToolRequest::LeftOf {
                            a: c.clone(),
                            b: best.clone(),
                        }
                    } else {
                        ToolRequest::RightOf {
                            a: c.clone(),
                            b: best.clone(),
                        }
                    };
                    if self.truth(req).await? {
                        best = c;
                    }
                }
                Ok(best)
            }
            Relation::Between(a, b) => {
                let a = self.resolve_reference(&a).await?;
                let b = self.resolve_reference(&b).await?;
                let mut best: Option<(f64, ObjectKey)> = None;
                for c in candidates.into_iter().filter(|c| *c != a && *c != b) {
                    let mut d = 0.0;
                    for r in [&a, &b] {
                        d += self
                            .number(ToolRequest::DistanceBetween {
                                a: c.clone(),
                                b: r.clone(),
                            })
                            .await?;
                    }
                    if best.as_ref().is_none_or(|(bd, _)| d < *bd) {
                        best = Some((d, c));
                    }
                }
                best.map(|(_, k)| k).ok_or_else(|| StepError::Failed {
                    message: format!("no candidate other than {a} and {b}"),
                    retryable: false,
                })
            }
            Relation::NthFrom { n, left } => {
                // ordered left to right by pairwise left-of answers (insertion sort)
                let mut ordered: Vec<ObjectKey> = Vec::new();
                for c in candidates {
                    let mut at = ordered.len();
                    for (i, o) in ordered.iter().enumerate() {
                        let req = ToolRequest::LeftOf {
                            a: c.clone(),
                            b: o.clone(),
                        };
                        if self.truth(req).await? {
                            at = i;
                            break;
                        }
                    }
                    ordered.insert(at, c);
                }
                if !left {
                    ordered.reverse();
                }
                let index = if n < 0 {
                    ordered
                        .len()
                        .checked_sub(usize::try_from(-n).unwrap_or(usize::MAX))
                } else {
                    usize::try_from(n).ok().and_then(|n| n.checked_sub(1))
                };
                index
                    .and_then(|i| ordered.get(i).cloned())
                    .ok_or_else(|| StepError::Failed {
                        message: format!(
                            "the {n}. from the {} was asked for, {} found",
                            if left { "left" } else { "right" },
                            ordered.len()
                        ),
                        retryable: false,
                    })
            }
            Relation::Largest | Relation::Smallest | Relation::Closest | Relation::Farthest => {
                let mut best: Option<(f64, ObjectKey)> = None;
                for c in candidates {
                    let (v, larger_wins) = match rel {
                        Relation::Largest | Relation::Smallest => (
                            self.number(ToolRequest::SizeOf { obj: c.clone() }).await?,
                            rel == Relation::Largest,
                        ),
                        _ => (
                            self.number(ToolRequest::DistanceTo { obj: c.clone() })
                                .await?,
                            rel == Relation::Farthest,
                        ),
                    };
                    let better = best
                        .as_ref()
                        .is_none_or(|(bv, _)| if larger_wins { v > *bv } else { v < *bv });
                    if better {
                        best = Some((v, c));
                    }
                }
                best.map(|(_, k)| k).ok_or_else(|| StepError::Failed {
                    message: "no candidates".into(),
                    retryable: false,
                })
            }
        }
    }
}

/// The memo key of a phrase resolved within a room or on a storey ("desk in the
/// office").
fn in_room(phrase: &str, within: &Within) -> String {
    format!("{phrase}{within}")
}
