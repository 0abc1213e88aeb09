//! The agent's tools (SPEC §1.3): names, typed arguments with generated JSON schemas,
//! descriptions (from `prompts/tools.md`) and parsing of a model's call into a typed
//! [`ToolRequest`] — the first guard: an unknown tool, arguments that do not parse and a
//! skill outside the allowed set never get further.

use std::fmt;
use std::str::FromStr;

use asp_core::{FailureKind, ObjectKey, Skill, Storey, Within};
use asp_llm::ToolSpec;
use asp_llm::schema::tool_spec;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::prompts;

/// Every tool the agent knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ToolName {
    ObjectRetrieval,
    RecallMemory,
    DistanceTo,
    DistanceBetween,
    LeftOf,
    RightOf,
    SizeOf,
    Interact,
    GoTo,
    /// One tool per skill: grasp, place, drop, grasp_part, tip_push, pinch_pull,
    /// hook_pull, open, close.
    Skill(Skill),
}

impl ToolName {
    /// All tools, in the order they are offered.
    pub fn all() -> Vec<ToolName> {
        let mut v = vec![
            ToolName::ObjectRetrieval,
            ToolName::RecallMemory,
            ToolName::DistanceTo,
            ToolName::DistanceBetween,
            ToolName::LeftOf,
            ToolName::RightOf,
            ToolName::SizeOf,
            ToolName::Interact,
            ToolName::GoTo,
        ];
        v.extend(Skill::ALL.into_iter().map(ToolName::Skill));
        v
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolName::ObjectRetrieval => "object_retrieval",
            ToolName::RecallMemory => "recall_memory",
            ToolName::DistanceTo => "distance_to",
            ToolName::DistanceBetween => "distance_between",
            ToolName::LeftOf => "left_of",
            ToolName::RightOf => "right_of",
            ToolName::SizeOf => "size_of",
            ToolName::Interact => "interact",
            ToolName::GoTo => "go_to",
            ToolName::Skill(s) => s.name(),
        }
    }

    /// Whether the call moves the robot (and so may change the world).
    pub fn is_action(self) -> bool {
        matches!(
            self,
            ToolName::Interact | ToolName::GoTo | ToolName::Skill(_)
        )
    }

    /// The tool's JSON-schema'd description for the model.
    pub fn spec(self) -> ToolSpec {
        let name = self.as_str();
        let description = prompts::tool_description(name);
        match self {
            ToolName::ObjectRetrieval | ToolName::RecallMemory => {
                tool_spec::<QueryArgs>(name, description)
            }
            ToolName::DistanceTo | ToolName::SizeOf | ToolName::Skill(_) => {
                tool_spec::<ObjArgs>(name, description)
            }
            ToolName::DistanceBetween | ToolName::LeftOf | ToolName::RightOf => {
                tool_spec::<PairArgs>(name, description)
            }
            ToolName::Interact | ToolName::GoTo => tool_spec::<ObjActionArgs>(name, description),
        }
    }
}

impl fmt::Display for ToolName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for ToolName {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        ToolName::all()
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or(())
    }
}

/// Arguments of `object_retrieval` and `recall_memory`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct QueryArgs {
    /// A short, specific description of ONE object: its category and the attributes that
    /// tell it apart (colour, material, parts), e.g. "red mug with a handle". No
    /// spatial relations: find each object separately and compare them with the spatial
    /// tools.
    pub query: String,
    /// The room the object is in, when the goal names one ("kitchen", "office"): only
    /// objects there are found (the robot learned its rooms on a tour; without such a
    /// memory the room is not checked). Null otherwise.
    #[serde(default)]
    pub room: Option<String>,
    /// The storey the object is on, when the goal names one: "upstairs" or "downstairs"
    /// (from the robot's storey), "this floor", "ground floor", "top floor" or "floor N".
    /// Only objects there are found; the robot rides the elevator to what it saw on
    /// another storey. Null otherwise.
    #[serde(default)]
    pub storey: Option<String>,
}

/// Arguments of the tools on one object.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjArgs {
    /// An object key from the inventory, e.g. "red_mug_0".
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub obj: String,
}

/// Arguments of the tools comparing two objects.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PairArgs {
    /// An object key from the inventory.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub a: String,
    /// Another object key from the inventory.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub b: String,
}

/// Arguments of `interact` and `go_to`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ObjActionArgs {
    /// An object key from the inventory.
    #[schemars(regex(pattern = r"^[a-z][a-z0-9_]*$"))]
    pub obj: String,
    /// What to do to the object, as a short imperative naming the part if there is one,
    /// e.g. "press the bell button", "pull the plug out of the socket".
    pub action: String,
}

/// A tool call with typed, validated arguments.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolRequest {
    /// `within`: only objects in that room ("the desk in the office"), on that storey
    /// ("the phone upstairs").
    ObjectRetrieval {
        query: String,
        within: Within,
    },
    /// What the building memory saw like `query` (within a room, on a storey); no
    /// motion.
    RecallMemory {
        query: String,
        within: Within,
    },
    DistanceTo {
        obj: ObjectKey,
    },
    DistanceBetween {
        a: ObjectKey,
        b: ObjectKey,
    },
    LeftOf {
        a: ObjectKey,
        b: ObjectKey,
    },
    RightOf {
        a: ObjectKey,
        b: ObjectKey,
    },
    SizeOf {
        obj: ObjectKey,
    },
    Interact {
        obj: ObjectKey,
        action: String,
    },
    GoTo {
        obj: ObjectKey,
        action: String,
    },
    Skill {
        skill: Skill,
        obj: ObjectKey,
    },
}

/// Longest query or action text accepted, characters.
pub const MAX_TEXT_LEN: usize = 200;

/// Why a call was refused before reaching the backend.
#[derive(Debug, Clone, PartialEq)]
pub struct Rejection {
    pub kind: FailureKind,
    pub message: String,
}

impl Rejection {
    fn new(kind: FailureKind, message: impl Into<String>) -> Self {
        Self {
            kind,
            message: message.into(),
        }
    }
}

impl ToolRequest {
    pub fn tool(&self) -> ToolName {
        match self {
            ToolRequest::ObjectRetrieval { .. } => ToolName::ObjectRetrieval,
            ToolRequest::RecallMemory { .. } => ToolName::RecallMemory,
            ToolRequest::DistanceTo { .. } => ToolName::DistanceTo,
            ToolRequest::DistanceBetween { .. } => ToolName::DistanceBetween,
            ToolRequest::LeftOf { .. } => ToolName::LeftOf,
            ToolRequest::RightOf { .. } => ToolName::RightOf,
            ToolRequest::SizeOf { .. } => ToolName::SizeOf,
            ToolRequest::Interact { .. } => ToolName::Interact,
            ToolRequest::GoTo { .. } => ToolName::GoTo,
            ToolRequest::Skill { skill, .. } => ToolName::Skill(*skill),
        }
    }

    /// The arguments as the model would send them.
    pub fn args_json(&self) -> Value {
        match self {
            ToolRequest::ObjectRetrieval { query, within }
            | ToolRequest::RecallMemory { query, within } => {
                let mut args = json!({"query": query});
                if let Some(room) = &within.room {
                    args["room"] = json!(room);
                }
                if let Some(storey) = within.storey {
                    args["storey"] = json!(storey.to_string());
                }
                args
            }
            ToolRequest::DistanceTo { obj }
            | ToolRequest::SizeOf { obj }
            | ToolRequest::Skill { obj, .. } => json!({"obj": obj}),
            ToolRequest::DistanceBetween { a, b }
            | ToolRequest::LeftOf { a, b }
            | ToolRequest::RightOf { a, b } => json!({"a": a, "b": b}),
            ToolRequest::Interact { obj, action } | ToolRequest::GoTo { obj, action } => {
                json!({"obj": obj, "action": action})
            }
        }
    }

    /// The object keys the call refers to.
    pub fn objects(&self) -> Vec<&ObjectKey> {
        match self {
            ToolRequest::ObjectRetrieval { .. } | ToolRequest::RecallMemory { .. } => vec![],
            ToolRequest::DistanceTo { obj }
            | ToolRequest::SizeOf { obj }
            | ToolRequest::Skill { obj, .. }
            | ToolRequest::Interact { obj, .. }
            | ToolRequest::GoTo { obj, .. } => vec![obj],
            ToolRequest::DistanceBetween { a, b }
            | ToolRequest::LeftOf { a, b }
            | ToolRequest::RightOf { a, b } => vec![a, b],
        }
    }

    /// Parses a model's call: `name` must be a known tool offered in this session and
    /// `args` must match its schema exactly (no unknown or missing fields, keys that are
    /// valid object keys, non-empty texts).
    pub fn parse(name: &str, args: &Value, offered: &[ToolName]) -> Result<Self, Rejection> {
        let tool = ToolName::from_str(name).map_err(|()| {
            Rejection::new(
                FailureKind::UnknownTool,
                format!(
                    "there is no tool named {name:?}; the tools are: {}",
                    offered
                        .iter()
                        .map(|t| t.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        if !offered.contains(&tool) {
            let why = match tool {
                ToolName::Skill(s) => format!(
                    "the skill {s} is not allowed on this robot (/**.safety.allowed_skills); use another tool"
                ),
                _ => format!("the tool {tool} is not available on this robot"),
            };
            return Err(Rejection::new(FailureKind::NotAllowed, why));
        }
        let req = match tool {
            ToolName::ObjectRetrieval | ToolName::RecallMemory => {
                let a: QueryArgs = args_of(tool, args)?;
                let query = text_arg(tool, "query", a.query)?;
                // strict schemas make every field required: null or "" is no room
                let room = a
                    .room
                    .filter(|r| !r.trim().is_empty())
                    .map(|r| text_arg(tool, "room", r))
                    .transpose()?;
                let storey = a
                    .storey
                    .filter(|s| !s.trim().is_empty())
                    .map(|s| {
                        s.parse::<Storey>().map_err(|e| {
                            Rejection::new(
                                FailureKind::InvalidArgument,
                                format!("{tool}: storey {e}"),
                            )
                        })
                    })
                    .transpose()?;
                let within = Within {
                    room,
                    storey,
                    counted_from: None,
                };
                if tool == ToolName::ObjectRetrieval {
                    ToolRequest::ObjectRetrieval { query, within }
                } else {
                    ToolRequest::RecallMemory { query, within }
                }
            }
            ToolName::DistanceTo => ToolRequest::DistanceTo {
                obj: key_arg(tool, "obj", &args_of::<ObjArgs>(tool, args)?.obj)?,
            },
            ToolName::SizeOf => ToolRequest::SizeOf {
                obj: key_arg(tool, "obj", &args_of::<ObjArgs>(tool, args)?.obj)?,
            },
            ToolName::Skill(skill) => ToolRequest::Skill {
                skill,
                obj: key_arg(tool, "obj", &args_of::<ObjArgs>(tool, args)?.obj)?,
            },
            ToolName::DistanceBetween | ToolName::LeftOf | ToolName::RightOf => {
                let p: PairArgs = args_of(tool, args)?;
                let a = key_arg(tool, "a", &p.a)?;
                let b = key_arg(tool, "b", &p.b)?;
                if a == b {
                    return Err(Rejection::new(
                        FailureKind::InvalidArgument,
                        format!("{tool}: a and b are both {a}; compare two different objects"),
                    ));
                }
                match tool {
                    ToolName::DistanceBetween => ToolRequest::DistanceBetween { a, b },
                    ToolName::LeftOf => ToolRequest::LeftOf { a, b },
                    _ => ToolRequest::RightOf { a, b },
                }
            }
            ToolName::Interact | ToolName::GoTo => {
                let p: ObjActionArgs = args_of(tool, args)?;
                let obj = key_arg(tool, "obj", &p.obj)?;
                let action = text_arg(tool, "action", p.action)?;
                if tool == ToolName::Interact {
                    ToolRequest::Interact { obj, action }
                } else {
                    ToolRequest::GoTo { obj, action }
                }
            }
        };
        Ok(req)
    }
}

fn args_of<T: DeserializeOwned>(tool: ToolName, args: &Value) -> Result<T, Rejection> {
    serde_json::from_value(args.clone()).map_err(|e| {
        let expected = tool.spec().parameters["properties"]
            .as_object()
            .map(|p| p.keys().cloned().collect::<Vec<_>>().join(", "))
            .unwrap_or_default();
        Rejection::new(
            FailureKind::InvalidArgument,
            format!("{tool}: invalid arguments {args}: {e}; expected exactly: {expected}"),
        )
    })
}

fn key_arg(tool: ToolName, field: &str, value: &str) -> Result<ObjectKey, Rejection> {
    ObjectKey::new(value.trim()).map_err(|_| {
        Rejection::new(
            FailureKind::InvalidArgument,
            format!(
                "{tool}: {field} = {value:?} is not an object key; use a key from the inventory, such as those object_retrieval returns (e.g. \"red_mug_0\")"
            ),
        )
    })
}

fn text_arg(tool: ToolName, field: &str, value: String) -> Result<String, Rejection> {
    let t = value.trim();
    if t.is_empty() {
        return Err(Rejection::new(
            FailureKind::InvalidArgument,
            format!("{tool}: {field} is empty"),
        ));
    }
    if t.chars().count() > MAX_TEXT_LEN {
        return Err(Rejection::new(
            FailureKind::InvalidArgument,
            format!("{tool}: {field} is longer than {MAX_TEXT_LEN} characters; be brief"),
        ));
    }
    Ok(t.to_owned())
}

/// The tools offered to the model: everything but go_to and recall_memory (a tour's
/// memory) on a tabletop robot, and only the allowed skills.
pub fn offered_tools(allowed_skills: &[Skill], mobile: bool) -> Vec<ToolName> {
    ToolName::all()
        .into_iter()
        .filter(|t| match t {
            ToolName::GoTo | ToolName::RecallMemory => mobile,
            ToolName::Skill(s) => allowed_skills.contains(s),
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all() -> Vec<ToolName> {
        offered_tools(&Skill::ALL, true)
    }

    #[test]
    fn names_round_trip() {
        assert_eq!(ToolName::all().len(), 18);
        for t in ToolName::all() {
            assert_eq!(t.as_str().parse::<ToolName>(), Ok(t));
        }
        assert!("teleport".parse::<ToolName>().is_err());
    }

    #[test]
    fn parses_typed_arguments() {
        assert_eq!(
            ToolRequest::parse("grasp", &json!({"obj": "mug_0"}), &all()).unwrap(),
            ToolRequest::Skill {
                skill: Skill::Grasp,
                obj: ObjectKey::new("mug_0").unwrap()
            }
        );
        let r = ToolRequest::parse(
            "interact",
            &json!({"obj": "bell_0", "action": " press the bell button "}),
            &all(),
        )
        .unwrap();
        assert_eq!(r.args_json()["action"], "press the bell button");
        assert_eq!(r.tool(), ToolName::Interact);
        let r = ToolRequest::parse(
            "recall_memory",
            &json!({"query": " red stapler ", "room": "office"}),
            &all(),
        )
        .unwrap();
        assert_eq!(
            r,
            ToolRequest::RecallMemory {
                query: "red stapler".into(),
                within: Within::room("office"),
            }
        );
        assert!(!r.tool().is_action(), "recalling never moves the robot");
        assert_eq!(
            ToolRequest::parse("recall_memory", &r.args_json(), &all()).unwrap(),
            r
        );
        // a storey is a typed value: said as people say it, sent back as its name
        let r = ToolRequest::parse(
            "object_retrieval",
            &json!({"query": "white phone", "room": null, "storey": "the second floor"}),
            &all(),
        )
        .unwrap();
        assert_eq!(
            r,
            ToolRequest::ObjectRetrieval {
                query: "white phone".into(),
                within: Within::storey(Storey::Numbered(2)),
            }
        );
        assert_eq!(r.args_json()["storey"], "floor 2");
        assert_eq!(
            ToolRequest::parse("object_retrieval", &r.args_json(), &all()).unwrap(),
            r
        );
    }

    #[test]
    fn rejections_say_what_is_wrong() {
        let cases: &[(&str, Value, FailureKind, &str)] = &[
            (
                "object_retrieval",
                json!({"query": "phone", "storey": "the attic"}),
                FailureKind::InvalidArgument,
                "storey \"the attic\" is not a storey",
            ),
            (
                "teleport",
                json!({}),
                FailureKind::UnknownTool,
                "object_retrieval",
            ),
            (
                "grasp",
                json!({"object": "mug_0"}),
                FailureKind::InvalidArgument,
                "obj",
            ),
            (
                "grasp",
                json!({"obj": "mug_0", "force": 3}),
                FailureKind::InvalidArgument,
                "force",
            ),
            (
                "grasp",
                json!({"obj": "Red Mug"}),
                FailureKind::InvalidArgument,
                "Red Mug",
            ),
            (
                "grasp",
                json!({"obj": 3}),
                FailureKind::InvalidArgument,
                "obj",
            ),
            (
                "grasp",
                json!("mug_0"),
                FailureKind::InvalidArgument,
                "grasp",
            ),
            (
                "object_retrieval",
                json!({"query": "  "}),
                FailureKind::InvalidArgument,
                "empty",
            ),
            (
                "left_of",
                json!({"a": "mug_0", "b": "mug_0"}),
                FailureKind::InvalidArgument,
                "different",
            ),
            (
                "interact",
                json!({"obj": "mug_0"}),
                FailureKind::InvalidArgument,
                "action",
            ),
        ];
        for (name, args, kind, needle) in cases {
            let r = ToolRequest::parse(name, args, &all()).unwrap_err();
            assert_eq!(&r.kind, kind, "{name} {args}: {}", r.message);
            assert!(r.message.contains(needle), "{name} {args}: {}", r.message);
        }
        let long = "x".repeat(MAX_TEXT_LEN + 1);
        assert!(ToolRequest::parse("object_retrieval", &json!({"query": long}), &all()).is_err());
    }

    #[test]
    fn disallowed_skills_and_go_to_are_not_offered() {
        let offered = offered_tools(&[Skill::Grasp, Skill::Place], false);
        assert!(!offered.contains(&ToolName::GoTo));
        assert!(!offered.contains(&ToolName::RecallMemory));
        assert!(offered_tools(&[Skill::Grasp], true).contains(&ToolName::RecallMemory));
        assert!(!offered.contains(&ToolName::Skill(Skill::PinchPull)));
        let r = ToolRequest::parse("pinch_pull", &json!({"obj": "plug_0"}), &offered).unwrap_err();
        assert_eq!(r.kind, FailureKind::NotAllowed);
        assert!(r.message.contains("allowed_skills"), "{}", r.message);
        let r = ToolRequest::parse("go_to", &json!({"obj": "a_0", "action": "x"}), &offered)
            .unwrap_err();
        assert_eq!(r.kind, FailureKind::NotAllowed);
    }
}
