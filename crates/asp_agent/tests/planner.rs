//! The offline goal grammar (as the drive gets it) on the study's goal phrasings (table-driven), and a snapshot
//! of every plan.
#![allow(clippy::unwrap_used)]

use asp_agent::planner::understand::GoalGrammar;
use asp_agent::planner::understand::subtasks::plan_of;

fn parse_goal(goal: &str) -> Result<asp_agent::Plan, asp_agent::PlanError> {
    plan_of(goal, GoalGrammar::lexical().understand(goal))
}
use asp_agent::{Preposition, Verb};

/// (goal, expected subtasks as "verb object [part] [prep location]" and action, if any)
struct Case {
    goal: &'static str,
    steps: &'static [&'static str],
}

/// A compact form for the table: `pick_up mug`, `place apple in bowl`, `open cabinet/top
/// drawer`, `turn_on desk bell {press the bell button}`; implied steps start with `+`.
fn compact(goal: &str) -> Vec<String> {
    let plan = parse_goal(goal).unwrap_or_else(|e| panic!("{e}"));
    plan.subtasks
        .iter()
        .map(|s| {
            let mut out = String::new();
            if s.implied {
                out.push('+');
            }
            out.push_str(s.verb.as_str());
            out.push(' ');
            out.push_str(&s.object);
            if let Some(p) = &s.part {
                out.push('/');
                out.push_str(p);
            }
            if let Some(l) = &s.location {
                let prep = match s.preposition {
                    Some(Preposition::In) => "in",
                    _ => "on",
                };
                out.push_str(&format!(" {prep} {l}"));
                if let Some(p) = &s.location_part {
                    out.push('/');
                    out.push_str(p);
                }
            }
            if let Some(a) = &s.action {
                out.push_str(&format!(" {{{a}}}"));
            }
            out
        })
        .collect()
}

const CASES: &[Case] = &[
    Case {
        goal: "pick up the mug",
        steps: &["pick_up mug"],
    },
    Case {
        goal: "Pick up the mug.",
        steps: &["pick_up mug"],
    },
    Case {
        goal: "grab the red cup",
        steps: &["pick_up red cup"],
    },
    Case {
        goal: "please pick the banana up",
        steps: &["pick_up banana"],
    },
    Case {
        goal: "take the apple",
        steps: &["pick_up apple"],
    },
    Case {
        goal: "bring me the apple",
        steps: &["pick_up apple"],
    },
    Case {
        goal: "pick up the mug by the handle",
        steps: &["pick_up mug/handle {grasp the mug by its handle}"],
    },
    Case {
        goal: "grasp the mug's handle",
        steps: &["pick_up mug/handle {grasp the mug by its handle}"],
    },
    Case {
        goal: "put the apple in the bowl",
        steps: &["+pick_up apple", "place apple in bowl"],
    },
    Case {
        goal: "place the mug on the plate",
        steps: &["+pick_up mug", "place mug on plate"],
    },
    Case {
        goal: "put the egg that is near the tomato in the pan",
        steps: &[
            "+pick_up egg near the tomato",
            "place egg near the tomato in pan",
        ],
    },
    Case {
        goal: "put the red book near the butter on the shelf",
        steps: &[
            "+pick_up red book near the butter",
            "place red book near the butter on shelf",
        ],
    },
    Case {
        goal: "put the red block in the bowl on the left",
        steps: &["+pick_up red block", "place red block in leftmost bowl"],
    },
    Case {
        goal: "drop the ball into the box",
        steps: &["+pick_up ball", "place ball in box"],
    },
    Case {
        goal: "put the apple in the drawer",
        steps: &["+open drawer", "+pick_up apple", "place apple in drawer"],
    },
    Case {
        goal: "put the spoon in the top drawer of the cabinet",
        steps: &[
            "+open cabinet/top drawer",
            "+pick_up spoon",
            "place spoon in cabinet/top drawer",
        ],
    },
    Case {
        goal: "pick up the mug and put it in the sink",
        steps: &["pick_up mug", "place mug in sink"],
    },
    Case {
        goal: "pick up the cup, then place it on the plate",
        steps: &["pick_up cup", "place cup on plate"],
    },
    Case {
        goal: "put the apple and the banana in the bowl",
        steps: &[
            "+pick_up apple",
            "place apple in bowl",
            "+pick_up banana",
            "place banana in bowl",
        ],
    },
    Case {
        goal: "take the mug to the plate",
        steps: &["pick_up mug", "place mug on plate"],
    },
    Case {
        goal: "move the cup onto the tray",
        steps: &["+pick_up cup", "place cup on tray"],
    },
    Case {
        goal: "open the drawer",
        steps: &["open drawer"],
    },
    Case {
        goal: "open the top drawer of the cabinet",
        steps: &["open cabinet/top drawer"],
    },
    Case {
        goal: "open the metal cabinet",
        steps: &["open metal cabinet"],
    },
    Case {
        goal: "pull the drawer open",
        steps: &["open drawer"],
    },
    Case {
        goal: "shut the cabinet door",
        steps: &["close cabinet/door"],
    },
    Case {
        goal: "close the fridge",
        steps: &["close fridge"],
    },
    Case {
        goal: "push the drawer closed",
        steps: &["close drawer"],
    },
    Case {
        goal: "turn on the lamp",
        steps: &["turn_on lamp"],
    },
    Case {
        goal: "turn the lamp off",
        steps: &["turn_off lamp"],
    },
    Case {
        goal: "switch on the light",
        steps: &["turn_on light"],
    },
    Case {
        goal: "ring the desk bell",
        steps: &["turn_on desk bell {press the bell button}"],
    },
    Case {
        goal: "ring the bell",
        steps: &["turn_on bell {press the bell button}"],
    },
    Case {
        goal: "press the space bar on the keyboard",
        steps: &["turn_on keyboard/space bar {press the space bar}"],
    },
    Case {
        goal: "push the button",
        steps: &["turn_on button {press the button}"],
    },
    Case {
        goal: "press the button of the microwave",
        steps: &["turn_on microwave/button {press the button}"],
    },
    Case {
        goal: "unplug the power adapter",
        steps: &["pick_up power adapter {pull the power adapter out of the socket}"],
    },
    Case {
        goal: "remove the thumbtack from the board",
        steps: &["pick_up thumbtack on the board {pull the thumbtack out of the board}"],
    },
    Case {
        goal: "remove the thumbtack",
        steps: &["pick_up thumbtack {pull the thumbtack out}"],
    },
    Case {
        goal: "pull out the plug",
        steps: &["pick_up plug {pull the plug out of the socket}"],
    },
    Case {
        goal: "type hi on the keyboard",
        steps: &[
            "turn_on keyboard {press the h key}",
            "turn_on keyboard {press the i key}",
        ],
    },
    Case {
        goal: "Type \"No 1\" on the laptop keyboard.",
        steps: &[
            "turn_on laptop keyboard {press the n key}",
            "turn_on laptop keyboard {press the o key}",
            "turn_on laptop keyboard {press the space bar}",
            "turn_on laptop keyboard {press the 1 key}",
        ],
    },
    Case {
        goal: "open the metal cabinet from the right side",
        steps: &["open metal cabinet {open the metal cabinet from the right side}"],
    },
    Case {
        goal: "press the button from the front",
        steps: &["turn_on button {press the button from the front side}"],
    },
    Case {
        goal: "put both green apples in the basket",
        steps: &[
            "+pick_up green apple",
            "place green apple in basket",
            "+pick_up other green apple",
            "place other green apple in basket",
        ],
    },
    Case {
        goal: "put the two glasses on the tray",
        steps: &[
            "+pick_up glass",
            "place glass on tray",
            "+pick_up other glass",
            "place other glass on tray",
        ],
    },
    Case {
        goal: "type on the keyboard",
        steps: &["turn_on keyboard {press the keys of the keyboard}"],
    },
    Case {
        goal: "dial 911 on the phone",
        steps: &[
            "turn_on phone {press the 9 key}",
            "turn_on phone {press the 1 key}",
            "turn_on phone {press the 1 key}",
        ],
    },
    Case {
        goal: "call 555-01 on the phone",
        steps: &[
            "turn_on phone {press the 5 key}",
            "turn_on phone {press the 5 key}",
            "turn_on phone {press the 5 key}",
            "turn_on phone {press the 0 key}",
            "turn_on phone {press the 1 key}",
        ],
    },
    Case {
        goal: "call mom on the phone",
        steps: &["turn_on phone {press the number keys to dial mom}"],
    },
    Case {
        goal: "dial a number on the phone",
        steps: &["turn_on phone {press the number keys to dial a number}"],
    },
    Case {
        goal: "flip the light switch",
        steps: &["turn_on light switch {press the light switch}"],
    },
    Case {
        goal: "open the drawer, put the apple in it and close the drawer",
        steps: &[
            "open drawer",
            "+pick_up apple",
            "place apple in drawer",
            "close drawer",
        ],
    },
    Case {
        goal: "Could you grab the mug, put it on the plate and then ring the bell?",
        steps: &[
            "pick_up mug",
            "place mug on plate",
            "turn_on bell {press the bell button}",
        ],
    },
];

#[test]
fn study_phrasings_decompose_into_closed_set_subtasks() {
    for case in CASES {
        let got = compact(case.goal);
        assert_eq!(got, case.steps, "goal {:?}", case.goal);
    }
}

#[test]
fn unsupported_goals_say_why() {
    let cases: &[(&str, &str)] = &[
        ("", "empty"),
        ("hello robot", "asks for an action"),
        ("make me a coffee", "not one of the robot's skills"),
        ("tidy up the table", "not one of the robot's skills"),
        ("put the cup next to the plate", "next to"),
        ("put the cup in front of the bowl", "in front of"),
        ("move the cup to the left of the plate", "left of"),
        ("put the apple", "does not say where"),
        ("push the cup", "not one of the robot's skills"),
        ("put it in the bowl", "could stand for"),
        (
            "type the quick brown fox jumps over the dog on the keyboard",
            "at most 24 are typed key by key",
        ),
    ];
    for (goal, needle) in cases {
        let err = parse_goal(goal).unwrap_err();
        assert!(
            err.to_string().contains(needle),
            "{goal:?}: {err} (expected {needle:?})"
        );
        assert!(
            err.to_string().contains(&format!("{goal:?}")),
            "names the goal: {err}"
        );
    }
}

#[test]
fn every_subtask_is_single_verb_from_the_closed_set() {
    for case in CASES {
        let plan = parse_goal(case.goal).unwrap();
        for s in &plan.subtasks {
            assert!(Verb::ALL.contains(&s.verb));
            assert_eq!(s.location.is_some(), s.verb == Verb::Place, "{}", case.goal);
            assert!(!s.object.starts_with("the "), "article kept: {}", s.object);
        }
    }
}

#[test]
fn plans_snapshot() {
    let text: String = CASES
        .iter()
        .map(|c| {
            let plan = parse_goal(c.goal).unwrap();
            format!("{}\n{}\n", c.goal, plan.numbered())
        })
        .collect::<Vec<_>>()
        .join("\n");
    insta::assert_snapshot!("grammar_plans", text);
    let json = serde_json::to_value(parse_goal(CASES[15].goal).unwrap()).unwrap();
    insta::assert_json_snapshot!("plan_json", json);
}
