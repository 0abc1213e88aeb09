//! A scripted OpenAI-compatible chat-completions server on 127.0.0.1.
//!
//! Tests (and benchmarks, and end-to-end runs without a model) start a real HTTP server
//! that replays a conversation: each [`Step`] may check the incoming request (messages,
//! tools offered, tool results, images, response format) and then answers with a
//! [`Reply`]: a tool call, text, malformed JSON, garbage, an HTTP error with
//! `Retry-After`, or any of these after a delay. When the steps run out, an optional
//! [`Responder`] answers instead (a policy computed from the request); without one the
//! server answers `400` and records the unexpected request.
//!
//! The server speaks the wire format, not our client's types, so the client under test is
//! exercised exactly as a real server would exercise it, including the differences
//! between servers (usage missing, arguments as an object instead of a string, `content`
//! null, extra fields, other `finish_reason` values).
//!
//! ```no_run
//! # async fn demo() -> std::io::Result<()> {
//! use asp_llm_testkit::{Reply, ScriptedServer, Step};
//! use serde_json::json;
//! let server = ScriptedServer::start(vec![
//!     Step::reply(Reply::tool_call("object_retrieval", json!({"query": "mug"})))
//!         .expect_tool_offered("object_retrieval"),
//!     Step::reply(Reply::text("done")).expect_last_tool_result_contains("mug_0"),
//! ])
//! .await?;
//! let base_url = server.base_url(); // http://127.0.0.1:PORT/v1
//! # let _ = base_url;
//! server.verify().expect("every step consumed, every check passed");
//! # Ok(()) }
//! ```

use std::collections::VecDeque;
use std::fmt;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use axum::Router;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

/// A check on an incoming request: `Err(why)` fails the step.
pub type Check = Arc<dyn Fn(&RequestView<'_>) -> Result<(), String> + Send + Sync>;

/// Answers requests once the scripted steps are used up (for long or open-ended runs).
pub type Responder = Arc<dyn Fn(&RequestView<'_>) -> Reply + Send + Sync>;

/// One exchange of the script: checks on the request, then the reply.
#[derive(Clone)]
pub struct Step {
    checks: Vec<(String, Check)>,
    reply: Reply,
}

impl fmt::Debug for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Step")
            .field(
                "checks",
                &self.checks.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("reply", &self.reply)
            .finish()
    }
}

impl Step {
    /// A step that answers `reply` to whatever it receives.
    pub fn reply(reply: Reply) -> Self {
        Self {
            checks: Vec::new(),
            reply,
        }
    }

    /// Adds a named check on the request.
    pub fn expect(
        mut self,
        name: impl Into<String>,
        check: impl Fn(&RequestView<'_>) -> Result<(), String> + Send + Sync + 'static,
    ) -> Self {
        self.checks.push((name.into(), Arc::new(check)));
        self
    }

    /// The request offers a tool of this name.
    pub fn expect_tool_offered(self, name: &str) -> Self {
        let name = name.to_owned();
        self.expect(format!("tool `{name}` offered"), move |r| {
            let offered = r.tool_names();
            if offered.iter().any(|t| t == &name) {
                Ok(())
            } else {
                Err(format!("tools offered: {offered:?}"))
            }
        })
    }

    /// The newest `tool` message contains `text`.
    pub fn expect_last_tool_result_contains(self, text: &str) -> Self {
        let text = text.to_owned();
        self.expect(
            format!("last tool result contains {text:?}"),
            move |r| match r.last_tool_result() {
                Some(c) if c.contains(&text) => Ok(()),
                Some(c) => Err(format!("last tool result was {c}")),
                None => Err("no tool result in the request".into()),
            },
        )
    }

    /// Some message of the request contains `text` (in its text content).
    pub fn expect_message_contains(self, text: &str) -> Self {
        let text = text.to_owned();
        self.expect(format!("a message contains {text:?}"), move |r| {
            if r.message_texts().iter().any(|m| m.contains(&text)) {
                Ok(())
            } else {
                Err(format!("no message contains {text:?}"))
            }
        })
    }

    /// The request carries `n` images.
    pub fn expect_images(self, n: usize) -> Self {
        self.expect(format!("{n} images"), move |r| {
            let got = r.image_urls().len();
            if got == n {
                Ok(())
            } else {
                Err(format!("{got} images"))
            }
        })
    }
}

/// A tool call in a scripted reply.
#[derive(Debug, Clone, PartialEq)]
pub struct ScriptedCall {
    /// `None` leaves the `id` out (some servers do).
    pub id: Option<String>,
    pub name: String,
    pub arguments: Arguments,
}

/// How a scripted tool call's arguments go on the wire.
#[derive(Debug, Clone, PartialEq)]
pub enum Arguments {
    /// A JSON value serialised into a string (OpenAI, vLLM, llama.cpp).
    Json(Value),
    /// A JSON value sent as an object (some Ollama and proxy versions).
    Object(Value),
    /// Text sent as-is as the arguments string: malformed JSON, prose, anything.
    Raw(String),
}

/// A chat completion to send back.
#[derive(Debug, Clone, PartialEq)]
pub struct Completion {
    /// `None` sends `"content": null`.
    pub content: Option<String>,
    pub tool_calls: Vec<ScriptedCall>,
    /// `None` picks `tool_calls` or `stop`.
    pub finish_reason: Option<String>,
    /// Prompt and completion tokens; `None` leaves `usage` out.
    pub usage: Option<(u64, u64)>,
    /// Fields a server adds that clients must ignore (merged into the top level and
    /// into the message).
    pub extra_fields: bool,
}

impl Completion {
    pub fn without_usage(mut self) -> Self {
        self.usage = None;
        self
    }
    pub fn usage(mut self, prompt: u64, completion: u64) -> Self {
        self.usage = Some((prompt, completion));
        self
    }
    pub fn finish_reason(mut self, reason: &str) -> Self {
        self.finish_reason = Some(reason.to_owned());
        self
    }
    pub fn with_extra_fields(mut self) -> Self {
        self.extra_fields = true;
        self
    }
    pub fn into_reply(self) -> Reply {
        Reply::Completion(self)
    }
}

/// What the server answers.
#[derive(Debug, Clone, PartialEq)]
pub enum Reply {
    /// A well-formed chat completion.
    Completion(Completion),
    /// Any JSON body with status 200 (for shapes [`Completion`] cannot express).
    Json(Value),
    /// Any body with any status and content type (garbage, truncated JSON, HTML).
    Raw {
        status: u16,
        content_type: String,
        body: String,
    },
    /// An OpenAI-style error object, optionally with a `Retry-After` header.
    Error {
        status: u16,
        retry_after: Option<String>,
        message: String,
    },
    /// An error whose message repeats the request's `Authorization` header, as a careless
    /// proxy might: for testing that clients keep keys out of their errors.
    EchoAuthorization { status: u16 },
    /// Wait, then answer (for client timeouts).
    Delay { delay: Duration, then: Box<Reply> },
}

/// Default token counts of scripted completions.
pub const DEFAULT_USAGE: (u64, u64) = (100, 20);

impl Reply {
    /// One tool call with JSON arguments sent as a string.
    pub fn tool_call(name: &str, args: Value) -> Self {
        Self::tool_calls(vec![call(name, args)])
    }

    /// Several tool calls in one reply.
    pub fn tool_calls(calls: Vec<ScriptedCall>) -> Self {
        Completion {
            content: None,
            tool_calls: calls,
            finish_reason: None,
            usage: Some(DEFAULT_USAGE),
            extra_fields: false,
        }
        .into_reply()
    }

    /// A text answer without tool calls.
    pub fn text(text: &str) -> Self {
        Completion {
            content: Some(text.to_owned()),
            tool_calls: Vec::new(),
            finish_reason: None,
            usage: Some(DEFAULT_USAGE),
            extra_fields: false,
        }
        .into_reply()
    }

    /// An HTTP error with an OpenAI-style body.
    pub fn error(status: u16, message: &str) -> Self {
        Self::Error {
            status,
            retry_after: None,
            message: message.to_owned(),
        }
    }

    /// 429 with a `Retry-After` header of `seconds`.
    pub fn rate_limited(seconds: u64) -> Self {
        Self::Error {
            status: 429,
            retry_after: Some(seconds.to_string()),
            message: "Rate limit reached; please retry later".into(),
        }
    }

    /// A 200 response whose body is not JSON at all.
    pub fn garbage(body: &str) -> Self {
        Self::Raw {
            status: 200,
            content_type: "application/json".into(),
            body: body.to_owned(),
        }
    }

    /// This reply after `delay`.
    pub fn delayed(self, delay: Duration) -> Self {
        Self::Delay {
            delay,
            then: Box::new(self),
        }
    }

    /// The completion inside, to adjust (no-op for other replies).
    pub fn map_completion(self, f: impl FnOnce(Completion) -> Completion) -> Self {
        match self {
            Reply::Completion(c) => Reply::Completion(f(c)),
            other => other,
        }
    }
}

/// A tool call whose arguments go out as a JSON string.
pub fn call(name: &str, args: Value) -> ScriptedCall {
    ScriptedCall {
        id: None,
        name: name.to_owned(),
        arguments: Arguments::Json(args),
    }
}

/// A tool call whose arguments string is `raw`, verbatim.
pub fn raw_call(name: &str, raw: &str) -> ScriptedCall {
    ScriptedCall {
        id: None,
        name: name.to_owned(),
        arguments: Arguments::Raw(raw.to_owned()),
    }
}

/// A read-only view of an incoming chat request with helpers for checks.
#[derive(Debug, Clone, Copy)]
pub struct RequestView<'a> {
    pub body: &'a Value,
    /// 0-based index of the request since the server started.
    pub index: usize,
}

impl<'a> RequestView<'a> {
    pub fn messages(&self) -> &'a [Value] {
        self.body["messages"].as_array().map_or(&[], Vec::as_slice)
    }

    pub fn tool_names(&self) -> Vec<String> {
        self.body["tools"]
            .as_array()
            .map(|tools| {
                tools
                    .iter()
                    .filter_map(|t| t["function"]["name"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Text of every message (string content or the text parts of array content).
    pub fn message_texts(&self) -> Vec<String> {
        self.messages().iter().map(content_text).collect()
    }

    /// Content of the newest message with role `tool`.
    pub fn last_tool_result(&self) -> Option<String> {
        self.messages()
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .map(content_text)
    }

    /// Contents of every `tool` message, oldest first.
    pub fn tool_results(&self) -> Vec<String> {
        self.messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .map(content_text)
            .collect()
    }

    /// The newest message, if any.
    pub fn last_message(&self) -> Option<&'a Value> {
        self.messages().last()
    }

    /// Every `image_url.url` in the request.
    pub fn image_urls(&self) -> Vec<String> {
        let mut out = Vec::new();
        for m in self.messages() {
            if let Some(parts) = m["content"].as_array() {
                for p in parts {
                    if let Some(u) = p["image_url"]["url"].as_str() {
                        out.push(u.to_owned());
                    }
                }
            }
        }
        out
    }

    /// The `response_format` object, if one was sent.
    pub fn response_format(&self) -> Option<&'a Value> {
        self.body.get("response_format")
    }
}

fn content_text(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        _ => String::new(),
    }
}

/// A request the server received.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedRequest {
    /// The URL path, e.g. `/v1/chat/completions`.
    pub path: String,
    /// The `Authorization` header, if any.
    pub authorization: Option<String>,
    /// The parsed body (`Value::Null` when it was not JSON).
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    steps: Mutex<VecDeque<Step>>,
    responder: Mutex<Option<Responder>>,
    log: Mutex<Vec<RecordedRequest>>,
    failures: Mutex<Vec<String>>,
    consumed: Mutex<usize>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // a panicking check cannot leave these in a broken state: recover the data
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The running server; it stops when dropped.
pub struct ScriptedServer {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl fmt::Debug for ScriptedServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedServer")
            .field("addr", &self.addr)
            .field("remaining_steps", &self.remaining_steps())
            .finish()
    }
}

impl ScriptedServer {
    /// Binds 127.0.0.1 on a free port and serves `steps` in order.
    pub async fn start(steps: impl IntoIterator<Item = Step>) -> std::io::Result<Self> {
        Self::start_with(steps, None).await
    }

    /// Serves `steps`, then answers every further request with `responder`.
    pub async fn start_with(
        steps: impl IntoIterator<Item = Step>,
        responder: Option<Responder>,
    ) -> std::io::Result<Self> {
        let shared = Arc::new(Shared::default());
        lock(&shared.steps).extend(steps);
        *lock(&shared.responder) = responder;
        let listener = tokio::net::TcpListener::bind(("127.0.0.1", 0)).await?;
        let addr = listener.local_addr()?;
        let app = Router::new()
            .fallback(handle)
            .with_state(Arc::clone(&shared));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    /// `http://127.0.0.1:PORT/v1`, the base URL clients are configured with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Appends steps to the script.
    pub fn push(&self, step: Step) {
        lock(&self.shared.steps).push_back(step);
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log).clone()
    }

    /// Steps not yet used.
    pub fn remaining_steps(&self) -> usize {
        lock(&self.shared.steps).len()
    }

    /// Steps used so far.
    pub fn consumed_steps(&self) -> usize {
        *lock(&self.shared.consumed)
    }

    /// Failed checks and unexpected requests, in order.
    pub fn failures(&self) -> Vec<String> {
        lock(&self.shared.failures).clone()
    }

    /// Ok when every step was used and every check passed.
    pub fn verify(&self) -> Result<(), String> {
        let failures = self.failures();
        let remaining = self.remaining_steps();
        if failures.is_empty() && remaining == 0 {
            Ok(())
        } else {
            Err(format!(
                "scripted server: {} failure(s): {failures:?}; {remaining} step(s) unused",
                failures.len()
            ))
        }
    }
}

impl Drop for ScriptedServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let path = uri.path().to_owned();
    let authorization = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    if path.ends_with("/models") {
        return json_response(
            StatusCode::OK,
            &json!({"object": "list", "data": [{"id": "scripted", "object": "model"}]}),
        );
    }
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let index = {
        let mut log = lock(&shared.log);
        log.push(RecordedRequest {
            path: path.clone(),
            authorization: authorization.clone(),
            body: parsed.clone(),
        });
        log.len() - 1
    };
    if !path.ends_with("/chat/completions") {
        let msg = format!("scripted server: unexpected path {path} (request {index})");
        lock(&shared.failures).push(msg.clone());
        return error_response(404, None, &msg);
    }
    let view = RequestView {
        body: &parsed,
        index,
    };
    let step = lock(&shared.steps).pop_front();
    let reply = match step {
        Some(step) => {
            *lock(&shared.consumed) += 1;
            let mut failed = Vec::new();
            for (name, check) in &step.checks {
                if let Err(why) = check(&view) {
                    failed.push(format!("{name}: {why}"));
                }
            }
            if !failed.is_empty() {
                let msg = format!(
                    "scripted server: request {index} failed its checks: {}",
                    failed.join("; ")
                );
                lock(&shared.failures).push(msg.clone());
                return error_response(400, None, &msg);
            }
            step.reply
        }
        None => {
            let responder = lock(&shared.responder).clone();
            match responder {
                Some(r) => r(&view),
                None => {
                    let msg = format!("scripted server: no step left for request {index}");
                    lock(&shared.failures).push(msg.clone());
                    return error_response(400, None, &msg);
                }
            }
        }
    };
    render(reply, &parsed, authorization.as_deref(), index).await
}

async fn render(mut reply: Reply, request: &Value, auth: Option<&str>, index: usize) -> Response {
    loop {
        match reply {
            Reply::Delay { delay, then } => {
                tokio::time::sleep(delay).await;
                reply = *then;
            }
            Reply::Completion(c) => {
                return json_response(StatusCode::OK, &completion_body(&c, request, index));
            }
            Reply::Json(v) => return json_response(StatusCode::OK, &v),
            Reply::Raw {
                status,
                content_type,
                body,
            } => {
                let mut resp = (status_code(status), body).into_response();
                if let Ok(v) = HeaderValue::from_str(&content_type) {
                    resp.headers_mut().insert(header::CONTENT_TYPE, v);
                }
                return resp;
            }
            Reply::Error {
                status,
                retry_after,
                message,
            } => return error_response(status, retry_after.as_deref(), &message),
            Reply::EchoAuthorization { status } => {
                let msg = format!(
                    "Incorrect API key provided in header: {}",
                    auth.unwrap_or("(none)")
                );
                return error_response(status, None, &msg);
            }
        }
    }
}

fn status_code(status: u16) -> StatusCode {
    StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR)
}

fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut resp = (status, body.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

fn error_response(status: u16, retry_after: Option<&str>, message: &str) -> Response {
    let body = json!({"error": {"message": message, "type": "scripted_error", "code": status}});
    let mut resp = json_response(status_code(status), &body);
    if let Some(v) = retry_after.and_then(|r| HeaderValue::from_str(r).ok()) {
        resp.headers_mut().insert(header::RETRY_AFTER, v);
    }
    resp
}

/// The OpenAI wire form of a scripted completion.
fn completion_body(c: &Completion, request: &Value, index: usize) -> Value {
    let tool_calls: Vec<Value> = c
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, tc)| {
            let arguments = match &tc.arguments {
                Arguments::Json(v) => Value::String(v.to_string()),
                Arguments::Object(v) => v.clone(),
                Arguments::Raw(s) => Value::String(s.clone()),
            };
            let mut v = json!({
                "type": "function",
                "function": {"name": tc.name, "arguments": arguments},
            });
            match &tc.id {
                Some(id) => v["id"] = json!(id),
                None => v["id"] = json!(format!("call_{index}_{i}")),
            }
            v
        })
        .collect();
    let mut message = json!({"role": "assistant", "content": c.content});
    if !tool_calls.is_empty() {
        message["tool_calls"] = Value::Array(tool_calls);
    }
    let finish = c.finish_reason.clone().unwrap_or_else(|| {
        if c.tool_calls.is_empty() {
            "stop".into()
        } else {
            "tool_calls".into()
        }
    });
    let mut body = json!({
        "id": format!("chatcmpl-scripted-{index}"),
        "object": "chat.completion",
        "created": 0,
        "model": request["model"].as_str().unwrap_or("scripted"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": null}],
    });
    if let Some((p, k)) = c.usage {
        body["usage"] = json!({"prompt_tokens": p, "completion_tokens": k, "total_tokens": p + k});
    }
    if c.extra_fields {
        body["system_fingerprint"] = json!("fp_scripted");
        body["x_groq"] = json!({"id": "req_1"});
        body["choices"][0]["message"]["refusal"] = Value::Null;
        body["choices"][0]["message"]["reasoning_content"] = json!("thinking…");
        body["choices"][0]["stop_reason"] = json!(null);
    }
    body
}
