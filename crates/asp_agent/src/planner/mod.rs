//! The planner front end (SPEC §4.1): a goal becomes single-verb subtasks from a closed
//! set — pick up X, place X on|in Y, open X, close X, turn on X, turn off X, and on a
//! mobile robot go to X (the base only) — with
//! their objects and locations, implied steps added, qualifiers kept and whole objects
//! named (the part goes into its own field). Two producers: the LLM
//! ([`llm::plan_with_llm`]: parse → regenerate with a hint → the grammar as fallback)
//! and the offline goal grammar ([`understand`]), whose structured plan
//! [`understand::subtasks`] turns into these subtasks.

pub mod corpus;
pub mod llm;
pub mod phrases;
pub mod understand;

use std::collections::BTreeSet;
use std::fmt;

use asp_core::{Storey, Within};
use serde::{Deserialize, Serialize};

/// The closed set of subtask verbs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verb {
    PickUp,
    Place,
    Open,
    Close,
    TurnOn,
    TurnOff,
    /// Drive the base to a place ("go to the sofa in the living room"): a mobile
    /// robot's go_to, nothing moved.
    GoTo,
}

impl Verb {
    pub const ALL: [Verb; 7] = [
        Verb::PickUp,
        Verb::Place,
        Verb::Open,
        Verb::Close,
        Verb::TurnOn,
        Verb::TurnOff,
        Verb::GoTo,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Verb::PickUp => "pick_up",
            Verb::Place => "place",
            Verb::Open => "open",
            Verb::Close => "close",
            Verb::TurnOn => "turn_on",
            Verb::TurnOff => "turn_off",
            Verb::GoTo => "go_to",
        }
    }

    /// The verb as an English phrase.
    pub fn phrase(self) -> &'static str {
        match self {
            Verb::PickUp => "pick up",
            Verb::Place => "place",
            Verb::Open => "open",
            Verb::Close => "close",
            Verb::TurnOn => "turn on",
            Verb::TurnOff => "turn off",
            Verb::GoTo => "go to",
        }
    }

    pub fn parse(s: &str) -> Option<Verb> {
        let norm = s.trim().to_ascii_lowercase().replace([' ', '-'], "_");
        Verb::ALL.into_iter().find(|v| v.as_str() == norm)
    }
}

/// Where a placed object goes relative to the location.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Preposition {
    On,
    In,
}

/// One single-verb step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subtask {
    pub verb: Verb,
    /// The whole object with the words that single it out, without articles: "red book
    /// near the butter", "cabinet".
    pub object: String,
    /// The part acted on, if the goal names one: "top drawer", "handle".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// Place only: the object to put it on or in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<String>,
    /// Place only: the part of the location ("top drawer" of "desk").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_part: Option<String>,
    /// The room the object is in, when the goal names one ("the apple in the kitchen"):
    /// retrieval keeps to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// Place only: the room of the location ("the desk in the office").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_room: Option<String>,
    /// The storey the object is on, when the goal names one ("the phone upstairs"):
    /// retrieval keeps to it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storey: Option<Storey>,
    /// Place only: the storey of the location ("the coffee table upstairs").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location_storey: Option<Storey>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preposition: Option<Preposition>,
    /// The motion for `interact` when the verb alone does not say it: "press the bell
    /// button", "pull the power adapter out of the socket".
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// Attributes the object must not have ("not the red one"): candidates retrieval
    /// also finds for "red <object>" are left out.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
    /// Added by post-processing, not stated in the goal.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub implied: bool,
}

impl Subtask {
    pub fn new(verb: Verb, object: impl Into<String>) -> Self {
        Self {
            verb,
            object: object.into(),
            part: None,
            location: None,
            location_part: None,
            room: None,
            location_room: None,
            storey: None,
            location_storey: None,
            preposition: None,
            action: None,
            excluded: Vec::new(),
            implied: false,
        }
    }

    pub fn place(
        object: impl Into<String>,
        prep: Preposition,
        location: impl Into<String>,
    ) -> Self {
        Self {
            location: Some(location.into()),
            preposition: Some(prep),
            ..Self::new(Verb::Place, object)
        }
    }

    pub fn with_part(mut self, part: Option<String>) -> Self {
        self.part = part;
        self
    }

    pub fn with_action(mut self, action: impl Into<String>) -> Self {
        self.action = Some(action.into());
        self
    }

    fn implied(mut self) -> Self {
        self.implied = true;
        self
    }
}

impl Subtask {
    /// The room of a drive to a room with nothing named in it ("go to the kitchen"):
    /// a go_to whose object is its room (see [`corpus::ObjectRef::room_itself`]).
    pub fn room_drive(&self) -> Option<&str> {
        (self.verb == Verb::GoTo)
            .then_some(self.room.as_deref())
            .flatten()
            .filter(|room| *room == self.object)
    }

    /// Where retrieval of the object keeps to.
    pub fn within(&self) -> Within {
        Within {
            room: self.room.clone(),
            storey: self.storey,
            counted_from: None,
        }
    }

    /// Where retrieval of the location keeps to.
    pub fn location_within(&self) -> Within {
        Within {
            room: self.location_room.clone(),
            storey: self.location_storey,
            counted_from: None,
        }
    }
}

fn the(s: &str) -> String {
    format!("the {s}")
}

impl fmt::Display for Subtask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ", self.verb.phrase())?;
        match &self.part {
            Some(p) if self.verb != Verb::Place => {
                write!(f, "{} of {}", the(p), the(&self.object))?
            }
            _ => write!(f, "{}", the(&self.object))?,
        }
        // a place puts down the held object: where it was is the pick-up's to say
        if self.room_drive().is_some() {
            // "go to the office upstairs", not "… the office in the office upstairs"
            let storey = Within {
                room: None,
                ..self.within()
            };
            write!(f, "{storey}")?;
        } else if self.verb != Verb::Place {
            write!(f, "{}", self.within())?;
        }
        if let Some(loc) = &self.location {
            let prep = match self.preposition {
                Some(Preposition::In) => "in",
                _ => "on",
            };
            match &self.location_part {
                Some(p) => write!(f, " {prep} {} of {}", the(p), the(loc))?,
                None => write!(f, " {prep} {}", the(loc))?,
            }
            write!(f, "{}", self.location_within())?;
        }
        if !self.excluded.is_empty() {
            write!(f, " (not {})", self.excluded.join(", "))?;
        }
        if let Some(a) = &self.action {
            write!(f, " [{a}]")?;
        }
        if self.implied {
            write!(f, " (implied)")?;
        }
        Ok(())
    }
}

/// Where a plan came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "source", rename_all = "snake_case")]
pub enum PlanSource {
    /// The LLM, after `regenerations` regenerations with a hint.
    Llm { regenerations: u32 },
    /// The offline goal grammar after the LLM failed `attempts` times.
    GrammarAfterLlm { attempts: u32, last_problem: String },
    /// The offline goal grammar ([`understand`]), with what it matched by meaning, left
    /// unplaced or cannot act on yet.
    Grammar {
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        notes: Vec<String>,
    },
}

/// A decomposed goal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Plan {
    pub goal: String,
    pub subtasks: Vec<Subtask>,
    #[serde(flatten)]
    pub source: PlanSource,
}

impl Plan {
    /// The numbered list shown to the model.
    pub fn numbered(&self) -> String {
        self.subtasks
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    }
}

/// A goal the planner cannot decompose.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot plan {goal:?}: {message}")]
pub struct PlanError {
    pub goal: String,
    pub message: String,
    pub kind: PlanErrorKind,
}

/// Why a goal could not be planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlanErrorKind {
    /// No word of a clause asks for an action.
    NoVerb,
    /// An action outside the skills (wash, cook, fold).
    Unsupported,
    /// An action that would harm someone or something.
    Unsafe,
    /// An action with nothing to act on ("open it" with nothing named before).
    NoObject,
    /// A verb matched by meaning with too little confidence: the message asks back.
    Unclear,
    /// Anything else: an object missing, a location the skills cannot reach.
    Other,
}

/// Receptacles that must be opened before something is placed in them.
const OPENABLE: &[&str] = &[
    "drawer",
    "cabinet",
    "cupboard",
    "fridge",
    "refrigerator",
    "microwave",
    "oven",
    "dishwasher",
    "closet",
    "wardrobe",
    "locker",
    "safe",
    "chest",
];

/// Whether placing *in* this needs it opened first (its last word is a drawer, cabinet,
/// fridge, …).
pub fn is_openable(noun_phrase: &str) -> bool {
    phrases::head_noun(noun_phrase).is_some_and(|h| OPENABLE.contains(&h.as_str()))
}

/// The receptacle an object phrase says it is in ("milk in the fridge" → "fridge").
fn inside_of(phrase: &str) -> Option<String> {
    [" in the ", " inside the ", " out of the "]
        .iter()
        .find_map(|m| phrase.split_once(m).map(|(_, rest)| rest.to_owned()))
}

/// Adds the steps a goal implies (SPEC §4.1): pick up an object before placing it;
/// open a drawer/cabinet/fridge before placing into it — before picking the object up,
/// since opening needs an empty gripper — and before taking something out of it.
/// Idempotent.
pub fn add_implied_steps(subtasks: Vec<Subtask>) -> Vec<Subtask> {
    let mut out: Vec<Subtask> = Vec::with_capacity(subtasks.len() + 2);
    let mut holding: Option<(String, usize)> = None; // object, index of its pick-up
    let mut opened: BTreeSet<(String, Option<String>)> = BTreeSet::new();
    for st in subtasks {
        match st.verb {
            Verb::PickUp => {
                // "the milk in the fridge": the fridge is opened before taking it out
                if let Some(container) = inside_of(&st.object)
                    && is_openable(&container)
                    && !opened.contains(&(container.clone(), None))
                {
                    let mut open = Subtask::new(Verb::Open, container.clone()).implied();
                    open.room.clone_from(&st.room);
                    open.storey = st.storey;
                    out.push(open);
                    opened.insert((container, None));
                }
                holding = Some((st.object.clone(), out.len()));
                out.push(st);
            }
            Verb::Place => {
                // the object's pick-up, when it is held here
                let pick_up_at = match &holding {
                    Some((o, i)) if *o == st.object => Some(*i),
                    _ => None,
                };
                if st.preposition == Some(Preposition::In)
                    && let Some(loc) = &st.location
                {
                    let target = st.location_part.as_deref().unwrap_or(loc);
                    let key = (loc.clone(), st.location_part.clone());
                    if is_openable(target) && !opened.contains(&key) {
                        // opening needs an empty gripper: before the pick-up
                        let mut open = Subtask::new(Verb::Open, loc.clone())
                            .with_part(st.location_part.clone())
                            .implied();
                        open.room.clone_from(&st.location_room);
                        open.storey = st.location_storey;
                        out.insert(pick_up_at.unwrap_or(out.len()), open);
                        opened.insert(key);
                    }
                }
                if pick_up_at.is_none() {
                    let mut pick = Subtask::new(Verb::PickUp, st.object.clone()).implied();
                    pick.excluded.clone_from(&st.excluded);
                    pick.room.clone_from(&st.room);
                    pick.storey = st.storey;
                    out.push(pick);
                }
                holding = None;
                out.push(st);
            }
            Verb::Open => {
                opened.insert((st.object.clone(), st.part.clone()));
                out.push(st);
            }
            Verb::Close => {
                opened.remove(&(st.object.clone(), st.part.clone()));
                out.push(st);
            }
            _ => out.push(st),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_parse_in_several_spellings() {
        assert_eq!(Verb::parse("pick_up"), Some(Verb::PickUp));
        assert_eq!(Verb::parse("Pick up"), Some(Verb::PickUp));
        assert_eq!(Verb::parse("turn-on"), Some(Verb::TurnOn));
        assert_eq!(Verb::parse("locate"), None);
    }

    #[test]
    fn implied_pick_up_and_open() {
        let steps = add_implied_steps(vec![Subtask::place("apple", Preposition::In, "drawer")]);
        let shown: Vec<String> = steps.iter().map(ToString::to_string).collect();
        assert_eq!(
            shown,
            vec![
                "open the drawer (implied)",
                "pick up the apple (implied)",
                "place the apple in the drawer"
            ]
        );
        // idempotent, and the open goes before an explicit pick-up
        assert_eq!(add_implied_steps(steps.clone()), steps);
        let steps = add_implied_steps(vec![
            Subtask::new(Verb::PickUp, "mug"),
            Subtask::place("mug", Preposition::In, "cabinet"),
        ]);
        assert_eq!(steps[0].verb, Verb::Open);
        assert_eq!(steps[1].verb, Verb::PickUp);
        assert!(!steps[1].implied);
        // no open for a bowl, nor for something opened already
        let steps = add_implied_steps(vec![
            Subtask::new(Verb::Open, "fridge"),
            Subtask::place("milk", Preposition::In, "fridge"),
            Subtask::place("egg", Preposition::In, "bowl"),
        ]);
        let verbs: Vec<Verb> = steps.iter().map(|s| s.verb).collect();
        assert_eq!(
            verbs,
            vec![
                Verb::Open,
                Verb::PickUp,
                Verb::Place,
                Verb::PickUp,
                Verb::Place
            ]
        );
    }
}
