//! The OpenAI chat-completions wire format: building request bodies and reading response
//! bodies from any compatible server, tolerating their differences.

use serde_json::{Map, Value, json};

use crate::types::{
    ChatRequest, ChatResponse, ContentPart, FinishReason, Message, ResponseFormat, ToolCall,
    ToolChoice, Usage,
};

/// Per-request settings that come from the client's configuration.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct BodySettings<'a> {
    pub model: &'a str,
    /// `None` leaves `temperature` out (models that accept only their default).
    pub temperature: Option<f64>,
    pub max_tokens: Option<u32>,
    /// Send the limit as `max_completion_tokens` (OpenAI's reasoning models).
    pub max_completion_tokens: bool,
    pub strict_tools: bool,
}

/// The JSON body of a chat-completions request.
pub(crate) fn request_body(req: &ChatRequest, s: &BodySettings<'_>) -> Value {
    let mut body = Map::new();
    body.insert(
        "model".into(),
        json!(req.model.as_deref().unwrap_or(s.model)),
    );
    body.insert(
        "messages".into(),
        Value::Array(req.messages.iter().map(message_json).collect()),
    );
    if let Some(t) = s.temperature {
        body.insert("temperature".into(), json!(t));
    }
    if let Some(m) = s.max_tokens {
        let key = if s.max_completion_tokens {
            "max_completion_tokens"
        } else {
            "max_tokens"
        };
        body.insert(key.into(), json!(m));
    }
    if !req.tools.is_empty() {
        let tools = req
            .tools
            .iter()
            .map(|t| {
                let mut f = json!({
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                });
                if s.strict_tools {
                    f["strict"] = json!(true);
                }
                json!({"type": "function", "function": f})
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
    }
    if let Some(choice) = &req.tool_choice {
        let v = match choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Function(name) => {
                json!({"type": "function", "function": {"name": name}})
            }
        };
        body.insert("tool_choice".into(), v);
    }
    if let Some(rf) = &req.response_format {
        let v = match rf {
            ResponseFormat::JsonObject => json!({"type": "json_object"}),
            ResponseFormat::JsonSchema { name, schema } => json!({
                "type": "json_schema",
                "json_schema": {"name": name, "schema": schema, "strict": true},
            }),
        };
        body.insert("response_format".into(), v);
    }
    Value::Object(body)
}

fn message_json(m: &Message) -> Value {
    match m {
        Message::System { content } => json!({"role": "system", "content": content}),
        Message::User { content } => {
            // plain string content when there are no images: every server accepts it
            if let [ContentPart::Text(t)] = content.as_slice() {
                return json!({"role": "user", "content": t});
            }
            let parts: Vec<Value> = content
                .iter()
                .map(|p| match p {
                    ContentPart::Text(t) => json!({"type": "text", "text": t}),
                    ContentPart::ImageUrl(u) => {
                        json!({"type": "image_url", "image_url": {"url": u}})
                    }
                })
                .collect();
            json!({"role": "user", "content": parts})
        }
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut v = json!({"role": "assistant", "content": content});
            if !tool_calls.is_empty() {
                v["tool_calls"] = tool_calls
                    .iter()
                    .map(|c| {
                        json!({
                            "id": c.id,
                            "type": "function",
                            "function": {"name": c.name, "arguments": c.arguments},
                        })
                    })
                    .collect();
            }
            v
        }
        Message::Tool {
            tool_call_id,
            content,
        } => json!({"role": "tool", "tool_call_id": tool_call_id, "content": content}),
    }
}

/// Why a response body is not a usable completion.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParseProblem {
    /// Not JSON at all.
    NotJson(String),
    /// JSON with an `error` object (some servers answer errors with status 200).
    ErrorObject(String),
    /// JSON, but not a chat completion.
    Shape(String),
}

/// Reads a chat-completions response body, tolerating: `usage` missing; `content` null,
/// missing or an array of text parts; `tool_calls` with string, object or null
/// `arguments` and missing ids; the legacy `function_call`; unknown fields anywhere;
/// `finish_reason` spellings of different servers.
pub(crate) fn parse_response(body: &str) -> Result<ChatResponse, ParseProblem> {
    let v: Value = serde_json::from_str(body).map_err(|e| ParseProblem::NotJson(e.to_string()))?;
    if let Some(err) = v.get("error").filter(|e| !e.is_null()) {
        return Err(ParseProblem::ErrorObject(error_message(err)));
    }
    let choice = v
        .get("choices")
        .and_then(Value::as_array)
        .and_then(|c| c.first())
        .ok_or_else(|| ParseProblem::Shape("no `choices[0]`".into()))?;
    let message = choice
        .get("message")
        .filter(|m| m.is_object())
        .ok_or_else(|| ParseProblem::Shape("`choices[0].message` is not an object".into()))?;

    let content = match message.get("content") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Array(parts)) => {
            let text: Vec<&str> = parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect();
            (!text.is_empty()).then(|| text.join(""))
        }
        Some(other) => {
            return Err(ParseProblem::Shape(format!(
                "`message.content` is {}",
                kind(other)
            )));
        }
    };

    let mut tool_calls = Vec::new();
    if let Some(calls) = message.get("tool_calls").filter(|c| !c.is_null()) {
        let calls = calls
            .as_array()
            .ok_or_else(|| ParseProblem::Shape("`message.tool_calls` is not an array".into()))?;
        for (i, c) in calls.iter().enumerate() {
            let f = c.get("function").unwrap_or(c);
            let name = f.get("name").and_then(Value::as_str).ok_or_else(|| {
                ParseProblem::Shape(format!("tool_calls[{i}] has no function name"))
            })?;
            let id = c
                .get("id")
                .and_then(Value::as_str)
                .filter(|s| !s.is_empty())
                .map_or_else(|| format!("call_{i}"), str::to_owned);
            tool_calls.push(ToolCall {
                id,
                name: name.to_owned(),
                arguments: arguments_text(f.get("arguments")),
            });
        }
    } else if let Some(fc) = message.get("function_call").filter(|c| c.is_object())
        && let Some(name) = fc.get("name").and_then(Value::as_str)
    {
        tool_calls.push(ToolCall {
            id: "call_0".into(),
            name: name.to_owned(),
            arguments: arguments_text(fc.get("arguments")),
        });
    }

    let usage = v.get("usage").filter(|u| u.is_object()).and_then(|u| {
        let n = |keys: &[&str]| keys.iter().find_map(|k| u.get(*k).and_then(Value::as_u64));
        let prompt = n(&["prompt_tokens", "input_tokens"]);
        let completion = n(&["completion_tokens", "output_tokens"]);
        (prompt.is_some() || completion.is_some()).then(|| Usage {
            prompt_tokens: prompt.unwrap_or(0),
            completion_tokens: completion.unwrap_or(0),
        })
    });

    Ok(ChatResponse {
        content,
        tool_calls,
        finish_reason: FinishReason::parse(choice.get("finish_reason").and_then(Value::as_str)),
        usage,
        model: v.get("model").and_then(Value::as_str).map(str::to_owned),
        attempts: 1,
        http_time: std::time::Duration::ZERO,
    })
}

fn arguments_text(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "{}".into(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => other.to_string(),
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The message of an OpenAI-style `{"error": {...}}` (or a bare string error).
pub(crate) fn error_message(err: &Value) -> String {
    match err {
        Value::String(s) => s.clone(),
        Value::Object(o) => o
            .get("message")
            .and_then(Value::as_str)
            .map_or_else(|| err.to_string(), str::to_owned),
        other => other.to_string(),
    }
}

/// The error message in an error response body, or the start of the body.
pub(crate) fn error_body_message(body: &str) -> String {
    match serde_json::from_str::<Value>(body) {
        Ok(v) => match v.get("error") {
            Some(e) => error_message(e),
            None => v
                .get("message")
                .or_else(|| v.get("detail"))
                .and_then(Value::as_str)
                .map_or_else(|| excerpt(body), str::to_owned),
        },
        Err(_) => excerpt(body),
    }
}

/// The first 200 characters of `s`, on one line.
pub(crate) fn excerpt(s: &str) -> String {
    let one_line: String = s
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let t = one_line.trim();
    if t.chars().count() > 200 {
        format!("{}…", t.chars().take(200).collect::<String>())
    } else if t.is_empty() {
        "(empty body)".into()
    } else {
        t.to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolSpec;

    #[test]
    fn request_body_shape() {
        let req = ChatRequest {
            messages: vec![
                Message::system("sys"),
                Message::user("hi"),
                Message::user_with_images("look", ["data:image/png;base64,AAA".to_owned()]),
                Message::Assistant {
                    content: None,
                    tool_calls: vec![ToolCall {
                        id: "c1".into(),
                        name: "grasp".into(),
                        arguments: "{\"obj\":\"mug_0\"}".into(),
                    }],
                },
                Message::tool_result("c1", "ok"),
            ],
            tools: vec![ToolSpec {
                name: "grasp".into(),
                description: "d".into(),
                parameters: json!({"type": "object"}),
            }],
            tool_choice: Some(ToolChoice::Function("grasp".into())),
            response_format: Some(ResponseFormat::JsonSchema {
                name: "a".into(),
                schema: json!({"type": "object"}),
            }),
            model: None,
        };
        let b = request_body(
            &req,
            &BodySettings {
                model: "m",
                temperature: Some(0.0),
                max_tokens: Some(100),
                max_completion_tokens: false,
                strict_tools: true,
            },
        );
        assert_eq!(b["model"], "m");
        assert_eq!(b["max_tokens"], 100);
        assert_eq!(b["messages"][1]["content"], "hi");
        assert_eq!(b["messages"][2]["content"][1]["type"], "image_url");
        assert_eq!(b["messages"][3]["content"], Value::Null);
        assert_eq!(
            b["messages"][3]["tool_calls"][0]["function"]["arguments"],
            "{\"obj\":\"mug_0\"}"
        );
        assert_eq!(b["messages"][4]["tool_call_id"], "c1");
        assert_eq!(b["tools"][0]["function"]["strict"], true);
        assert_eq!(b["tool_choice"]["function"]["name"], "grasp");
        assert_eq!(b["response_format"]["json_schema"]["strict"], true);
    }

    #[test]
    fn tolerant_parsing() {
        // object arguments, no id, no usage, content null, unknown fields, eos
        let body = r#"{"choices":[{"message":{"role":"assistant","content":null,"extra":1,
            "tool_calls":[{"function":{"name":"grasp","arguments":{"obj":"mug_0"}}}]},
            "finish_reason":"eos"}],"x":{"y":2}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.content, None);
        assert_eq!(r.tool_calls[0].id, "call_0");
        assert_eq!(r.tool_calls[0].arguments, r#"{"obj":"mug_0"}"#);
        assert_eq!(r.usage, None);
        assert_eq!(r.finish_reason, FinishReason::Stop);

        // array content, legacy function_call, input/output token names
        let body = r#"{"model":"x","choices":[{"message":{"content":[{"type":"text","text":"a"},{"type":"text","text":"b"}],
            "function_call":{"name":"size_of","arguments":null}}}],"usage":{"input_tokens":5,"output_tokens":7}}"#;
        let r = parse_response(body).unwrap();
        assert_eq!(r.content.as_deref(), Some("ab"));
        assert_eq!(r.tool_calls[0].name, "size_of");
        assert_eq!(r.tool_calls[0].arguments, "{}");
        assert_eq!(
            r.usage,
            Some(Usage {
                prompt_tokens: 5,
                completion_tokens: 7
            })
        );
        assert_eq!(r.model.as_deref(), Some("x"));
    }

    #[test]
    fn unusable_bodies_say_why() {
        assert!(matches!(
            parse_response("<html>"),
            Err(ParseProblem::NotJson(_))
        ));
        assert_eq!(
            parse_response(r#"{"error":{"message":"overloaded"}}"#),
            Err(ParseProblem::ErrorObject("overloaded".into()))
        );
        assert!(matches!(
            parse_response(r#"{"choices":[]}"#),
            Err(ParseProblem::Shape(m)) if m.contains("choices[0]")
        ));
        assert!(matches!(
            parse_response(r#"{"choices":[{"message":{"content":5}}]}"#),
            Err(ParseProblem::Shape(m)) if m.contains("a number")
        ));
        assert_eq!(
            error_body_message(r#"{"error":{"message":"bad key"}}"#),
            "bad key"
        );
        assert_eq!(error_body_message(""), "(empty body)");
        assert!(excerpt(&"x".repeat(500)).ends_with('…'));
    }
}
