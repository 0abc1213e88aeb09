//! `agent_node`: the LLM client (issue: OpenAI-compatible chat), the agent loop (SPEC
//! §1.2–1.3, §1.7) and the planner (§4.1).

use garde::Validate;
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate, Default)]
#[serde(default, deny_unknown_fields)]
pub struct AgentConfig {
    #[garde(dive)]
    pub llm: LlmConfig,
    #[garde(dive)]
    pub limits: AgentLimits,
    #[garde(dive)]
    pub planner: PlannerConfig,
}

/// Which agent drives the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmBackend {
    /// Rule-based planning over the same tools; needs no model server.
    Offline,
    /// Any OpenAI-compatible chat-completions server (OpenAI, Gemini's compatible
    /// endpoint, vLLM, Ollama, llama.cpp).
    Openai,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct LlmConfig {
    /// Default `offline`.
    #[garde(skip)]
    pub backend: LlmBackend,
    /// Base URL up to and including `/v1`. Default `https://api.openai.com/v1`.
    #[garde(url)]
    pub base_url: String,
    /// Default `gpt-4o`.
    #[garde(length(min = 1))]
    pub model: String,
    /// Name of the environment variable holding the API key (the key itself never goes
    /// into a file or a log). Default `OPENAI_API_KEY`; empty for servers without keys.
    #[garde(skip)]
    pub api_key_env: String,
    /// Per-request timeout, seconds. Default 60.
    #[garde(range(min = 0.1, max = 3600.0))]
    pub timeout_s: f64,
    /// Retries on 429, 5xx and timeouts. Default 3.
    #[garde(range(max = 20))]
    pub max_retries: u32,
    /// First backoff, seconds; doubles per retry. Default 0.5.
    #[garde(range(min = 0.0, max = 60.0))]
    pub backoff_initial_s: f64,
    /// Backoff ceiling, seconds. Default 8.
    #[garde(range(min = 0.0, max = 600.0))]
    pub backoff_max_s: f64,
    /// Default 0.
    #[garde(range(min = 0.0, max = 2.0))]
    pub temperature: f64,
    /// Price per million prompt tokens, USD, for cost accounting. Default 2.5.
    #[garde(range(min = 0.0))]
    pub usd_per_million_prompt_tokens: f64,
    /// Price per million completion tokens, USD. Default 10.
    #[garde(range(min = 0.0))]
    pub usd_per_million_completion_tokens: f64,
}

impl Default for LlmConfig {
    fn default() -> Self {
        Self {
            backend: LlmBackend::Offline,
            base_url: "https://api.openai.com/v1".into(),
            model: "gpt-4o".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout_s: 60.0,
            max_retries: 3,
            backoff_initial_s: 0.5,
            backoff_max_s: 8.0,
            temperature: 0.0,
            usd_per_million_prompt_tokens: 2.5,
            usd_per_million_completion_tokens: 10.0,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct AgentLimits {
    /// Tool calls per goal before the goal fails. Default 40.
    #[garde(range(min = 1, max = 1000))]
    pub max_tool_calls: u32,
    /// Retries of a failed tool call (SPEC §1.3). Default 3.
    #[garde(range(max = 10))]
    pub max_retries_per_call: u32,
    /// Times a malformed model answer is repaired or re-asked before the goal fails.
    /// Default 2.
    #[garde(range(max = 10))]
    pub max_malformed_replies: u32,
}

impl Default for AgentLimits {
    fn default() -> Self {
        Self {
            max_tool_calls: 40,
            max_retries_per_call: 3,
            max_malformed_replies: 2,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// Regenerations with a hint before the rule-based fallback (SPEC §4.1). Default 2.
    #[garde(range(max = 10))]
    pub max_regenerations: u32,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        Self {
            max_regenerations: 2,
        }
    }
}
