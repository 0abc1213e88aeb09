//! Any text a client sends reaches the goal grammar (after the length and control
//! character checks): whatever it is, the grammar answers — a plan, a refusal or a
//! question — and never panics, and a plan it gives is one the drive can act on.
#![allow(clippy::unwrap_used)]

use asp_agent::Verb;
use asp_agent::planner::understand::subtasks::plan_of;
use asp_agent::planner::understand::{GoalGrammar, Understanding};
use proptest::prelude::*;

/// Words the grammar treats specially, so that random goals hit its branches, with
/// ordinary and odd words among them.
const POOL: &[&str] = &[
    "pick",
    "up",
    "put",
    "place",
    "in",
    "on",
    "into",
    "the",
    "a",
    "it",
    "them",
    "one",
    "other",
    "not",
    "and",
    "then",
    "but",
    "except",
    "open",
    "close",
    "turn",
    "off",
    "switch",
    "press",
    "type",
    "dial",
    "unplug",
    "pull",
    "out",
    "of",
    "'s",
    "from",
    "to",
    "between",
    "left",
    "right",
    "top",
    "bottom",
    "second",
    "last",
    "two",
    "3",
    "red",
    "big",
    "mug",
    "drawer",
    "fridge",
    "door",
    "handle",
    "button",
    "kitchen",
    "living",
    "room",
    "near",
    "next",
    "closest",
    "furthest",
    "that",
    "is",
    "isn't",
    "don't",
    "please",
    "could",
    "you",
    "I",
    "need",
    "goes",
    "go",
    "hello",
    ",",
    ".",
    "?",
    "!",
    "\"",
    "'",
    "-",
    "by",
    "its",
    "side",
    "me",
    "bring",
    "take",
    "carry",
    "grab",
    "cat",
    "fire",
    "throw",
    "at",
    "wash",
    "zorble",
    "ünïcödé",
    "日本",
    "",
    "  ",
    "x",
    "'",
    "''",
    "s",
    "t",
    "now",
];

fn goal() -> impl Strategy<Value = String> {
    prop::collection::vec(prop::sample::select(POOL), 0..24).prop_map(|w| w.join(" "))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, .. ProptestConfig::default() })]

    #[test]
    fn any_goal_gets_an_answer_and_plans_are_actionable(g in goal()) {
        let grammar = GoalGrammar::lexical();
        let u = grammar.understand(&g);
        if let Understanding::Plan { steps, .. } = &u {
            prop_assert!(!steps.is_empty(), "{g:?}: an empty plan");
            for s in steps {
                prop_assert!(!s.object.name.is_empty(), "{g:?}: a step without an object");
                prop_assert_eq!(s.location.is_some(), s.verb == Verb::Place, "{:?}", g);
            }
        }
        // and the drive's subtasks come out of it (or a refusal with a message)
        match plan_of(&g, u) {
            Ok(p) => prop_assert!(!p.subtasks.is_empty()),
            Err(e) => prop_assert!(!e.message.is_empty(), "{g:?}: a refusal without a reason"),
        }
    }

    #[test]
    fn arbitrary_text_never_panics(g in "\\PC{0,80}") {
        let grammar = GoalGrammar::lexical();
        let _ = plan_of(&g, grammar.understand(&g));
    }
}
