//! What a goal must be before anything plans it: not empty, not only whitespace, not
//! longer than `agent_node.limits.max_goal_chars`, and free of control characters
//! (tabs and line breaks count as spaces). A refused goal never reaches a planner or a
//! model, and the refusal's message describes the input instead of repeating it (a
//! 100 kB paste does not come back in the error).

use crate::events::GoalErrorCode;

/// Why a goal was refused before planning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GoalRefusal {
    /// No characters at all.
    Empty,
    /// Only whitespace.
    Blank { chars: usize },
    /// More characters than allowed.
    TooLong { chars: usize, max: usize },
    /// A control character (other than tab and line breaks), at a character index.
    ControlCharacter { ch: char, at: usize },
}

impl GoalRefusal {
    /// The goal's failure code.
    pub fn code(&self) -> GoalErrorCode {
        match self {
            GoalRefusal::Empty => GoalErrorCode::GoalEmpty,
            GoalRefusal::Blank { .. } => GoalErrorCode::GoalBlank,
            GoalRefusal::TooLong { .. } => GoalErrorCode::GoalTooLong,
            GoalRefusal::ControlCharacter { .. } => GoalErrorCode::GoalControlCharacter,
        }
    }

    /// What to tell the person, without echoing the input.
    pub fn message(&self) -> String {
        match self {
            GoalRefusal::Empty => {
                "the goal is empty: say what to do, e.g. \"pick up the red mug\"".into()
            }
            GoalRefusal::Blank { chars } => format!(
                "the goal is only whitespace ({chars} characters): say what to do, e.g. \"pick up the red mug\""
            ),
            GoalRefusal::TooLong { chars, max } => format!(
                "the goal is {chars} characters long; at most {max} are accepted (agent_node.limits.max_goal_chars)"
            ),
            GoalRefusal::ControlCharacter { ch, at } => format!(
                "the goal contains the control character U+{:04X} at character {}; send plain text",
                u32::from(*ch),
                at + 1
            ),
        }
    }
}

/// Characters of a goal kept where it is shown (events, logs, reports).
pub const SHOWN_CHARS: usize = 300;

/// `goal` as events and logs show it: its first [`SHOWN_CHARS`] characters, control
/// characters escaped (a terminal shows `\u{1b}`, not an escape sequence), with a note of
/// how many more there were.
pub fn shown(goal: &str) -> String {
    let escape = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_control() && c != ' ' {
                    c.escape_default().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect()
    };
    match goal.char_indices().nth(SHOWN_CHARS) {
        Some((i, _)) => format!(
            "{}… ({} more characters)",
            escape(&goal[..i]),
            goal[i..].chars().count()
        ),
        None => escape(goal),
    }
}

/// Checks `goal` against the rules above; `max_chars` counts Unicode scalar values.
pub fn check_goal(goal: &str, max_chars: usize) -> Result<(), GoalRefusal> {
    if goal.is_empty() {
        return Err(GoalRefusal::Empty);
    }
    let chars = goal.chars().count();
    if chars > max_chars {
        return Err(GoalRefusal::TooLong {
            chars,
            max: max_chars,
        });
    }
    if let Some((at, ch)) = goal
        .chars()
        .enumerate()
        .find(|(_, c)| c.is_control() && !matches!(c, '\t' | '\n' | '\r'))
    {
        return Err(GoalRefusal::ControlCharacter { ch, at });
    }
    if goal.trim().is_empty() {
        return Err(GoalRefusal::Blank { chars });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_class_is_told_apart_and_plain_goals_pass() {
        assert_eq!(check_goal("", 10), Err(GoalRefusal::Empty));
        assert_eq!(
            check_goal(" \t\n ", 10),
            Err(GoalRefusal::Blank { chars: 4 })
        );
        assert_eq!(
            check_goal("pick up the mug", 10),
            Err(GoalRefusal::TooLong { chars: 15, max: 10 })
        );
        assert_eq!(
            check_goal("open\u{7}it", 10),
            Err(GoalRefusal::ControlCharacter { ch: '\u{7}', at: 4 })
        );
        assert_eq!(
            check_goal("open\u{0}it", 10).map_err(|r| r.code()),
            Err(GoalErrorCode::GoalControlCharacter)
        );
        assert_eq!(check_goal("pick up\nthe mug\tplease", 100), Ok(()));
        // characters, not bytes: ten é are ten characters
        assert_eq!(check_goal(&"é".repeat(10), 10), Ok(()));
    }

    #[test]
    fn long_goals_are_shown_by_their_start() {
        assert_eq!(shown("open it"), "open it");
        let s = shown(&"x".repeat(SHOWN_CHARS + 5));
        assert!(s.ends_with("… (5 more characters)"), "{s}");
        assert_eq!(s.chars().filter(|c| *c == 'x').count(), SHOWN_CHARS);
        // control characters are shown escaped, never sent to a terminal as they are
        assert_eq!(shown("open\u{1b}[2J it"), "open\\u{1b}[2J it");
        assert_eq!(shown("a\nb"), "a\\nb");
    }

    #[test]
    fn messages_describe_the_input_without_repeating_it() {
        let long = "pick up the mug ".repeat(500);
        let r = check_goal(&long, 2000).unwrap_err();
        let m = r.message();
        assert!(m.contains("8000 characters") && m.contains("2000"), "{m}");
        assert!(!m.contains("pick up the mug"), "{m}");
        let m = check_goal("a\u{1b}[2Jb", 100).unwrap_err().message();
        assert!(m.contains("U+001B") && m.contains("character 2"), "{m}");
        assert!(!m.contains('\u{1b}'), "{m}");
    }
}
