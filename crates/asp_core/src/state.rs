//! What the agent sees (SPEC §1.2): object keys, the symbolic state and tool outputs.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::CoreError;

/// A short unique handle the agent uses for an object, such as `red_mug_0`: lowercase
/// ASCII letters, digits and underscores, starting with a letter, at most 64 characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct ObjectKey(String);

impl ObjectKey {
    pub const MAX_LEN: usize = 64;

    /// Validates `key`; the error names the offending value.
    pub fn new(key: impl Into<String>) -> Result<Self, CoreError> {
        let key = key.into();
        let valid = !key.is_empty()
            && key.len() <= Self::MAX_LEN
            && key.starts_with(|c: char| c.is_ascii_lowercase())
            && key
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
        if valid {
            Ok(ObjectKey(key))
        } else {
            Err(CoreError::InvalidObjectKey(key))
        }
    }

    /// The key for the `counter`-th object retrieved for `query`: the query's words in
    /// lowercase joined by `_`, then the counter (`"Red mug!"`, 0 → `red_mug_0`).
    pub fn from_query(query: &str, counter: u32) -> Self {
        let mut stem = String::new();
        for word in query
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            if !stem.is_empty() {
                stem.push('_');
            }
            stem.push_str(&word.to_ascii_lowercase());
        }
        if !stem.starts_with(|c: char| c.is_ascii_lowercase()) {
            stem.insert_str(0, "object_");
        }
        let suffix = format!("_{counter}");
        let mut cut = Self::MAX_LEN - suffix.len();
        while cut < stem.len() && !stem.is_char_boundary(cut) {
            cut -= 1;
        }
        stem.truncate(cut);
        ObjectKey(format!("{}{suffix}", stem.trim_end_matches('_')))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ObjectKey {
    type Err = CoreError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ObjectKey::new(s)
    }
}

impl<'de> Deserialize<'de> for ObjectKey {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        ObjectKey::new(s).map_err(serde::de::Error::custom)
    }
}

/// The agent's symbolic state: what it holds and the objects it knows by key.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    pub held_object: Option<ObjectKey>,
    pub inventory: Vec<ObjectKey>,
}

impl State {
    pub fn in_inventory(&self, key: &ObjectKey) -> bool {
        self.inventory.contains(key)
    }

    /// Adds `key` once, keeping first-seen order.
    pub fn add(&mut self, key: ObjectKey) {
        if !self.in_inventory(&key) {
            self.inventory.push(key);
        }
    }

    /// Forgets `key` unless it is held (a held object stays known); whether it went.
    pub fn forget(&mut self, key: &ObjectKey) -> bool {
        if self.held_object.as_ref() == Some(key) || !self.in_inventory(key) {
            return false;
        }
        self.inventory.retain(|k| k != key);
        true
    }

    /// Forgets every object except the one in the gripper (SPEC §1.7 remapping: object
    /// locations are unknown, but the held object is still held).
    pub fn clear_inventory(&mut self) {
        let held = self.held_object.clone();
        self.inventory.retain(|k| Some(k) == held.as_ref());
    }
}

/// What a tool returns besides success: a state, a number or a truth value (SPEC §1.2),
/// or what the building memory recalls (`recall_memory`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", content = "value", rename_all = "snake_case")]
pub enum ToolValue {
    State(State),
    Number(f64),
    Bool(bool),
    Recollection(crate::recall::Recollection),
}

/// Why a tool call failed, in a form code can act on; the text for the model is in
/// [`ToolOutput::feedback_msg`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FailureKind {
    /// The tool does not exist or is not allowed here.
    UnknownTool,
    /// Arguments did not parse or are out of range.
    InvalidArgument,
    /// An object key that is not in the inventory.
    UnknownObject,
    /// A precondition on the state is not met (e.g. already holding something).
    Precondition,
    /// The request is outside the allowed skills or the workspace limits.
    NotAllowed,
    /// Nothing matched in the map, or the map could not be built.
    Perception,
    /// No affordance could be grounded well enough to commit.
    Grounding,
    /// The motion planner found no plan (MoveIt error codes).
    Planning,
    /// The motion or gripper failed while executing.
    Execution,
    /// Navigation failed (Nav2 error codes).
    Navigation,
    /// The verifier judged the step unsuccessful.
    Verification,
    /// The call was cancelled by the user or an e-stop.
    Cancelled,
    /// A fault inside the system (a node did not answer, a bug).
    Internal,
}

/// A machine-readable failure: kind, the source's own code (MoveIt, Nav2, ours), whether a
/// retry may help, and whether the map is stale after it (SPEC §1.7).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Failure {
    pub kind: FailureKind,
    pub code: i32,
    pub retryable: bool,
    pub needs_remap: bool,
}

impl Failure {
    pub fn new(kind: FailureKind) -> Self {
        Self {
            kind,
            code: 0,
            retryable: false,
            needs_remap: false,
        }
    }
    pub fn with_code(mut self, code: i32) -> Self {
        self.code = code;
        self
    }
    pub fn retryable(mut self) -> Self {
        self.retryable = true;
        self
    }
    pub fn needs_remap(mut self) -> Self {
        self.needs_remap = true;
        self
    }
}

/// The result of every tool (SPEC §1.2): success, an explanation for the model, a value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolOutput {
    pub success: bool,
    pub feedback_msg: String,
    pub output: ToolValue,
    /// Present exactly when `success` is false.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure: Option<Failure>,
}

impl ToolOutput {
    pub fn ok(output: ToolValue, feedback_msg: impl Into<String>) -> Self {
        Self {
            success: true,
            feedback_msg: feedback_msg.into(),
            output,
            failure: None,
        }
    }

    /// A failure that still reports the (unchanged) state.
    pub fn fail(state: State, failure: Failure, feedback_msg: impl Into<String>) -> Self {
        Self {
            success: false,
            feedback_msg: feedback_msg.into(),
            output: ToolValue::State(state),
            failure: Some(failure),
        }
    }

    /// The state in the output, if the tool returns one.
    pub fn state(&self) -> Option<&State> {
        match &self.output {
            ToolValue::State(s) => Some(s),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn object_key_validation_names_the_value() {
        assert!(ObjectKey::new("red_mug_0").is_ok());
        for bad in ["", "Red_mug", "0mug", "mug-0", "mug 0", &"a".repeat(65)] {
            let err = ObjectKey::new(bad).unwrap_err();
            assert!(err.to_string().contains(&format!("{bad:?}")), "{err}");
        }
        let e = serde_json::from_str::<ObjectKey>("\"Bad Key\"").unwrap_err();
        assert!(e.to_string().contains("Bad Key"), "{e}");
    }

    #[test]
    fn a_forgotten_key_leaves_the_inventory_unless_held() {
        let k = |s: &str| ObjectKey::new(s).unwrap();
        let mut st = State::default();
        st.add(k("mug_0"));
        st.add(k("bowl_0"));
        st.held_object = Some(k("bowl_0"));
        assert!(st.forget(&k("mug_0")));
        assert!(!st.forget(&k("mug_0")), "already gone");
        assert!(!st.forget(&k("bowl_0")), "held");
        assert_eq!(st.inventory, vec![k("bowl_0")]);
    }

    #[test]
    fn object_key_from_query() {
        assert_eq!(ObjectKey::from_query("Red mug!", 0).as_str(), "red_mug_0");
        assert_eq!(
            ObjectKey::from_query("  the  egg near the tomato ", 12).as_str(),
            "the_egg_near_the_tomato_12"
        );
        assert_eq!(
            ObjectKey::from_query("3 cups", 1).as_str(),
            "object_3_cups_1"
        );
        assert_eq!(ObjectKey::from_query("", 1).as_str(), "object_1");
        let long = ObjectKey::from_query(&"word ".repeat(40), 123);
        assert!(long.as_str().len() <= ObjectKey::MAX_LEN);
        assert!(long.as_str().ends_with("_123"));
        assert!(ObjectKey::new(long.as_str()).is_ok());
    }

    #[test]
    fn inventory_is_a_set_and_remap_keeps_the_held_object() {
        let mut s = State::default();
        let mug = ObjectKey::new("mug_0").unwrap();
        let bowl = ObjectKey::new("bowl_0").unwrap();
        s.add(mug.clone());
        s.add(bowl.clone());
        s.add(mug.clone());
        assert_eq!(s.inventory, vec![mug.clone(), bowl.clone()]);
        s.held_object = Some(mug.clone());
        s.clear_inventory();
        assert_eq!(s.inventory, vec![mug]);
    }

    #[test]
    fn tool_output_serialises_with_tagged_value() {
        let out = ToolOutput::ok(ToolValue::Number(0.5), "0.50 m");
        let json = serde_json::to_value(&out).unwrap();
        assert_eq!(json["output"]["type"], "number");
        assert!(json.get("failure").is_none());
        let fail = ToolOutput::fail(
            State::default(),
            Failure::new(FailureKind::Planning)
                .with_code(-31)
                .retryable(),
            "no IK",
        );
        let back: ToolOutput =
            serde_json::from_value(serde_json::to_value(&fail).unwrap()).unwrap();
        assert_eq!(back, fail);
        assert_eq!(back.failure.unwrap().code, -31);
    }
}
