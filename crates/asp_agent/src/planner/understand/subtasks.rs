//! From the grammar's structured plan to the subtasks the agents drive (SPEC §4.1): one
//! object phrase per step that retrieval and the spatial tools read
//! ([`crate::planner::phrases::parse_object_phrase`] splits it again into the query — the
//! object's own words and its describing attributes — and one spatial relation), the
//! motion as an `action` phrase for the affordance stage, counted objects repeated
//! ("two apples" → the apple, then the other apple).
//!
//! What the drive cannot act on yet is said in the plan's notes, not dropped silently:
//! ordinals other than left-/rightmost, rooms (building-scale memory, issue 16),
//! ruled-out attributes, relations other than near/in/on/left/right/nearest/furthest
//! (they become "near", the relation a map position can check; "in" and "on" are
//! checked as near too).

use super::super::corpus::{ActionKind, ObjectRef, RefusalClass, RelationKind, Side, StepSpec};
use super::super::phrases::key_presses;
use super::super::{Plan, PlanError, PlanErrorKind, PlanSource, Subtask, Verb};
use super::Understanding;
use asp_core::Storey;

/// At most this many copies of a counted object are fetched one after another.
const MAX_COUNT: u32 = 6;

/// The plan the agents drive, or why there is none.
pub fn plan_of(goal: &str, understanding: Understanding) -> Result<Plan, PlanError> {
    let err = |kind, message: String| PlanError {
        goal: goal.to_owned(),
        message,
        kind,
    };
    match understanding {
        Understanding::Plan { steps, notes } => {
            let (subtasks, mut more) =
                subtasks(&steps).map_err(|m| err(PlanErrorKind::Other, m))?;
            let mut all = notes;
            all.append(&mut more);
            Ok(Plan {
                goal: goal.to_owned(),
                subtasks,
                source: PlanSource::Grammar { notes: all },
            })
        }
        Understanding::Refused { class, reason } => Err(err(
            match class {
                RefusalClass::NoVerb => PlanErrorKind::NoVerb,
                RefusalClass::Unsupported => PlanErrorKind::Unsupported,
                RefusalClass::Unsafe => PlanErrorKind::Unsafe,
                RefusalClass::NoObject => PlanErrorKind::NoObject,
                RefusalClass::Unplannable | RefusalClass::AskedBack => PlanErrorKind::Other,
            },
            reason,
        )),
        Understanding::AskBack { question, .. } => Err(err(PlanErrorKind::Unclear, question)),
    }
}

/// The subtasks of a structured plan, and notes on what they leave out.
pub fn subtasks(steps: &[StepSpec]) -> Result<(Vec<Subtask>, Vec<String>), String> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut k = 0;
    while k < steps.len() {
        let s = &steps[k];
        let count = s.object.count.unwrap_or(1).clamp(1, MAX_COUNT);
        if s.object.count.is_some_and(|c| c > MAX_COUNT) {
            notes.push(format!(
                "{} {}: only {MAX_COUNT} are fetched",
                s.object.count.unwrap_or(0),
                s.object.name
            ));
        }
        // "put two apples in the basket": the pick-up and place, once per apple
        let pair = s.verb == Verb::PickUp
            && steps
                .get(k + 1)
                .is_some_and(|n| n.verb == Verb::Place && n.object == s.object);
        let group: &[StepSpec] = if pair {
            &steps[k..k + 2]
        } else {
            &steps[k..k + 1]
        };
        let copies = if pair || s.verb == Verb::Place {
            count
        } else {
            1
        };
        if count > 1 && copies == 1 {
            notes.push(format!(
                "{} {}: the gripper holds one at a time",
                count, s.object.name
            ));
        }
        for c in 0..copies {
            for st in group {
                out.extend(subtask(st, c > 0, &mut notes)?);
            }
        }
        k += group.len();
    }
    notes.sort();
    notes.dedup();
    Ok((out, notes))
}

fn subtask(s: &StepSpec, other: bool, notes: &mut Vec<String>) -> Result<Vec<Subtask>, String> {
    let object = phrase(&s.object, other, notes);
    // the object without its relation: what an action phrase names
    let whole = {
        let mut o = s.object.clone();
        o.relation = None;
        phrase(&o, false, &mut Vec::new())
    };
    if let (Some(kind @ (ActionKind::Type | ActionKind::Dial)), Some(text)) = (s.action, &s.text) {
        let text = text.trim_matches(['"', '\'']).to_lowercase();
        let what = match kind {
            ActionKind::Dial if text.is_empty() => Some("number keys to dial a number".to_owned()),
            // "call mom": the number is the phone's to know
            ActionKind::Dial if text.chars().any(char::is_alphabetic) => {
                Some(format!("number keys to dial {text}"))
            }
            _ if text.is_empty() => Some(format!("keys of the {}", s.object.name)),
            _ => None,
        };
        if let Some(what) = what {
            return Ok(vec![
                Subtask::new(Verb::TurnOn, object).with_action(format!("press the {what}")),
            ]);
        }
        let text: String = match kind {
            // "555-0199": the digits
            ActionKind::Dial => text
                .chars()
                .filter(|c| !matches!(c, '-' | ' ' | '(' | ')'))
                .collect(),
            _ => text,
        };
        return key_presses(&s.object.name, &text, &object);
    }
    let mut st = match s.verb {
        Verb::Place => {
            let location = s
                .location
                .as_ref()
                .map(|l| phrase(l, false, notes))
                .unwrap_or_default();
            let mut st = Subtask::place(
                object,
                s.preposition.unwrap_or(super::super::Preposition::On),
                location,
            );
            st.location_part.clone_from(&s.location_part);
            st.location_room = s.location.as_ref().and_then(|l| l.room.clone());
            // "fetch the glasses from downstairs and put them on the side table": the
            // place is not where the object comes from but where the goal was said
            // (a goal's relative storeys count from where its first one was counted)
            st.location_storey =
                s.location
                    .as_ref()
                    .and_then(|l| l.storey)
                    .or(match s.object.storey {
                        Some(Storey::Above | Storey::Below) => Some(Storey::Same),
                        _ => None,
                    });
            st
        }
        v => Subtask::new(v, object).with_part(s.part.clone()),
    };
    // retrieval keeps to a named room (the building memory's); "the shampoo in the
    // cabinet in the bathroom" is in the bathroom too
    st.room = s.object.room.clone().or_else(|| {
        s.object
            .relation
            .as_ref()
            .filter(|r| matches!(r.kind, RelationKind::In | RelationKind::On))
            .and_then(|r| r.anchor.as_ref()?.room.clone())
    });
    // and to a named storey, the object's own or that of what it is in or on
    st.storey = s.object.storey.or_else(|| {
        s.object
            .relation
            .as_ref()
            .filter(|r| matches!(r.kind, RelationKind::In | RelationKind::On))
            .and_then(|r| r.anchor.as_ref()?.storey)
    });
    // what the object must not be is checked by the drive; a location's is not yet
    st.excluded.clone_from(&s.object.excluded);
    if let Some(l) = s.location.as_ref().filter(|l| !l.excluded.is_empty()) {
        notes.push(format!(
            "\"not {}\" is not checked for the {}",
            l.excluded.join(", "),
            l.name
        ));
    }
    st.implied = s.implied;
    st.action = match s.action {
        Some(ActionKind::Press) => Some(match &s.part {
            Some(p) => format!("press the {p}"),
            None => {
                let head = s.object.name.rsplit(' ').next().unwrap_or_default();
                if matches!(head, "bell" | "doorbell" | "buzzer") {
                    format!("press the {head} button")
                } else {
                    format!("press the {}", s.object.name)
                }
            }
        }),
        Some(ActionKind::Unplug) => {
            let from = held_by(&s.object).map_or_else(|| "socket".to_owned(), |a| a.name.clone());
            Some(format!(
                "pull the {} out of the {from}",
                s.part
                    .as_deref()
                    .map_or_else(|| whole.clone(), |p| format!("{} {p}", s.object.name))
            ))
        }
        Some(ActionKind::PullOut) => Some(match held_by(&s.object) {
            Some(a) => format!("pull the {whole} out of the {}", a.name),
            None => format!("pull the {whole} out"),
        }),
        Some(ActionKind::Type | ActionKind::Dial) | None => None,
    };
    if st.action.is_none()
        && s.verb == Verb::PickUp
        && let Some(p) = &s.part
    {
        st.action = Some(format!("grasp the {} by its {p}", s.object.name));
    }
    // the side goes with the action (what go_to and the affordance detector read)
    if let Some(side) = s.side {
        let side = format!("{side:?}").to_lowercase();
        st.action = Some(match st.action.take() {
            Some(a) => format!("{a} from the {side} side"),
            None => format!(
                "{} the {} from the {side} side",
                s.verb.phrase(),
                s.part.as_deref().unwrap_or(&whole)
            ),
        });
    }
    Ok(vec![st])
}

/// What the object is in or on ("the thumbtack on the board"): what it is pulled out of.
fn held_by(o: &ObjectRef) -> Option<&ObjectRef> {
    o.relation
        .as_ref()
        .filter(|r| matches!(r.kind, RelationKind::In | RelationKind::On))
        .and_then(|r| r.anchor.as_ref())
}

/// The object as a phrase the drive splits into a query and one relation: "other",
/// then a superlative or side word, the describing attributes, the name, and a relation
/// to an anchor.
fn phrase(o: &ObjectRef, other: bool, notes: &mut Vec<String>) -> String {
    let mut words: Vec<String> = Vec::new();
    if other {
        words.push("other".into());
    }
    let mut lead: Option<&str> = None;
    let mut attrs: Vec<&str> = Vec::new();
    for a in &o.attributes {
        match a.as_str() {
            // the drive reads any size word first as "the largest/smallest of them"
            a @ ("largest" | "larger" | "large" | "smallest" | "smaller" | "small")
                if lead.is_none() =>
            {
                lead = Some(a)
            }
            a => attrs.push(a),
        }
    }
    let mut tail = String::new();
    if let Some(ord) = o.ordinal {
        match (ord.n, ord.from) {
            (1, Some(Side::Left)) | (-1, Some(Side::Right)) => lead = lead.or(Some("leftmost")),
            (1, Some(Side::Right)) | (-1, Some(Side::Left)) => lead = lead.or(Some("rightmost")),
            // "the second cup from the left": counted with left-of comparisons
            (n, Some(side @ (Side::Left | Side::Right)))
                if lead.is_none() && o.relation.is_none() && (2..=10).contains(&n) =>
            {
                const WORDS: [&str; 9] = [
                    "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
                    "tenth",
                ];
                words.push(WORDS[usize::try_from(n - 2).unwrap_or_default()].to_owned());
                let side = if side == Side::Left { "left" } else { "right" };
                tail = format!(" from the {side}");
            }
            _ => notes.push(format!(
                "the ordinal of the {} is not used yet: the best retrieval match is taken",
                o.name
            )),
        }
    }
    if let Some(r) = &o.relation {
        if let Some((room, a)) = r.anchor.as_ref().and_then(|a| Some((a.room.as_ref()?, a)))
            && !matches!(r.kind, RelationKind::In | RelationKind::On)
        {
            notes.push(format!(
                "the room ({room}) of the {} is not used: retrieval keeps to the object's own room, or that of what it is in or on",
                a.name
            ));
        }
        let anchor = r.anchor.as_ref().map(|a| phrase(a, false, notes));
        match (r.kind, anchor) {
            (RelationKind::Nearest, None) => lead = lead.or(Some("closest")),
            (RelationKind::Furthest, None) => lead = lead.or(Some("farthest")),
            (RelationKind::Nearest, Some(a)) => tail = format!(" closest to the {a}"),
            (RelationKind::Furthest, Some(a)) => tail = format!(" farthest from the {a}"),
            (RelationKind::LeftOf, Some(a)) => tail = format!(" left of the {a}"),
            (RelationKind::RightOf, Some(a)) => tail = format!(" right of the {a}"),
            (RelationKind::Near, Some(a)) => tail = format!(" near the {a}"),
            // the drive checks "in"/"on" as near; the words stay for the implied open
            (RelationKind::In, Some(a)) => tail = format!(" in the {a}"),
            (RelationKind::On, Some(a)) => tail = format!(" on the {a}"),
            (RelationKind::Between, Some(a)) => match r.anchor2.as_ref() {
                Some(b) => tail = format!(" between the {a} and the {}", phrase(b, false, notes)),
                None => tail = format!(" near the {a}"),
            },
            (kind, Some(a)) => {
                notes.push(format!("{kind:?} the {a} is checked as near it"));
                tail = format!(" near the {a}");
            }
            (kind, None) => notes.push(format!("{kind:?} without an anchor is not used")),
        }
    }
    if let Some(l) = lead {
        words.push(l.to_owned());
    }
    words.extend(attrs.iter().map(|a| (*a).to_owned()));
    words.push(o.name.clone());
    format!("{}{tail}", words.join(" "))
}

#[cfg(test)]
mod tests {
    use super::super::GoalGrammar;
    use super::*;

    fn drive(goal: &str) -> Vec<String> {
        let g = GoalGrammar::lexical();
        plan_of(goal, g.understand(goal))
            .unwrap()
            .subtasks
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn counted_objects_are_fetched_one_after_another() {
        assert_eq!(
            drive("put both green apples in the basket"),
            [
                "pick up the green apple (implied)",
                "place the green apple in the basket",
                "pick up the other green apple (implied)",
                "place the other green apple in the basket"
            ]
        );
    }

    #[test]
    fn storeys_are_kept_to_and_a_place_is_not_where_the_object_comes_from() {
        for (goal, steps) in [
            (
                "bring the white phone from upstairs to a reading table in the library",
                [
                    "pick up the white phone upstairs",
                    "place the white phone on the reading table in the library on this floor",
                ],
            ),
            (
                "take the red thermos up to the coffee table upstairs",
                [
                    "pick up the red thermos",
                    "place the red thermos on the coffee table upstairs",
                ],
            ),
            (
                "fetch the yellow reading glasses from downstairs and put them on the side table",
                [
                    "pick up the yellow reading glasses downstairs",
                    "place the yellow reading glasses on the side table on this floor",
                ],
            ),
            (
                "get me the mug that is on the second floor and put it on the desk on the ground floor",
                [
                    "pick up the mug on floor 2",
                    "place the mug on the desk on the ground floor",
                ],
            ),
            (
                "put the book on the shelf on the top floor",
                [
                    "pick up the book (implied)",
                    "place the book on the shelf on the top floor",
                ],
            ),
        ] {
            assert_eq!(drive(goal), steps, "{goal}");
        }
        // where it goes, not where it is: no place to put it, the pick-up is the plan
        assert_eq!(drive("carry the box upstairs"), ["pick up the box"]);
        // "the floor" alone is a thing, not a storey
        assert_eq!(
            drive("grab the lamp on the floor"),
            ["pick up the lamp on the floor"]
        );
    }

    #[test]
    fn the_drive_reads_one_relation_and_actions_say_the_motion() {
        assert_eq!(
            drive("grab the cup on the left"),
            ["pick up the leftmost cup"]
        );
        assert_eq!(
            drive("grab the third cup from the right"),
            ["pick up the third cup from the right"]
        );
        assert_eq!(
            drive("grab the mug, not the red one"),
            ["pick up the mug (not red)"]
        );
        assert_eq!(
            drive("take the egg that's next to the tomato"),
            ["pick up the egg near the tomato"]
        );
        assert_eq!(
            drive("type hi on the keyboard"),
            [
                "turn on the keyboard [press the h key]",
                "turn on the keyboard [press the i key]"
            ]
        );
        assert_eq!(
            drive("open the metal cabinet from the right side"),
            ["open the metal cabinet [open the metal cabinet from the right side]"]
        );
        assert_eq!(
            drive("remove the thumbtack from the cork board"),
            ["pick up the thumbtack on the cork board [pull the thumbtack out of the cork board]"]
        );
    }

    #[test]
    fn refusals_keep_their_class() {
        let g = GoalGrammar::lexical();
        let e = plan_of("wash the dishes", g.understand("wash the dishes")).unwrap_err();
        assert_eq!(e.kind, PlanErrorKind::Unsupported);
        let e = plan_of("open it", g.understand("open it")).unwrap_err();
        assert_eq!(e.kind, PlanErrorKind::NoObject);
    }
}
