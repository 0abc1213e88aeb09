//! Reading a chat-completions request as one of the product's VLM questions, and writing
//! the answer as the JSON the question asks for.
//!
//! The question is known by the answer it asks for (the JSON schema's fields, sent as
//! `response_format` or written into the system prompt), its argument by the quoted
//! text of the prompt, as a model reads them. The prompts are `asp_llm`'s
//! (`prompts/vlm_*.md`); the round-trip tests fail when the two drift apart.

use serde_json::{Value, json};

/// One VLM question.
#[derive(Debug, Clone, PartialEq)]
pub enum Question {
    /// `RetrievalVlm::confirm`: does the object in the images match `query`?
    Confirm { query: String },
    /// `AffordanceVlm::propose`: (skill, part) pairs that achieve `action`.
    Propose { action: String },
    /// `AffordanceVlm::locate_part`: the box of `part`, in pixels or in 0–1000 y-x.
    Locate { part: String, normalized_yx: bool },
    /// `OutcomeVlm::yes_no` over a before and an after image.
    YesNo { question: String },
    /// `MemoryVlm::describe_view`: the place and its objects with boxes (in pixels or in
    /// 0–1000 y-x) and affordances.
    Describe { normalized_yx: bool },
    /// `ConceptVlm::keywords`: five keywords for `word` from a collage of `pictures`
    /// web pictures, `columns` to a row.
    Keywords {
        word: String,
        pictures: u32,
        columns: u32,
    },
    /// `ConceptVlm::replacement`: the word of `known` that names what `word` names.
    Replacement {
        word: String,
        pictures: u32,
        columns: u32,
        known: Vec<String>,
    },
}

/// A request's question and its images (data URLs, in order).
#[derive(Debug, Clone, PartialEq)]
pub struct Asked {
    pub question: Question,
    pub images: Vec<String>,
}

/// The text of a message's content: a string, or the text parts of an array.
fn texts(content: &Value) -> Vec<String> {
    match content {
        Value::String(s) => vec![s.clone()],
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "text")
            .filter_map(|p| p["text"].as_str().map(str::to_owned))
            .collect(),
        _ => Vec::new(),
    }
}

fn image_urls(content: &Value) -> Vec<String> {
    match content {
        Value::Array(parts) => parts
            .iter()
            .filter(|p| p["type"] == "image_url")
            .filter_map(|p| {
                p["image_url"]["url"]
                    .as_str()
                    .or_else(|| p["image_url"].as_str())
                    .map(str::to_owned)
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// The text between `open` and the first `close` after it.
fn between(text: &str, open: &str, close: &str) -> Option<String> {
    let start = text.find(open)? + open.len();
    let len = text[start..].find(close)?;
    Some(text[start..start + len].trim().to_owned())
}

/// The question a request asks, or why it is not one of ours.
pub fn read(request: &Value) -> Result<Asked, String> {
    let messages = request["messages"]
        .as_array()
        .ok_or_else(|| "the request has no \"messages\" array".to_owned())?;
    // the question is the first user message (later ones re-ask after a bad answer)
    let user = messages
        .iter()
        .find(|m| m["role"] == "user")
        .ok_or_else(|| "the request has no user message".to_owned())?;
    let prompt = texts(&user["content"]).join("\n");
    let images = image_urls(&user["content"]);
    // the answer's fields: in response_format, or in the system prompt
    let mut schema = request["response_format"]["json_schema"]["schema"].to_string();
    for m in messages.iter().filter(|m| m["role"] == "system") {
        schema.push_str(&texts(&m["content"]).join("\n"));
    }
    let asks = |field: &str| schema.contains(&format!("\"{field}\""));
    let missing = |what: &str| format!("the prompt names no {what}: {prompt:?}");
    // "scene" first: the description's schema also has "bbox" and "description", and no
    // other question's schema has "scene"
    let question = if asks("scene") {
        Question::Describe {
            normalized_yx: prompt.contains("[ymin, xmin, ymax, xmax]"),
        }
    } else if asks("material") || asks("replacement") {
        // a concept question: the collage's shape and the word, as the prompt gives them
        let number = |open: &str, close: &str, what: &str| {
            between(&prompt, open, close)
                .and_then(|n| n.parse::<u32>().ok())
                .filter(|n| *n > 0)
                .ok_or_else(|| missing(what))
        };
        let pictures = number("collage of ", " pictures", "number of pictures")?;
        let columns = number("in a grid of ", " columns", "number of columns")?;
        let word = between(&prompt, "web image search for \"", "\", in a grid")
            .ok_or_else(|| missing("word"))?;
        if asks("replacement") {
            let known = between(&prompt, "knows only these words: ", ".\n")
                .ok_or_else(|| missing("list of known words"))?
                .split(", ")
                .map(|w| w.trim().to_owned())
                .filter(|w| !w.is_empty())
                .collect();
            Question::Replacement {
                word,
                pictures,
                columns,
                known,
            }
        } else {
            Question::Keywords {
                word,
                pictures,
                columns,
            }
        }
    } else if asks("matches") {
        Question::Confirm {
            query: between(&prompt, "looking for: \"", "\".").ok_or_else(|| missing("query"))?,
        }
    } else if asks("pairs") {
        Question::Propose {
            action: between(&prompt, "in the image(s): \"", "\".")
                .ok_or_else(|| missing("action"))?,
        }
    } else if asks("visible") {
        Question::Locate {
            part: between(&prompt, "Find \"", "\" in the image").ok_or_else(|| missing("part"))?,
            normalized_yx: prompt.contains("[ymin, xmin, ymax, xmax]"),
        }
    } else if asks("answer") {
        Question::YesNo {
            question: between(&format!("{prompt}\n"), "Question:", "\n")
                .ok_or_else(|| missing("question"))?,
        }
    } else {
        return Err(
            "not a VLM question this stand-in answers (it answers object confirmation, \
             affordance proposals, part boxes, before/after yes/no questions, view \
             descriptions and concept keywords and replacements)"
                .into(),
        );
    };
    Ok(Asked { question, images })
}

/// A chat-completions response carrying `answer` as the assistant's text.
pub fn completion(model: &str, answer: &Value) -> Value {
    json!({
        "id": "standin",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": answer.to_string()},
            "finish_reason": "stop",
        }],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(system: &str, prompt: &str, format: Value) -> Value {
        json!({
            "messages": [
                {"role": "system", "content": system},
                {"role": "user", "content": [
                    {"type": "text", "text": prompt},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                ]},
            ],
            "response_format": format,
        })
    }

    #[test]
    fn the_schema_names_the_question_and_the_prompt_its_argument() {
        let schema = |field: &str| {
            json!({"type": "json_schema", "json_schema": {"name": "q", "schema": {
                "properties": {field: {}}}}})
        };
        let a = read(&request(
            "",
            "The robot is looking for: \"the red mug\".\n\nThe 2 image(s)",
            schema("matches"),
        ))
        .expect("confirm");
        assert_eq!(
            a.question,
            Question::Confirm {
                query: "the red mug".into()
            }
        );
        assert_eq!(a.images.len(), 1);
        let a = read(&request(
            "",
            "Find \"top drawer handle\" in the image (640×480 pixels).\n\nGive its bounding box as \"bbox\": [ymin, xmin, ymax, xmax]",
            schema("visible"),
        ))
        .expect("locate");
        assert_eq!(
            a.question,
            Question::Locate {
                part: "top drawer handle".into(),
                normalized_yx: true
            }
        );
        // the schema in the system prompt (json_object servers) works alike
        let a = read(&request(
            "Answer with this schema: {\"properties\": {\"answer\": {}}}",
            "The first image was taken before.\n\nQuestion: Has the bell been pressed?\n\nCompare",
            json!({"type": "json_object"}),
        ))
        .expect("yes/no");
        assert_eq!(
            a.question,
            Question::YesNo {
                question: "Has the bell been pressed?".into()
            }
        );
    }

    #[test]
    fn a_view_description_is_known_by_its_scene_field() {
        let schema = json!({"type": "json_schema", "json_schema": {"name": "describe_view",
            "schema": {"properties": {"scene": {}, "objects": {"items": {"properties": {
                "description": {}, "bbox": {}, "affordances": {}}}}}}}});
        for (prompt, normalized_yx) in [
            (
                "- \"bbox\": [x0, y0, x1, y1] in pixels of this image",
                false,
            ),
            (
                "- \"bbox\": [ymin, xmin, ymax, xmax], each scaled to 0-1000",
                true,
            ),
        ] {
            let a = read(&request("", prompt, schema.clone())).expect("describe");
            assert_eq!(a.question, Question::Describe { normalized_yx });
        }
        // a part's box (which also asks "bbox") stays a Locate
        let locate = json!({"type": "json_schema", "json_schema": {"name": "q", "schema": {
            "properties": {"visible": {}, "bbox": {}, "confidence": {}}}}});
        let a = read(&request(
            "",
            "Find \"lid\" in the image (8×8 pixels).",
            locate,
        ))
        .expect("locate");
        assert!(matches!(a.question, Question::Locate { .. }), "{a:?}");
    }

    #[test]
    fn concept_questions_carry_the_word_the_collage_and_the_known_words() {
        let schema = |field: &str| {
            json!({"type": "json_schema", "json_schema": {"name": "q", "schema": {
                "properties": {field: {}}}}})
        };
        let head = "The image is a collage of 3 pictures from a web image search for \"moka pot\", in a grid of 2 columns.";
        let a = read(&request("", head, schema("material"))).expect("keywords");
        assert_eq!(
            a.question,
            Question::Keywords {
                word: "moka pot".into(),
                pictures: 3,
                columns: 2
            }
        );
        let prompt = format!(
            "{head} Keywords read from them: silver.\n\nThe robot's object detector knows only these words: kettle, mug, bowl.\n\nWhich one"
        );
        let a = read(&request("", &prompt, schema("replacement"))).expect("replacement");
        assert_eq!(
            a.question,
            Question::Replacement {
                word: "moka pot".into(),
                pictures: 3,
                columns: 2,
                known: vec!["kettle".into(), "mug".into(), "bowl".into()]
            }
        );
        // a prompt that lost the collage's shape is refused, naming what is missing
        let e = read(&request(
            "",
            "keywords for \"moka pot\"",
            schema("material"),
        ))
        .expect_err("no collage");
        assert!(e.contains("number of pictures"), "{e}");
    }

    #[test]
    fn other_requests_are_refused_with_why() {
        let e = read(&request("", "Hello", json!(null))).expect_err("not ours");
        assert!(e.contains("not a VLM question"), "{e}");
        let e = read(&json!({"model": "x"})).expect_err("no messages");
        assert!(e.contains("messages"), "{e}");
    }
}
