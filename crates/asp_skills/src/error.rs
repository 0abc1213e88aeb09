//! Errors constructing an executor (configuration that breaks the safety limits).

/// Why a [`crate::SkillExecutor`] cannot be built; each names the key and the value.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SkillError {
    /// A configured motion setting exceeds a `/**.safety` cap.
    #[error(
        "skill_executor_node.{key} = {value} exceeds the safety cap /**.safety.{cap_key} = {cap}"
    )]
    AboveCap {
        key: &'static str,
        value: f64,
        cap_key: &'static str,
        cap: f64,
    },
    /// A configured value is unusable.
    #[error("skill_executor_node.{key} = {value}: {problem}")]
    Invalid {
        key: &'static str,
        value: String,
        problem: String,
    },
}
