//! Recovering JSON from what models actually write: code fences, prose around the
//! object, `<tool_call>` tags, trailing commas, single quotes, Python literals, unquoted
//! keys, and output cut off before the closing brackets.

use serde_json::Value;

/// How a JSON value was obtained from model text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Recovery {
    /// The text was valid JSON as it stood.
    Verbatim,
    /// The JSON had to be cut out of surrounding text or fences.
    Extracted,
    /// The JSON had to be rewritten (quotes, commas, literals, missing brackets).
    Repaired,
}

/// Parses `text` as JSON, extracting and repairing it if needed. The error is the parse
/// error of the text as it stood.
pub fn parse_lenient(text: &str) -> Result<(Value, Recovery), String> {
    let trimmed = text.trim();
    let first_error = match serde_json::from_str::<Value>(trimmed) {
        Ok(v) => return Ok((v, Recovery::Verbatim)),
        Err(e) => e.to_string(),
    };
    let candidate = extract(trimmed);
    if let Some(Ok(v)) = candidate.map(serde_json::from_str::<Value>) {
        return Ok((v, Recovery::Extracted));
    }
    let source = candidate.unwrap_or_else(|| strip_wrappers(trimmed));
    if source.starts_with(['{', '[']) {
        let fixed = normalise(source);
        if let Ok(v) = serde_json::from_str::<Value>(&fixed) {
            return Ok((v, Recovery::Repaired));
        }
    }
    Err(first_error)
}

/// Parses `text` leniently and requires an object.
pub fn parse_object_lenient(
    text: &str,
) -> Result<(serde_json::Map<String, Value>, Recovery), String> {
    match parse_lenient(text)? {
        (Value::Object(o), r) => Ok((o, r)),
        (other, _) => Err(format!("expected a JSON object, found {other}")),
    }
}

/// Removes code fences and `<tool_call>` tags.
fn strip_wrappers(text: &str) -> &str {
    let mut t = text.trim();
    for (open, close) in [
        ("<tool_call>", "</tool_call>"),
        ("```json", "```"),
        ("```", "```"),
    ] {
        if let Some(rest) = t.strip_prefix(open) {
            t = rest.trim();
            if let Some(inner) = t.strip_suffix(close) {
                t = inner.trim();
            }
        }
    }
    t
}

/// The first balanced `{…}` or `[…]` in `text` (strings respected), or the rest of the
/// text from the first bracket when it never closes.
fn extract(text: &str) -> Option<&str> {
    let start = text.find(['{', '['])?;
    let bytes = text.as_bytes();
    let mut depth: i32 = 0;
    let mut in_str: Option<u8> = None;
    let mut escaped = false;
    for (i, &b) in bytes.iter().enumerate().skip(start) {
        if let Some(q) = in_str {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == q {
                in_str = None;
            }
            continue;
        }
        match b {
            b'"' => in_str = Some(b),
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth -= 1;
                if depth == 0 {
                    return Some(&text[start..=i]);
                }
            }
            _ => {}
        }
    }
    Some(text[start..].trim_end_matches("```").trim_end())
}

/// Rewrites near-JSON into JSON: single-quoted strings, Python literals, unquoted keys,
/// trailing commas, unterminated strings and unclosed brackets.
fn normalise(src: &str) -> String {
    let chars: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len() + 8);
    let mut stack: Vec<char> = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '"' | '\'' => {
                // a string: copy it as a double-quoted string
                let quote = c;
                out.push('"');
                i += 1;
                let mut closed = false;
                while i < chars.len() {
                    let d = chars[i];
                    if d == '\\' && i + 1 < chars.len() {
                        if quote == '\'' && chars[i + 1] == '\'' {
                            out.push('\'');
                        } else {
                            out.push(d);
                            out.push(chars[i + 1]);
                        }
                        i += 2;
                        continue;
                    }
                    if d == quote {
                        closed = true;
                        i += 1;
                        break;
                    }
                    if d == '"' {
                        out.push_str("\\\"");
                    } else if d == '\n' {
                        out.push_str("\\n");
                    } else {
                        out.push(d);
                    }
                    i += 1;
                }
                out.push('"');
                if !closed {
                    break;
                }
                continue;
            }
            '{' => stack.push('}'),
            '[' => stack.push(']'),
            '}' | ']' => {
                strip_trailing_comma(&mut out);
                stack.pop();
            }
            ',' => {
                // a comma directly before a closer is dropped when the closer comes
                let mut j = i + 1;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                if j < chars.len() && (chars[j] == '}' || chars[j] == ']') {
                    i += 1;
                    continue;
                }
            }
            _ if c.is_ascii_alphabetic() || c == '_' => {
                let start = i;
                while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_') {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let mut j = i;
                while j < chars.len() && chars[j].is_whitespace() {
                    j += 1;
                }
                let is_key = j < chars.len() && chars[j] == ':';
                if is_key {
                    out.push('"');
                    out.push_str(&word);
                    out.push('"');
                } else {
                    out.push_str(match word.as_str() {
                        "True" => "true",
                        "False" => "false",
                        "None" => "null",
                        w => w,
                    });
                }
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += 1;
    }
    strip_trailing_comma(&mut out);
    while let Some(closer) = stack.pop() {
        // a dangling `"key":` gets a null value before its object closes
        if out.trim_end().ends_with(':') {
            out.push_str(" null");
        }
        out.push(closer);
    }
    out
}

fn strip_trailing_comma(out: &mut String) {
    let trimmed = out.trim_end().len();
    if out[..trimmed].ends_with(',') {
        out.truncate(trimmed - 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn repairs_what_models_write() {
        let cases: &[(&str, Value, Recovery)] = &[
            (
                r#"{"obj": "mug_0"}"#,
                json!({"obj": "mug_0"}),
                Recovery::Verbatim,
            ),
            (
                "```json\n{\"obj\": \"mug_0\"}\n```",
                json!({"obj": "mug_0"}),
                Recovery::Extracted,
            ),
            (
                "Sure! Here you go: {\"a\": [1, 2]} Hope it helps.",
                json!({"a": [1, 2]}),
                Recovery::Extracted,
            ),
            (
                "<tool_call>{\"name\": \"grasp\"}</tool_call>",
                json!({"name": "grasp"}),
                Recovery::Extracted,
            ),
            (
                r#"{"obj": "mug_0",}"#,
                json!({"obj": "mug_0"}),
                Recovery::Repaired,
            ),
            (
                "{'obj': 'mug_0', 'ok': True, 'x': None}",
                json!({"obj": "mug_0", "ok": true, "x": null}),
                Recovery::Repaired,
            ),
            (
                "{obj: \"mug_0\"}",
                json!({"obj": "mug_0"}),
                Recovery::Repaired,
            ),
            (
                r#"{"obj": "mug_0", "action": "open the dr"#,
                json!({"obj": "mug_0", "action": "open the dr"}),
                Recovery::Repaired,
            ),
            (r#"{"a": [1, 2"#, json!({"a": [1, 2]}), Recovery::Repaired),
            (r#"{"a":"#, json!({"a": null}), Recovery::Repaired),
            (
                r#"{'q': 'it\'s "red"'}"#,
                json!({"q": "it's \"red\""}),
                Recovery::Repaired,
            ),
        ];
        for (text, want, how) in cases {
            let got = parse_lenient(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(&got.0, want, "{text}");
            assert_eq!(&got.1, how, "{text}");
        }
    }

    #[test]
    fn gives_up_on_garbage_with_the_original_error() {
        for text in [
            "",
            "I cannot help with that.",
            "<html><body>502</body></html>",
        ] {
            let err = parse_lenient(text).unwrap_err();
            assert!(!err.is_empty(), "{text}");
        }
        assert!(
            parse_object_lenient("[1, 2]")
                .unwrap_err()
                .contains("object")
        );
    }
}
