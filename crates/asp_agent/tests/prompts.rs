//! Snapshots of what the model is shown: the system prompt, the goal message, the tool
//! descriptions and their JSON schemas, the planner prompt. A change to any of them
//! shows up in review as a snapshot diff.
#![allow(clippy::unwrap_used)]

use asp_agent::tools::{ToolName, offered_tools};
use asp_agent::{AgentSettings, prompts};
use asp_core::Skill;
use serde_json::Value;

#[test]
fn system_prompt_snapshot() {
    let s = AgentSettings::default();
    insta::assert_snapshot!(
        "system_tabletop",
        prompts::system(s.max_tool_calls, s.max_retries_per_call, false)
    );
    let mobile = prompts::system(s.max_tool_calls, s.max_retries_per_call, true);
    assert!(mobile.contains("on a mobile base"));
}

#[test]
fn planner_prompt_snapshot() {
    insta::assert_snapshot!("planner", prompts::PLANNER);
}

#[test]
fn tool_specs_snapshot() {
    let specs: Vec<Value> = ToolName::all()
        .into_iter()
        .map(|t| serde_json::to_value(t.spec()).unwrap())
        .collect();
    insta::assert_json_snapshot!("tool_specs", specs);
}

#[test]
fn tool_schemas_are_strict_and_match_the_argument_types() {
    for t in ToolName::all() {
        let p = t.spec().parameters;
        assert_eq!(p["type"], "object", "{t}");
        assert_eq!(p["additionalProperties"], false, "{t}");
        let props: Vec<&String> = p["properties"].as_object().unwrap().keys().collect();
        let required: Vec<&str> = p["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap())
            .collect();
        assert_eq!(props.len(), required.len(), "{t}: every property required");
        let expected: &[&str] = match t {
            ToolName::ObjectRetrieval | ToolName::RecallMemory => &["query", "room", "storey"],
            ToolName::DistanceBetween | ToolName::LeftOf | ToolName::RightOf => &["a", "b"],
            ToolName::Interact | ToolName::GoTo => &["action", "obj"],
            _ => &["obj"],
        };
        let mut got: Vec<&str> = props.iter().map(|s| s.as_str()).collect();
        got.sort_unstable();
        assert_eq!(got, expected, "{t}");
        assert!(!t.spec().description.is_empty());
    }
}

#[test]
fn offered_tools_follow_the_robot() {
    let names = |v: Vec<ToolName>| v.into_iter().map(|t| t.as_str()).collect::<Vec<_>>();
    insta::assert_debug_snapshot!(
        "offered_tabletop_default",
        names(offered_tools(&Skill::ALL, false))
    );
    assert_eq!(offered_tools(&Skill::ALL, true).len(), 18);
    assert_eq!(offered_tools(&[], false).len(), 7);
}
