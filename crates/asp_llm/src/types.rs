//! Chat-completions values as our code sees them, independent of any server's quirks.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A message of the conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        content: String,
    },
    User {
        content: Vec<ContentPart>,
    },
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    Tool {
        tool_call_id: String,
        content: String,
    },
}

impl Message {
    pub fn system(text: impl Into<String>) -> Self {
        Message::System {
            content: text.into(),
        }
    }

    pub fn user(text: impl Into<String>) -> Self {
        Message::User {
            content: vec![ContentPart::Text(text.into())],
        }
    }

    /// A user message with text and images (data URLs or https URLs).
    pub fn user_with_images(
        text: impl Into<String>,
        image_urls: impl IntoIterator<Item = String>,
    ) -> Self {
        let mut content = vec![ContentPart::Text(text.into())];
        content.extend(image_urls.into_iter().map(ContentPart::ImageUrl));
        Message::User { content }
    }

    pub fn tool_result(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Message::Tool {
            tool_call_id: tool_call_id.into(),
            content: content.into(),
        }
    }
}

/// A part of a user message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContentPart {
    Text(String),
    /// `data:image/png;base64,…` or an http(s) URL.
    ImageUrl(String),
}

/// A function the model may call: name, description, JSON schema of the arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    pub parameters: Value,
}

/// A tool call the model made. `arguments` is the raw JSON text as the server sent it
/// (servers that send an object have it serialised here), so that callers decide how to
/// parse and repair it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// How the model wants its answer constrained.
#[derive(Debug, Clone, PartialEq)]
pub enum ResponseFormat {
    /// `{"type": "json_object"}`.
    JsonObject,
    /// `{"type": "json_schema", "json_schema": {"name", "schema", "strict": true}}`.
    JsonSchema { name: String, schema: Value },
}

/// `tool_choice`.
#[derive(Debug, Clone, PartialEq)]
pub enum ToolChoice {
    Auto,
    None,
    Required,
    /// Force this function.
    Function(String),
}

/// One chat-completions request.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ChatRequest {
    pub messages: Vec<Message>,
    pub tools: Vec<ToolSpec>,
    /// `None` leaves `tool_choice` out (the server's default, `auto` with tools).
    pub tool_choice: Option<ToolChoice>,
    pub response_format: Option<ResponseFormat>,
    /// Overrides the client's model for this request.
    pub model: Option<String>,
}

/// Why the model stopped.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FinishReason {
    Stop,
    ToolCalls,
    /// Cut off by `max_tokens` or the context length: the answer is incomplete.
    Length,
    ContentFilter,
    /// The server did not say.
    Unknown,
    /// A value we do not know, kept as sent.
    Other(String),
}

impl FinishReason {
    /// Maps the spellings of the servers we know.
    pub fn parse(raw: Option<&str>) -> Self {
        match raw {
            None | Some("") => FinishReason::Unknown,
            Some("stop" | "eos" | "end_turn" | "stop_sequence" | "STOP") => FinishReason::Stop,
            Some("tool_calls" | "function_call" | "tool_use") => FinishReason::ToolCalls,
            Some("length" | "max_tokens" | "MAX_TOKENS" | "model_length") => FinishReason::Length,
            Some("content_filter" | "safety" | "SAFETY" | "recitation") => {
                FinishReason::ContentFilter
            }
            Some(other) => FinishReason::Other(other.to_owned()),
        }
    }
}

/// Token counts of one response.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct Usage {
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
}

/// The answer to a [`ChatRequest`], normalised.
#[derive(Debug, Clone, PartialEq)]
pub struct ChatResponse {
    /// Text content; `None` when the server sent null or nothing.
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub finish_reason: FinishReason,
    /// `None` when the server sent no usage (some local servers).
    pub usage: Option<Usage>,
    /// The model that answered, as the server reports it.
    pub model: Option<String>,
    /// Requests sent for this answer (1 + retries).
    pub attempts: u32,
    /// Time spent on the network and in the server (sending, waiting, receiving the
    /// body), summed over attempts; excludes building and parsing JSON and backoff waits.
    pub http_time: std::time::Duration,
}

impl ChatResponse {
    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Message {
        Message::Assistant {
            content: self.content.clone(),
            tool_calls: self.tool_calls.clone(),
        }
    }
}

/// Prices for cost accounting, USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct Pricing {
    pub usd_per_million_prompt_tokens: f64,
    pub usd_per_million_completion_tokens: f64,
}

impl Pricing {
    pub fn cost_usd(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.usd_per_million_prompt_tokens
            + usage.completion_tokens as f64 * self.usd_per_million_completion_tokens)
            / 1e6
    }
}

/// Running totals of model use (per goal, per client).
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
pub struct UsageTotals {
    /// Answers received.
    pub requests: u64,
    /// Answers without a `usage` object: their tokens are not counted, so token and cost
    /// figures are a lower bound when this is not zero.
    pub requests_without_usage: u64,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub cost_usd: f64,
}

impl UsageTotals {
    /// Counts one answer.
    pub fn record(&mut self, usage: Option<Usage>, pricing: &Pricing) {
        self.requests += 1;
        match usage {
            Some(u) => {
                self.prompt_tokens += u.prompt_tokens;
                self.completion_tokens += u.completion_tokens;
                self.cost_usd += pricing.cost_usd(u);
            }
            None => self.requests_without_usage += 1,
        }
    }

    /// Adds another set of totals.
    pub fn merge(&mut self, other: &UsageTotals) {
        self.requests += other.requests;
        self.requests_without_usage += other.requests_without_usage;
        self.prompt_tokens += other.prompt_tokens;
        self.completion_tokens += other.completion_tokens;
        self.cost_usd += other.cost_usd;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finish_reasons_of_different_servers() {
        assert_eq!(FinishReason::parse(Some("stop")), FinishReason::Stop);
        assert_eq!(FinishReason::parse(Some("eos")), FinishReason::Stop);
        assert_eq!(
            FinishReason::parse(Some("function_call")),
            FinishReason::ToolCalls
        );
        assert_eq!(FinishReason::parse(Some("length")), FinishReason::Length);
        assert_eq!(FinishReason::parse(None), FinishReason::Unknown);
        assert_eq!(
            FinishReason::parse(Some("weird")),
            FinishReason::Other("weird".into())
        );
    }

    #[test]
    fn cost_and_totals() {
        let p = Pricing {
            usd_per_million_prompt_tokens: 2.5,
            usd_per_million_completion_tokens: 10.0,
        };
        let mut t = UsageTotals::default();
        t.record(
            Some(Usage {
                prompt_tokens: 1_000_000,
                completion_tokens: 100_000,
            }),
            &p,
        );
        t.record(None, &p);
        assert_eq!(t.requests, 2);
        assert_eq!(t.requests_without_usage, 1);
        assert!((t.cost_usd - 3.5).abs() < 1e-9, "{}", t.cost_usd);
        let mut sum = UsageTotals::default();
        sum.merge(&t);
        sum.merge(&t);
        assert_eq!(sum.prompt_tokens, 2_000_000);
        assert!((sum.cost_usd - 7.0).abs() < 1e-9);
    }
}
