//! [`TableWorld`]: an in-memory [`ToolBackend`] — a small table-top world of objects
//! and their states — for tests and benchmarks of the agent loop. It is not a
//! simulator: no geometry beyond centroids and sizes, no perception, no motion. Its
//! skills change object states the way a working robot would (grasp holds, place/drop
//! puts down, interact presses, opens, unplugs) and refuse what a robot could not do
//! (grasp what is not graspable, drop into a closed drawer). Failures and slow skills
//! can be scripted; every call is logged, so tests can assert that guarded calls never
//! reached the backend.

use std::collections::{HashMap, VecDeque};
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use asp_core::{Failure, FailureKind, ObjectKey, Skill};
use async_trait::async_trait;

use crate::backend::{ActionReport, ToolBackend, ToolContext, ToolFailure, ToolResult, Verdict};

/// One object of the world.
#[derive(Debug, Clone, PartialEq)]
pub struct WorldObject {
    /// A unique name, e.g. `mug`.
    pub name: String,
    /// Words retrieval matches against: category, synonyms, colour, material, parts.
    pub description: String,
    /// Centroid in the robot frame (x forward, y left, z up), metres.
    pub position: [f64; 3],
    /// Bounding-box diagonal, metres.
    pub size: f64,
    pub graspable: bool,
    /// A container one can drop into.
    pub container: bool,
    /// `Some(open)` for drawers, doors, lids.
    pub open: Option<bool>,
    /// `Some(on)` for devices with a switch.
    pub on: Option<bool>,
    /// Buttons, bells, keys.
    pub pressable: bool,
    /// `Some(plugged)` for plugs, adapters, thumbtacks stuck in something.
    pub plugged: Option<bool>,
    /// Times pressed.
    pub presses: u32,
    /// `(on|in, other object)` after a place or drop.
    pub resting: Option<(String, String)>,
}

impl WorldObject {
    pub fn new(name: &str, description: &str, position: [f64; 3], size: f64) -> Self {
        Self {
            name: name.to_owned(),
            description: description.to_owned(),
            position,
            size,
            graspable: true,
            container: false,
            open: None,
            on: None,
            pressable: false,
            plugged: None,
            presses: 0,
            resting: None,
        }
    }
    pub fn fixed(mut self) -> Self {
        self.graspable = false;
        self
    }
    pub fn container(mut self) -> Self {
        self.container = true;
        self
    }
    pub fn openable(mut self, open: bool) -> Self {
        self.open = Some(open);
        self
    }
    pub fn switch(mut self, on: bool) -> Self {
        self.on = Some(on);
        self
    }
    pub fn pressable(mut self) -> Self {
        self.pressable = true;
        self
    }
    pub fn plugged(mut self) -> Self {
        self.plugged = Some(true);
        self
    }
}

/// A failure to return for the next call of a tool.
#[derive(Debug, Clone)]
struct ScriptedFailure {
    tool: String,
    failure: ToolFailure,
}

#[derive(Debug, Default)]
struct Inner {
    objects: Vec<WorldObject>,
    /// Object index → its key.
    keys: HashMap<usize, ObjectKey>,
    /// Key stem → next counter.
    counters: HashMap<String, u32>,
    held: Option<usize>,
    calls: Vec<String>,
    failures: VecDeque<ScriptedFailure>,
    remaps: u32,
    cancelled_calls: u32,
    /// Objects retrieval does not find until this many more remaps (missed by the map).
    hidden: HashMap<usize, u32>,
    /// Objects retrieval also returns, first, for queries with this word until the next
    /// remap (a look that took them for it).
    mistaken: Vec<(usize, String)>,
    /// Objects no look finds (a twin every view misjudges).
    unseen: std::collections::HashSet<usize>,
}

/// The in-memory world. All methods take `&self`; state sits behind a mutex.
#[derive(Debug, Default)]
pub struct TableWorld {
    inner: Mutex<Inner>,
    /// Skills and interact take this long (for cancellation tests), cancellable.
    skill_delay: Mutex<Duration>,
    /// Whether a slow skill honours the cancel token (off: it runs to the end).
    honour_cancel: Mutex<bool>,
    /// Retrieval returns at most this many candidates (SPEC: top-k with k = 3).
    pub top_k: usize,
}

const STOPWORDS: &[&str] = &[
    "the", "a", "an", "of", "with", "its", "some", "that", "is", "and",
];

impl TableWorld {
    pub fn new(objects: Vec<WorldObject>) -> Self {
        Self {
            inner: Mutex::new(Inner {
                objects,
                ..Inner::default()
            }),
            skill_delay: Mutex::new(Duration::ZERO),
            honour_cancel: Mutex::new(true),
            top_k: 3,
        }
    }

    /// A table with the objects of the study's tabletop goals: a mug with a handle, a
    /// bowl, a plate, two eggs (one near a tomato), a pan, two cups (left and right), a
    /// big and a small box, a desk bell, a power adapter in a socket, a cork board with a
    /// thumbtack, a cabinet with a drawer, a keyboard, a phone and a lamp.
    pub fn tabletop() -> Self {
        Self::new(vec![
            WorldObject::new(
                "mug",
                "red ceramic mug with a handle",
                [0.45, 0.10, 0.05],
                0.14,
            ),
            WorldObject::new("bowl", "blue ceramic bowl", [0.50, -0.15, 0.04], 0.18).container(),
            WorldObject::new("plate", "white round plate dish", [0.40, -0.30, 0.01], 0.24),
            WorldObject::new("egg_a", "white egg", [0.55, 0.30, 0.03], 0.06),
            WorldObject::new("egg_b", "brown egg", [0.35, -0.05, 0.03], 0.06),
            WorldObject::new("tomato", "red tomato vegetable", [0.57, 0.34, 0.03], 0.08),
            WorldObject::new(
                "pan",
                "black frying pan with a handle",
                [0.60, -0.05, 0.03],
                0.30,
            )
            .container(),
            WorldObject::new("cup_left", "green plastic cup", [0.45, 0.35, 0.05], 0.10),
            WorldObject::new("cup_right", "green plastic cup", [0.45, -0.40, 0.05], 0.10),
            WorldObject::new("box_big", "cardboard box", [0.65, 0.20, 0.08], 0.35).container(),
            WorldObject::new("box_small", "cardboard box", [0.65, 0.45, 0.05], 0.15).container(),
            WorldObject::new(
                "bell",
                "silver desk bell with a button",
                [0.30, 0.25, 0.03],
                0.09,
            )
            .fixed()
            .pressable(),
            WorldObject::new(
                "adapter",
                "black power adapter plug charger",
                [0.70, -0.35, 0.10],
                0.07,
            )
            .plugged(),
            WorldObject::new("thumbtack", "red thumbtack pin", [0.70, 0.00, 0.25], 0.02).plugged(),
            WorldObject::new("board", "cork board pin board", [0.72, 0.00, 0.25], 0.50).fixed(),
            WorldObject::new(
                "drawer",
                "wooden drawer of the cabinet",
                [0.60, 0.55, 0.20],
                0.40,
            )
            .fixed()
            .container()
            .openable(false),
            WorldObject::new(
                "cabinet",
                "wooden cabinet with a drawer",
                [0.62, 0.55, 0.25],
                0.60,
            )
            .fixed(),
            WorldObject::new(
                "keyboard",
                "black computer keyboard with keys",
                [0.35, -0.20, 0.02],
                0.45,
            )
            .fixed()
            .pressable(),
            WorldObject::new(
                "phone",
                "grey desk telephone phone with number keys",
                [0.30, -0.45, 0.04],
                0.22,
            )
            .fixed()
            .pressable(),
            WorldObject::new(
                "lamp",
                "desk lamp light with a switch",
                [0.75, 0.40, 0.20],
                0.40,
            )
            .fixed()
            .switch(false),
        ])
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        self.inner
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Every backend call so far, as `tool(args)` strings.
    pub fn calls(&self) -> Vec<String> {
        self.lock().calls.clone()
    }

    /// Makes the next call of `tool` fail with `failure`.
    pub fn fail_next(&self, tool: &str, failure: ToolFailure) {
        self.lock().failures.push_back(ScriptedFailure {
            tool: tool.to_owned(),
            failure,
        });
    }

    /// Makes skills and interact take `delay` (cancellable unless `honour_cancel` is
    /// false).
    pub fn set_skill_delay(&self, delay: Duration, honour_cancel: bool) {
        *self
            .skill_delay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = delay;
        *self
            .honour_cancel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = honour_cancel;
    }

    /// The object named `name`.
    pub fn object(&self, name: &str) -> Option<WorldObject> {
        self.lock().objects.iter().find(|o| o.name == name).cloned()
    }

    /// The name of the held object.
    pub fn held(&self) -> Option<String> {
        let inner = self.lock();
        inner.held.map(|i| inner.objects[i].name.clone())
    }

    /// Retrieval misses `name` until the map is rebuilt (a look that did not see it).
    pub fn hide_until_remap(&self, name: &str) {
        self.hide_for_remaps(name, 1);
    }

    /// Retrieval misses `name` until the map has been rebuilt `remaps` times (looks
    /// from where the robot stands do not see it).
    pub fn hide_for_remaps(&self, name: &str, remaps: u32) {
        let mut inner = self.lock();
        if let Some(i) = inner.objects.iter().position(|o| o.name == name) {
            inner.hidden.insert(i, remaps);
        }
    }

    /// Until the map is rebuilt, retrieval takes `name` for every query with `word`,
    /// and returns it first (a look that misjudged it).
    pub fn mistake_until_remap(&self, name: &str, word: &str) {
        let mut inner = self.lock();
        if let Some(i) = inner.objects.iter().position(|o| o.name == name) {
            inner.mistaken.push((i, word.to_owned()));
        }
    }

    /// Retrieval never finds `name`, however often the map is rebuilt.
    pub fn hide_for_good(&self, name: &str) {
        let mut inner = self.lock();
        if let Some(i) = inner.objects.iter().position(|o| o.name == name) {
            inner.unseen.insert(i);
        }
    }

    pub fn remaps(&self) -> u32 {
        self.lock().remaps
    }

    /// Skills that saw their cancel token.
    pub fn cancelled_calls(&self) -> u32 {
        self.lock().cancelled_calls
    }

    /// The key the world gave object `name`, if retrieved.
    pub fn key_of(&self, name: &str) -> Option<ObjectKey> {
        let inner = self.lock();
        let i = inner.objects.iter().position(|o| o.name == name)?;
        inner.keys.get(&i).cloned()
    }

    fn log_and_scripted(&self, entry: String, tool: &str) -> Result<(), ToolFailure> {
        let mut inner = self.lock();
        inner.calls.push(entry);
        if let Some(pos) = inner.failures.iter().position(|f| f.tool == tool)
            && let Some(f) = inner.failures.remove(pos)
        {
            return Err(f.failure);
        }
        Ok(())
    }

    fn index(inner: &Inner, key: &ObjectKey) -> Result<usize, ToolFailure> {
        inner
            .keys
            .iter()
            .find(|(_, k)| *k == key)
            .map(|(i, _)| *i)
            .ok_or_else(|| {
                ToolFailure::new(
                    FailureKind::UnknownObject,
                    format!("{key} is not in the map"),
                )
            })
    }

    async fn slow(&self, ctx: &ToolContext) -> Result<(), ToolFailure> {
        let delay = *self
            .skill_delay
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if delay.is_zero() {
            return Ok(());
        }
        let honour = *self
            .honour_cancel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if !honour {
            tokio::time::sleep(delay).await;
            return Ok(());
        }
        tokio::select! {
            () = tokio::time::sleep(delay) => Ok(()),
            () = ctx.cancel.cancelled() => {
                self.lock().cancelled_calls += 1;
                Err(ToolFailure::cancelled("stopped the arm: cancelled"))
            }
        }
    }

    fn pos(inner: &Inner, i: usize) -> [f64; 3] {
        inner.objects[i].position
    }
}

/// The words retrieval compares in a query and a description: lower case, stop words
/// out, a plural's "s" dropped.
pub fn tokens(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .filter(|w| !STOPWORDS.contains(&w.as_str()))
        .map(|w| {
            w.strip_suffix('s')
                .filter(|s| s.len() > 2)
                .map_or(w.clone(), str::to_owned)
        })
        .collect()
}

fn dist(a: [f64; 3], b: [f64; 3]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2) + (a[2] - b[2]).powi(2)).sqrt()
}

fn verdict(check: String, passed: bool) -> Vec<Verdict> {
    vec![Verdict {
        stage: "outcome".into(),
        check,
        passed,
        score: None,
        detail: String::new(),
    }]
}

#[async_trait]
impl ToolBackend for TableWorld {
    /// The table has no rooms or storeys: a named one is logged and every object is in it.
    async fn object_retrieval(
        &self,
        query: &str,
        within: &asp_core::Within,
        _: &ToolContext,
    ) -> ToolResult<crate::Found> {
        let mut call = format!("object_retrieval({query}");
        if let Some(room) = &within.room {
            call.push_str(&format!(", room {room}"));
        }
        if let Some(storey) = within.storey {
            call.push_str(&format!(", storey {storey}"));
        }
        call.push(')');
        self.log_and_scripted(call, "object_retrieval")?;
        let q = tokens(query);
        let mut inner = self.lock();
        let mistaken = inner
            .mistaken
            .iter()
            .filter(|(_, word)| q.contains(word))
            .map(|(i, _)| *i);
        let seen = inner
            .objects
            .iter()
            .enumerate()
            .filter(|(i, o)| {
                let d = tokens(&o.description);
                !inner.hidden.contains_key(i)
                    && !inner.unseen.contains(i)
                    && !q.is_empty()
                    && q.iter().all(|w| d.contains(w))
            })
            .map(|(i, _)| i);
        let mut matching: Vec<usize> = Vec::new();
        for i in mistaken.chain(seen) {
            if !matching.contains(&i) && matching.len() < self.top_k {
                matching.push(i);
            }
        }
        let mut out = Vec::new();
        for i in matching {
            if let Some(k) = inner.keys.get(&i) {
                out.push(k.clone());
                continue;
            }
            let stem = ObjectKey::from_query(query, 0);
            let stem = stem.as_str().trim_end_matches("_0").to_owned();
            let n = inner.counters.entry(stem).or_insert(0);
            let key = ObjectKey::from_query(query, *n);
            *n += 1;
            inner.keys.insert(i, key.clone());
            out.push(key);
        }
        Ok(crate::Found {
            keys: out,
            room: (!within.is_anywhere()).then(|| {
                let what = match (&within.room, within.storey) {
                    (Some(r), _) => format!("the {r}"),
                    (None, Some(s)) => format!("the storey ({s})"),
                    (None, None) => String::new(),
                };
                format!("{what} was not checked: the table has no rooms")
            }),
            storeys_counted_from: None,
        })
    }

    async fn distance_to(&self, obj: &ObjectKey, _: &ToolContext) -> ToolResult<f64> {
        self.log_and_scripted(format!("distance_to({obj})"), "distance_to")?;
        let inner = self.lock();
        let i = Self::index(&inner, obj)?;
        Ok(dist(Self::pos(&inner, i), [0.0; 3]))
    }

    async fn distance_between(
        &self,
        a: &ObjectKey,
        b: &ObjectKey,
        _: &ToolContext,
    ) -> ToolResult<f64> {
        self.log_and_scripted(format!("distance_between({a}, {b})"), "distance_between")?;
        let inner = self.lock();
        let (i, j) = (Self::index(&inner, a)?, Self::index(&inner, b)?);
        Ok(dist(Self::pos(&inner, i), Self::pos(&inner, j)))
    }

    async fn left_of(&self, a: &ObjectKey, b: &ObjectKey, _: &ToolContext) -> ToolResult<bool> {
        self.log_and_scripted(format!("left_of({a}, {b})"), "left_of")?;
        let inner = self.lock();
        let (i, j) = (Self::index(&inner, a)?, Self::index(&inner, b)?);
        Ok(Self::pos(&inner, i)[1] > Self::pos(&inner, j)[1])
    }

    async fn right_of(&self, a: &ObjectKey, b: &ObjectKey, _: &ToolContext) -> ToolResult<bool> {
        self.log_and_scripted(format!("right_of({a}, {b})"), "right_of")?;
        let inner = self.lock();
        let (i, j) = (Self::index(&inner, a)?, Self::index(&inner, b)?);
        Ok(Self::pos(&inner, i)[1] < Self::pos(&inner, j)[1])
    }

    async fn size_of(&self, obj: &ObjectKey, _: &ToolContext) -> ToolResult<f64> {
        self.log_and_scripted(format!("size_of({obj})"), "size_of")?;
        let inner = self.lock();
        let i = Self::index(&inner, obj)?;
        Ok(inner.objects[i].size)
    }

    async fn interact(
        &self,
        obj: &ObjectKey,
        action: &str,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        self.log_and_scripted(format!("interact({obj}, {action})"), "interact")?;
        self.slow(ctx).await?;
        let mut inner = self.lock();
        let i = Self::index(&inner, obj)?;
        let a = action.to_ascii_lowercase();
        let holding = inner.held.is_some();
        let o = &mut inner.objects[i];
        let name = o.name.clone();
        let (skill, message) = if a.contains("open") && o.open.is_some() {
            o.open = Some(true);
            (Skill::HookPull, format!("opened the {name}"))
        } else if (a.contains("close") || a.contains("shut")) && o.open.is_some() {
            o.open = Some(false);
            (Skill::TipPush, format!("closed the {name}"))
        } else if (a.contains("turn on") || a.contains("switch on")) && o.on.is_some() {
            o.on = Some(true);
            (Skill::TipPush, format!("switched on the {name}"))
        } else if (a.contains("turn off") || a.contains("switch off")) && o.on.is_some() {
            o.on = Some(false);
            (Skill::TipPush, format!("switched off the {name}"))
        } else if (a.contains("press") || a.contains("push") || a.contains("ring")) && o.pressable {
            o.presses += 1;
            (Skill::TipPush, format!("pressed the {name}"))
        } else if (a.contains("pull") || a.contains("unplug") || a.contains("remove"))
            && o.plugged == Some(true)
        {
            if holding {
                return Err(ToolFailure::new(
                    FailureKind::Precondition,
                    "the gripper is not empty",
                ));
            }
            o.plugged = Some(false);
            inner.held = Some(i);
            (Skill::PinchPull, format!("pulled out the {name}"))
        } else if (a.contains("grasp") || a.contains("pick up")) && o.graspable {
            if holding {
                return Err(ToolFailure::new(
                    FailureKind::Precondition,
                    "the gripper is not empty",
                ));
            }
            inner.held = Some(i);
            (
                Skill::GraspPart,
                format!("grasped the {name} by its handle"),
            )
        } else {
            return Err(ToolFailure::new(
                FailureKind::Grounding,
                format!("found no part of the {name} that affords {action:?}"),
            ));
        };
        Ok(ActionReport {
            holding: inner.held.is_some(),
            skill: Some(skill),
            verdicts: verdict(format!("{action} on {name}"), true),
            message,
        })
    }

    async fn go_to(
        &self,
        obj: &ObjectKey,
        action: &str,
        _: &ToolContext,
    ) -> ToolResult<ActionReport> {
        self.log_and_scripted(format!("go_to({obj}, {action})"), "go_to")?;
        let inner = self.lock();
        Self::index(&inner, obj)?;
        Ok(ActionReport {
            holding: inner.held.is_some(),
            skill: None,
            message: format!("arrived in front of {obj}"),
            verdicts: Vec::new(),
        })
    }

    async fn skill(
        &self,
        skill: Skill,
        obj: &ObjectKey,
        ctx: &ToolContext,
    ) -> ToolResult<ActionReport> {
        self.log_and_scripted(format!("{skill}({obj})"), skill.name())?;
        self.slow(ctx).await?;
        let mut inner = self.lock();
        let i = Self::index(&inner, obj)?;
        match skill {
            Skill::Grasp | Skill::GraspPart | Skill::PinchPull => {
                if inner.held.is_some() {
                    return Err(ToolFailure::new(
                        FailureKind::Precondition,
                        "the gripper is not empty",
                    ));
                }
                let o = &inner.objects[i];
                if !o.graspable || o.plugged == Some(true) && skill == Skill::Grasp {
                    return Err(ToolFailure::new(
                        FailureKind::Execution,
                        format!("the {} did not come up: nothing is in the gripper", o.name),
                    )
                    .holding(false)
                    .with_failure(Failure::new(FailureKind::Execution).needs_remap()));
                }
                let name = o.name.clone();
                inner.objects[i].resting = None;
                if inner.objects[i].plugged.is_some() {
                    inner.objects[i].plugged = Some(false);
                }
                inner.held = Some(i);
                Ok(ActionReport {
                    holding: true,
                    skill: Some(skill),
                    message: format!("grasped the {name}"),
                    verdicts: verdict(format!("has the {name} been grasped and lifted?"), true),
                })
            }
            Skill::Place | Skill::Drop => {
                let Some(h) = inner.held else {
                    return Err(ToolFailure::new(
                        FailureKind::Precondition,
                        "nothing is held",
                    ));
                };
                let target = inner.objects[i].clone();
                if skill == Skill::Drop && target.open == Some(false) {
                    return Err(ToolFailure::new(
                        FailureKind::Execution,
                        format!("the {} is closed", target.name),
                    )
                    .holding(true));
                }
                let prep = if skill == Skill::Drop || target.container {
                    "in"
                } else {
                    "on"
                };
                let mut p = target.position;
                p[2] += 0.05;
                let held_name = inner.objects[h].name.clone();
                inner.objects[h].position = p;
                inner.objects[h].resting = Some((prep.to_owned(), target.name.clone()));
                inner.held = None;
                Ok(ActionReport {
                    holding: false,
                    skill: Some(skill),
                    message: format!("put the {held_name} {prep} the {}", target.name),
                    verdicts: verdict(
                        format!(
                            "is the {held_name} {prep} the {} and the gripper away?",
                            target.name
                        ),
                        true,
                    ),
                })
            }
            Skill::TipPush | Skill::HookPull | Skill::Open | Skill::Close => {
                let o = &mut inner.objects[i];
                let name = o.name.clone();
                match (skill, o.open) {
                    (Skill::Open | Skill::HookPull, Some(_)) => o.open = Some(true),
                    (Skill::Close | Skill::TipPush, Some(_)) => o.open = Some(false),
                    (Skill::TipPush, None) if o.pressable => o.presses += 1,
                    _ => {
                        return Err(ToolFailure::new(
                            FailureKind::Grounding,
                            format!("the {name} has no part for {skill}"),
                        ));
                    }
                }
                Ok(ActionReport {
                    holding: inner.held.is_some(),
                    skill: Some(skill),
                    message: format!("{skill} on the {name} done"),
                    verdicts: Vec::new(),
                })
            }
        }
    }

    async fn remap(&self, _: &ToolContext) -> ToolResult<()> {
        self.log_and_scripted("remap()".into(), "remap")?;
        let mut inner = self.lock();
        inner.remaps += 1;
        inner.hidden.retain(|_, left| {
            *left -= 1;
            *left > 0
        });
        inner.mistaken.clear();
        // as the map service does, keys stay with their objects (it finds each where it
        // was, or where the robot put it); nothing here moves unseen, so all stay
        Ok(())
    }
}
