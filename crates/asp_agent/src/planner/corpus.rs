//! The goal corpus (`config/goals/`, issue 15): goals as people say them, each with the
//! structured plan it should produce — the object's own words apart from its attributes,
//! relation, ordinal, room, storey and count — or the class of refusal it should get; and the
//! scoring of a planner against it (exact plan, per split and category, with the misses).
//!
//! The structured plan is what the planner is measured on: the goal grammar
//! ([`super::understand`]) produces it directly.

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::{Preposition, Verb};

/// An object as the goal singles it out.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ObjectRef {
    /// The object's own words: what retrieval searches for.
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub attributes: Vec<String>,
    /// Attributes the goal rules out ("not the red one").
    #[serde(default, rename = "not", skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub relation: Option<Box<RelationSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ordinal: Option<Ordinal>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// "upstairs", "on the second floor".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storey: Option<asp_core::Storey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
}

impl ObjectRef {
    /// A room with nothing named in it, as the object of a drive ("go to the kitchen"):
    /// named by the room and kept to it. [`Subtask::room_drive`](super::Subtask::room_drive)
    /// tells such a drive.
    pub fn room_itself(room: String, storey: Option<asp_core::Storey>) -> Self {
        Self {
            room: Some(room.clone()),
            storey,
            ..Self::named(room)
        }
    }

    pub fn named(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            attributes: Vec::new(),
            excluded: Vec::new(),
            relation: None,
            ordinal: None,
            room: None,
            storey: None,
            count: None,
        }
    }

    /// Equal up to the order of attributes.
    fn same(&self, other: &ObjectRef) -> bool {
        let sorted = |v: &[String]| {
            let mut v = v.to_vec();
            v.sort();
            v
        };
        self.name == other.name
            && sorted(&self.attributes) == sorted(&other.attributes)
            && sorted(&self.excluded) == sorted(&other.excluded)
            && self.ordinal == other.ordinal
            && self.room == other.room
            && self.storey == other.storey
            && self.count == other.count
            && match (&self.relation, &other.relation) {
                (None, None) => true,
                (Some(a), Some(b)) => a.same(b),
                _ => false,
            }
    }
}

/// Where the object is relative to others.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RelationSpec {
    pub kind: RelationKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor: Option<ObjectRef>,
    /// The second anchor of `between`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub anchor2: Option<ObjectRef>,
}

impl RelationSpec {
    fn same(&self, other: &RelationSpec) -> bool {
        let same_opt = |a: &Option<ObjectRef>, b: &Option<ObjectRef>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same(b),
            _ => false,
        };
        self.kind == other.kind
            && same_opt(&self.anchor, &other.anchor)
            && same_opt(&self.anchor2, &other.anchor2)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RelationKind {
    Near,
    LeftOf,
    RightOf,
    Behind,
    InFrontOf,
    On,
    In,
    Under,
    Between,
    Nearest,
    Furthest,
}

/// "The second from the left": `n` counts from 1; -1 is the last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ordinal {
    pub n: i32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<Side>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Side {
    Left,
    Right,
    Front,
    Back,
    Top,
    Bottom,
}

/// The motion a `turn_on` or `pick_up` needs when its verb does not say it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ActionKind {
    Press,
    /// Pulled out of a socket.
    Unplug,
    /// Pulled out of what holds it ("remove the thumbtack from the board").
    PullOut,
    Type,
    Dial,
}

/// One step of a structured plan.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub verb: Verb,
    pub object: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preposition: Option<Preposition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<ObjectRef>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_part: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionKind>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// The side to act from ("open the cabinet from the right side").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub side: Option<Side>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
}

impl StepSpec {
    /// A drive to a room with nothing named in it (see [`ObjectRef::room_itself`]).
    pub fn is_room_drive(&self) -> bool {
        self.verb == Verb::GoTo && self.object.room.as_deref() == Some(self.object.name.as_str())
    }

    /// The first field that differs from `other`, or `None` when they are the same plan
    /// step.
    pub fn first_difference(&self, other: &StepSpec) -> Option<&'static str> {
        let same_loc = match (&self.location, &other.location) {
            (None, None) => true,
            (Some(a), Some(b)) => a.same(b),
            _ => false,
        };
        if self.verb != other.verb {
            Some("verb")
        } else if self.object.name != other.object.name {
            Some("object name")
        } else if !self.object.same(&other.object) {
            Some(object_difference(&self.object, &other.object))
        } else if self.part != other.part {
            Some("part")
        } else if self.preposition != other.preposition || !same_loc {
            Some("location")
        } else if self.location_part != other.location_part {
            Some("location part")
        } else if self.action != other.action || self.text != other.text || self.side != other.side
        {
            Some("action")
        } else if self.implied != other.implied {
            Some("implied")
        } else {
            None
        }
    }
}

fn object_difference(a: &ObjectRef, b: &ObjectRef) -> &'static str {
    let mut x = a.clone();
    x.attributes.clone_from(&b.attributes);
    x.excluded.clone_from(&b.excluded);
    if x.same(b) {
        return "attributes";
    }
    x.relation.clone_from(&b.relation);
    if x.same(b) {
        return "relation";
    }
    x.ordinal = b.ordinal;
    if x.same(b) {
        return "ordinal";
    }
    x.room.clone_from(&b.room);
    if x.same(b) {
        return "room";
    }
    x.storey = b.storey;
    if x.same(b) { "storey" } else { "count" }
}

/// Why a goal is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalClass {
    /// Nothing in the goal asks for an action.
    NoVerb,
    /// An action outside the skills.
    Unsupported,
    /// Harm to people, animals or property.
    Unsafe,
    /// An action with nothing to act on.
    NoObject,
    /// A planner refusal that names no class (scored as wrong against any expected
    /// class).
    Unplannable,
    /// The planner asked back instead of planning (scored as wrong: the corpus goals
    /// are all clear enough to plan or refuse).
    AskedBack,
}

/// The corpus's categories; accuracy is reported per category.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Category {
    VerbSynonym,
    PhrasalVerb,
    Polite,
    Relation,
    Attribute,
    OrdinalCount,
    Part,
    RoomLocation,
    MultiStep,
    ImpliedSteps,
    Negation,
    Refusal,
}

impl fmt::Display for Category {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = serde_json::to_value(self)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default();
        f.write_str(&s)
    }
}

/// What a planner should make of a goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Expected {
    Plan(Vec<StepSpec>),
    Refuse(RefusalClass),
}

/// One goal of the corpus.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CorpusGoal {
    pub id: String,
    pub goal: String,
    pub category: Category,
    #[serde(default)]
    pub tags: Vec<Category>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub plan: Option<Vec<StepSpec>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refuse: Option<RefusalClass>,
}

impl CorpusGoal {
    pub fn expected(&self) -> Expected {
        match (&self.plan, self.refuse) {
            (Some(p), _) => Expected::Plan(p.clone()),
            (None, Some(r)) => Expected::Refuse(r),
            (None, None) => Expected::Refuse(RefusalClass::Unplannable),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct CorpusFile {
    goals: Vec<CorpusGoal>,
}

/// A split of the corpus.
#[derive(Debug, Clone)]
pub struct Split {
    /// `dev`, `test`, `test2`, … (the file's stem).
    pub name: String,
    pub path: PathBuf,
    pub goals: Vec<CorpusGoal>,
}

/// A corpus file that does not load; the message names the file and the goal.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {message}")]
pub struct CorpusError {
    pub path: String,
    pub message: String,
}

impl Split {
    /// Loads and checks one split: ids unique, each goal with exactly one of `plan` and
    /// `refuse`, plans non-empty, `place` steps with a location and a preposition.
    pub fn load(path: &Path) -> Result<Split, CorpusError> {
        let err = |message: String| CorpusError {
            path: path.display().to_string(),
            message,
        };
        let text = std::fs::read_to_string(path).map_err(|e| err(e.to_string()))?;
        let file: CorpusFile = serde_yaml_ng::from_str(&text).map_err(|e| err(e.to_string()))?;
        let mut seen = BTreeMap::new();
        for g in &file.goals {
            if seen.insert(g.id.clone(), ()).is_some() {
                return Err(err(format!("goal id {:?} appears twice", g.id)));
            }
            match (&g.plan, g.refuse) {
                (Some(_), Some(_)) | (None, None) => {
                    return Err(err(format!(
                        "{}: give exactly one of `plan` and `refuse`",
                        g.id
                    )));
                }
                (Some(p), None) if p.is_empty() => {
                    return Err(err(format!("{}: the plan is empty", g.id)));
                }
                (None, Some(RefusalClass::Unplannable | RefusalClass::AskedBack)) => {
                    return Err(err(format!(
                        "{}: `{}` is not an expected refusal class",
                        g.id,
                        serde_json::to_value(g.refuse)
                            .ok()
                            .and_then(|v| v.as_str().map(str::to_owned))
                            .unwrap_or_default()
                    )));
                }
                _ => {}
            }
            for (i, s) in g.plan.iter().flatten().enumerate() {
                if s.verb == Verb::Place && (s.location.is_none() || s.preposition.is_none()) {
                    return Err(err(format!(
                        "{} step {}: place needs a location and a preposition",
                        g.id,
                        i + 1
                    )));
                }
            }
        }
        Ok(Split {
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            path: path.to_owned(),
            goals: file.goals,
        })
    }
}

/// The splits of the corpus in `dir`: `dev.yaml` first, then every held-out split
/// (`test.yaml`, `test2.yaml`, …: a file whose stem is `test` and a number or nothing),
/// in the order of their numbers, so a new held-out split is scored as soon as it is
/// written.
pub fn load_corpus(dir: &Path) -> Result<Vec<Split>, CorpusError> {
    let listing = std::fs::read_dir(dir).map_err(|e| CorpusError {
        path: dir.display().to_string(),
        message: format!("cannot list the corpus folder: {e}"),
    })?;
    let mut held_out: Vec<(u32, PathBuf)> = listing
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "yaml"))
        .filter_map(|p| {
            let stem = p.file_stem()?.to_str()?;
            let number = stem.strip_prefix("test")?;
            let n = if number.is_empty() {
                1
            } else {
                number.parse().ok()?
            };
            Some((n, p))
        })
        .collect();
    held_out.sort();
    std::iter::once(dir.join("dev.yaml"))
        .chain(held_out.into_iter().map(|(_, p)| p))
        .map(|p| Split::load(&p))
        .collect()
}

/// Whether a split is held out (never read to tune the grammar): every split but `dev`.
pub fn is_held_out(split: &str) -> bool {
    split != "dev"
}

/// Whether `got` is exactly `expected`; otherwise what differs first.
pub fn compare(expected: &Expected, got: &Expected) -> Result<(), String> {
    match (expected, got) {
        (Expected::Refuse(a), Expected::Refuse(b)) if a == b => Ok(()),
        (Expected::Refuse(a), Expected::Refuse(b)) => {
            Err(format!("refusal class: expected {a:?}, got {b:?}"))
        }
        (Expected::Refuse(a), Expected::Plan(_)) => {
            Err(format!("planned a goal it should refuse ({a:?})"))
        }
        (Expected::Plan(_), Expected::Refuse(b)) => Err(format!("refused ({b:?})")),
        (Expected::Plan(a), Expected::Plan(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                if let Some(field) = x.first_difference(y) {
                    return Err(format!("step {}: {field}", i + 1));
                }
            }
            if a.len() == b.len() {
                Ok(())
            } else {
                Err(format!("{} steps, expected {}", b.len(), a.len()))
            }
        }
    }
}

/// One goal's result.
#[derive(Debug, Clone, Serialize)]
pub struct GoalScore {
    pub id: String,
    pub goal: String,
    pub category: Category,
    pub exact: bool,
    /// What differed first (`step 2: relation`, `refused (NoVerb)`); empty when exact.
    pub difference: String,
    pub expected: Expected,
    pub got: Expected,
}

/// A split's results.
#[derive(Debug, Clone, Serialize)]
pub struct SplitScore {
    pub split: String,
    pub goals: Vec<GoalScore>,
}

impl SplitScore {
    /// Exact plans / goals.
    pub fn accuracy(&self) -> f64 {
        share(
            self.goals.iter().filter(|g| g.exact).count(),
            self.goals.len(),
        )
    }

    /// (exact, total) per category.
    pub fn per_category(&self) -> BTreeMap<Category, (usize, usize)> {
        let mut out: BTreeMap<Category, (usize, usize)> = BTreeMap::new();
        for g in &self.goals {
            let e = out.entry(g.category).or_default();
            e.1 += 1;
            if g.exact {
                e.0 += 1;
            }
        }
        out
    }

    /// How often each difference kind (`relation`, `refused`, …) is the first one.
    pub fn confusion(&self) -> BTreeMap<String, usize> {
        let mut out = BTreeMap::new();
        for g in self.goals.iter().filter(|g| !g.exact) {
            let kind = g
                .difference
                .split_once(": ")
                .map_or(g.difference.as_str(), |(_, k)| k);
            let kind = kind.split(" (").next().unwrap_or(kind);
            *out.entry(kind.to_owned()).or_insert(0) += 1;
        }
        out
    }
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 { 0.0 } else { n as f64 / of as f64 }
}

/// Scores `planner` on `split`.
pub fn score(split: &Split, planner: impl Fn(&str) -> Expected) -> SplitScore {
    let goals = split
        .goals
        .iter()
        .map(|g| {
            let expected = g.expected();
            let got = planner(&g.goal);
            let diff = compare(&expected, &got);
            GoalScore {
                id: g.id.clone(),
                goal: g.goal.clone(),
                category: g.category,
                exact: diff.is_ok(),
                difference: diff.err().unwrap_or_default(),
                expected,
                got,
            }
        })
        .collect();
    SplitScore {
        split: split.name.clone(),
        goals,
    }
}

/// The goal grammar as a corpus planner.
pub fn grammar_planner(grammar: &super::understand::GoalGrammar) -> impl Fn(&str) -> Expected + '_ {
    move |goal| grammar.understand(goal).expected()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(yaml: &str) -> Result<Split, CorpusError> {
        // a folder of its own that is removed when the split is loaded
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("dev.yaml");
        std::fs::write(&p, yaml).unwrap();
        Split::load(&p)
    }

    #[test]
    fn plans_are_scored_field_by_field() {
        let s = split(
            r#"
goals:
  - id: a
    goal: "pick up the apple near the bowl"
    category: relation
    plan:
      - verb: pick_up
        object: {name: apple, relation: {kind: near, anchor: {name: bowl}}}
  - id: b
    goal: "grab the red mug"
    category: attribute
    plan:
      - verb: pick_up
        object: {name: red mug}
  - id: c
    goal: "hello there"
    category: refusal
    refuse: no_verb
  - id: d
    goal: "wash the dishes"
    category: refusal
    refuse: no_verb
"#,
        )
        .unwrap();
        let grammar = super::super::understand::GoalGrammar::lexical();
        let r = score(&s, grammar_planner(&grammar));
        let by_id: BTreeMap<&str, &GoalScore> =
            r.goals.iter().map(|g| (g.id.as_str(), g)).collect();
        assert!(by_id["a"].exact, "{:?}", by_id["a"]);
        // an expectation that keeps the colour in the name: the name differs first
        assert_eq!(by_id["b"].difference, "step 1: object name");
        assert!(by_id["c"].exact, "{:?}", by_id["c"]);
        assert_eq!(
            by_id["d"].difference,
            "refusal class: expected NoVerb, got Unsupported"
        );
        assert!((r.accuracy() - 0.5).abs() < 1e-9);
        assert_eq!(r.per_category()[&Category::Refusal], (1, 2));
        assert_eq!(r.confusion()["object name"], 1);
    }

    #[test]
    fn attribute_order_does_not_matter_but_relations_do() {
        let mut a = ObjectRef::named("cup");
        a.attributes = vec!["small".into(), "red".into()];
        let mut b = a.clone();
        b.attributes.reverse();
        assert!(a.same(&b));
        b.relation = Some(Box::new(RelationSpec {
            kind: RelationKind::On,
            anchor: Some(ObjectRef::named("table")),
            anchor2: None,
        }));
        assert!(!a.same(&b));
        assert_eq!(object_difference(&a, &b), "relation");
    }

    #[test]
    fn malformed_entries_are_named() {
        let e = split("goals:\n  - {id: x, goal: g, category: polite}\n").unwrap_err();
        assert!(e.message.contains("x: give exactly one"), "{e}");
        let e = split(
            "goals:\n  - {id: x, goal: g, category: polite, refuse: no_verb}\n  - {id: x, goal: h, category: polite, refuse: unsafe}\n",
        )
        .unwrap_err();
        assert!(e.message.contains("appears twice"), "{e}");
        let e = split(
            "goals:\n  - id: x\n    goal: g\n    category: polite\n    plan:\n      - {verb: place, object: {name: cup}}\n",
        )
        .unwrap_err();
        assert!(e.message.contains("place needs a location"), "{e}");
        assert!(
            split("goals:\n  - {id: x, goal: g, category: nonsense, refuse: no_verb}\n").is_err()
        );
    }

    #[test]
    fn held_out_splits_are_found_by_name_and_ordered_by_number() {
        let folder = tempfile::tempdir().unwrap();
        let dir = folder.path();
        let one = |id: &str| {
            format!("goals:\n  - {{id: {id}, goal: g, category: polite, refuse: no_verb}}\n")
        };
        for (file, id) in [
            ("dev.yaml", "d"),
            ("test10.yaml", "t10"),
            ("test2.yaml", "t2"),
            ("test.yaml", "t"),
            ("testing.yaml", "no"),
            ("notes.yaml", "no"),
        ] {
            std::fs::write(dir.join(file), one(id)).unwrap();
        }
        let names: Vec<_> = load_corpus(dir)
            .unwrap()
            .into_iter()
            .map(|s| s.name)
            .collect();
        assert_eq!(names, ["dev", "test", "test2", "test10"]);
        assert!(!is_held_out("dev") && is_held_out("test10"));
    }
}
