//! The text the agent shows the model, kept as files under `prompts/` (snapshot-tested):
//! `system.md` (the system prompt), `tools.md` (one `## name` section per tool),
//! `planner.md` (the planner's prompt) and `messages.md` (fixed messages).

use std::collections::BTreeMap;
use std::sync::OnceLock;

const SYSTEM: &str = include_str!("../prompts/system.md");
const TOOLS: &str = include_str!("../prompts/tools.md");
const MESSAGES: &str = include_str!("../prompts/messages.md");
/// The planner's system prompt.
pub const PLANNER: &str = include_str!("../prompts/planner.md");

/// `## name` sections of a prompt file (text before the first heading is a comment).
pub fn sections(text: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut current: Option<(String, Vec<&str>)> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("## ") {
            if let Some((n, body)) = current.take() {
                out.insert(n, body.join("\n").trim().to_owned());
            }
            current = Some((name.trim().to_owned(), Vec::new()));
        } else if let Some((_, body)) = current.as_mut() {
            body.push(line);
        }
    }
    if let Some((n, body)) = current {
        out.insert(n, body.join("\n").trim().to_owned());
    }
    out
}

fn tools() -> &'static BTreeMap<String, String> {
    static T: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    T.get_or_init(|| sections(TOOLS))
}

fn messages() -> &'static BTreeMap<String, String> {
    static M: OnceLock<BTreeMap<String, String>> = OnceLock::new();
    M.get_or_init(|| sections(MESSAGES))
}

/// The description of tool `name` (empty for an unknown name; a test checks that every
/// tool has one).
pub fn tool_description(name: &str) -> &'static str {
    tools().get(name).map_or("", String::as_str)
}

/// Message `name` with `{key}` placeholders filled.
pub fn message(name: &str, vars: &[(&str, &str)]) -> String {
    fill(messages().get(name).map_or("", String::as_str), vars)
}

/// The system prompt with its settings filled in.
pub fn system(max_tool_calls: u32, max_retries: u32, mobile: bool) -> String {
    fill(
        SYSTEM,
        &[
            ("max_tool_calls", &max_tool_calls.to_string()),
            ("max_retries", &max_retries.to_string()),
            (
                "mobile_clause",
                if mobile { " on a mobile base" } else { "" },
            ),
            (
                "memory_rule",
                if mobile {
                    "\n- When the goal only asks where something is (\"where is my stapler?\"), answer from\n  recall_memory without moving: SUCCESS: with the places it gives, or FAILURE: when\n  the memory saw nothing like it.\n- When the goal is to go to a room with nothing named in it (\"go to the kitchen\"), ask\n  recall_memory for the room, kept to that room: its note says what the memory saw\n  there; find the first of those with object_retrieval in that room and go_to it."
                } else {
                    ""
                },
            ),
        ],
    )
}

/// Replaces each `{key}` of the template by its value, in one pass (values are not
/// searched for placeholders, so a goal that contains "{state}" stays as written).
pub fn fill(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = after.find('}').and_then(|close| {
            let key = &after[..close];
            vars.iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (v, close))
        });
        match hit {
            Some((v, close)) => {
                out.push_str(v);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::ToolName;

    #[test]
    fn every_tool_has_a_description_and_no_stray_sections() {
        let names: Vec<&str> = ToolName::all().iter().map(|t| t.as_str()).collect();
        for n in &names {
            assert!(!tool_description(n).is_empty(), "no description for {n}");
        }
        for k in tools().keys() {
            assert!(
                names.contains(&k.as_str()),
                "description for unknown tool {k}"
            );
        }
    }

    #[test]
    fn every_placeholder_is_filled() {
        let s = system(40, 3, false);
        assert!(!s.contains('{'), "{s}");
        assert!(
            s.contains("40 tool calls") && s.contains("3 more times"),
            "{s}"
        );
        let mobile = system(40, 3, true);
        assert!(
            mobile.contains("on a mobile base") && !mobile.contains('{'),
            "{mobile}"
        );
        assert!(mobile.contains("recall_memory") && !s.contains("recall_memory"));
        let m = message("retry_limit_reached", &[("failures", "4")]);
        assert!(m.contains("failed 4 times") && !m.contains('{'), "{m}");
        assert_eq!(message("no_such_message", &[]), "");
    }

    #[test]
    fn fill_is_one_pass() {
        let t = "Goal: {goal} / {state} / {json}";
        let s = fill(t, &[("goal", "say {state}"), ("state", "S")]);
        assert_eq!(s, "Goal: say {state} / S / {json}");
    }

    #[test]
    fn sections_parse() {
        let s = sections("comment\n## a\nline 1\nline 2\n\n## b\nx\n");
        assert_eq!(s["a"], "line 1\nline 2");
        assert_eq!(s["b"], "x");
        assert_eq!(s.len(), 2);
    }
}
