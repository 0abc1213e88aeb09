//! An OpenAI-compatible chat-completions client for ASP, serving OpenAI, Gemini's
//! OpenAI-compatible endpoint, vLLM, Ollama and llama.cpp alike.
//!
//! - [`LlmClient`]: tool calling and image inputs over `reqwest` + rustls; base URL,
//!   model and timeouts from `agent_node.llm`; the key from the environment variable that
//!   configuration *names* (never logged, never in an error or `Debug` output); retries
//!   with exponential backoff on 429/5xx/timeouts/connection errors honouring
//!   `Retry-After`, none on other 4xx; token and cost totals.
//! - [`schema`]: tool and answer JSON schemas generated from Rust types (schemars).
//! - [`repair`]: recovering JSON from model text.
//! - [`vlm::OpenAiVlm`]: `RetrievalVlm`, `AffordanceVlm`, `OutcomeVlm` and `MemoryVlm` over
//!   the client, with strict JSON answers and images as PNG data URLs.
//!
//! Tests run against `asp_llm_testkit`'s scripted server on 127.0.0.1.

pub mod client;
pub mod error;
pub mod image;
pub mod repair;
pub mod schema;
pub mod types;
pub mod vlm;
mod wire;

pub use client::{ApiKey, ClientSettings, LlmClient, parse_retry_after};
pub use error::{LlmError, is_retryable_status};
pub use types::{
    ChatRequest, ChatResponse, ContentPart, FinishReason, Message, Pricing, ResponseFormat,
    ToolCall, ToolChoice, ToolSpec, Usage, UsageTotals,
};
pub use vlm::{OpenAiVlm, VlmSettings};
