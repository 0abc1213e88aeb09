//! The VLM questions of `asp_core::models` (`RetrievalVlm`, `AffordanceVlm`,
//! `OutcomeVlm`, `MemoryVlm`) over the chat client: images as PNG data URLs, strict JSON answers
//! (`response_format: json_schema` where the server supports it, else the schema in the
//! prompt), answers parsed and repaired, an unusable answer re-asked `max_repairs` times
//! and then reported as [`ModelError::BadAnswer`].

use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use asp_config::sections::agent::{AgentConfig, BboxFormat, JsonResponseFormat, VlmConfig};
use asp_core::models::{
    AffordanceProposal, AffordanceVlm, Collage, ConceptKeywords, ConceptVlm, MemoryVlm, ModelError,
    Observation, OutcomeVlm, PartLocation, RetrievalVlm, SeenObject, ViewAffordance,
    ViewAffordanceScore, ViewDescription,
};
use asp_core::{Box2, Skill};
use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use tracing::debug;

use crate::client::LlmClient;
use crate::error::LlmError;
use crate::image::{EncodedImage, encode_png_data_url};
use crate::repair::parse_lenient;
use crate::schema::schema_for;
use crate::types::{ChatRequest, Message, ResponseFormat};

const SYSTEM: &str = include_str!("../prompts/vlm_system.md");
const SCHEMA_HINT: &str = include_str!("../prompts/vlm_schema_hint.md");
const CONFIRM: &str = include_str!("../prompts/vlm_confirm.md");
const PROPOSE: &str = include_str!("../prompts/vlm_propose.md");
const LOCATE: &str = include_str!("../prompts/vlm_locate.md");
const YES_NO: &str = include_str!("../prompts/vlm_yes_no.md");
const DESCRIBE: &str = include_str!("../prompts/vlm_describe.md");
const REPAIR: &str = include_str!("../prompts/vlm_repair.md");
const KEYWORDS: &str = include_str!("../prompts/vlm_keywords.md");
const REPLACEMENT: &str = include_str!("../prompts/vlm_replacement.md");

/// The VLM's settings in typed form.
#[derive(Debug, Clone, PartialEq)]
pub struct VlmSettings {
    /// `None`: the client's model.
    pub model: Option<String>,
    pub response_format: JsonResponseFormat,
    pub bbox_format: BboxFormat,
    pub max_repairs: u32,
    pub max_image_side: u32,
}

impl VlmSettings {
    pub fn from_config(cfg: &VlmConfig) -> Self {
        Self {
            model: (!cfg.model.trim().is_empty()).then(|| cfg.model.clone()),
            response_format: cfg.response_format,
            bbox_format: cfg.bbox_format,
            max_repairs: cfg.max_repairs,
            max_image_side: cfg.max_image_side,
        }
    }
}

/// A VLM behind an OpenAI-compatible endpoint.
#[derive(Debug)]
pub struct OpenAiVlm {
    client: Arc<LlmClient>,
    settings: VlmSettings,
    /// Cleared when the server rejects `json_schema`; later questions use `json_object`.
    json_schema_supported: AtomicBool,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ConfirmAnswer {
    /// Whether the object matches the request.
    matches: bool,
    /// Why, in one short sentence.
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ProposeAnswer {
    /// (skill, part) pairs, best first.
    pairs: Vec<ProposalItem>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ProposalItem {
    #[schemars(schema_with = "skill_schema")]
    skill: String,
    /// The part the skill acts on, e.g. "mug handle".
    part: String,
}

fn skill_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = Skill::ALL.iter().map(|s| s.name()).collect();
    schemars::json_schema!({"type": "string", "enum": names})
}

#[derive(Debug, Deserialize, JsonSchema)]
struct LocateAnswer {
    /// Whether the part is visible.
    visible: bool,
    /// The part's box, or null when not visible.
    bbox: Option<[f32; 4]>,
    /// 0 to 1.
    #[serde(default)]
    confidence: Option<f32>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DescribeAnswer {
    /// One sentence describing the place: kind of room, furniture, notable objects.
    scene: String,
    /// The objects in view, largest first.
    objects: Vec<DescribedObject>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DescribedObject {
    /// Colour, material, size and kind, e.g. small red metal mug.
    description: String,
    /// The object's box.
    bbox: [f32; 4],
    /// What the robot could do with it.
    affordances: Vec<DescribedAffordance>,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct DescribedAffordance {
    #[schemars(schema_with = "view_affordance_schema")]
    affordance: String,
    /// 0 to 1.
    score: f32,
}

fn view_affordance_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let names: Vec<&str> = ViewAffordance::ALL.iter().map(|a| a.name()).collect();
    schemars::json_schema!({"type": "string", "enum": names})
}

#[derive(Debug, Deserialize, JsonSchema)]
struct KeywordsAnswer {
    /// Main colour.
    colour: String,
    /// Its shape, a few words.
    shape: String,
    /// What it is made of.
    material: String,
    /// tiny, small, medium or large.
    size: String,
    /// What it is for, a few words.
    function: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct ReplacementAnswer {
    /// One word of the list, or null when none fits.
    replacement: Option<String>,
    /// Why, in one short sentence.
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
struct YesNoAnswer {
    answer: YesNo,
    /// Why, in one short sentence.
    #[serde(default)]
    reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum YesNo {
    Yes,
    No,
}

impl<'de> Deserialize<'de> for YesNo {
    /// "yes"/"no" in any case with punctuation, or a boolean.
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        match &v {
            serde_json::Value::Bool(true) => Ok(YesNo::Yes),
            serde_json::Value::Bool(false) => Ok(YesNo::No),
            serde_json::Value::String(s) => {
                let w = s
                    .trim()
                    .trim_matches(|c: char| !c.is_alphanumeric())
                    .to_ascii_lowercase();
                match w.as_str() {
                    "yes" | "y" | "true" => Ok(YesNo::Yes),
                    "no" | "n" | "false" => Ok(YesNo::No),
                    _ => Err(serde::de::Error::custom(format!(
                        "answer must be \"yes\" or \"no\", got {v}"
                    ))),
                }
            }
            _ => Err(serde::de::Error::custom(format!(
                "answer must be \"yes\" or \"no\", got {v}"
            ))),
        }
    }
}

impl OpenAiVlm {
    pub fn new(client: Arc<LlmClient>, settings: VlmSettings) -> Self {
        let json_schema_supported =
            AtomicBool::new(settings.response_format == JsonResponseFormat::JsonSchema);
        Self {
            client,
            settings,
            json_schema_supported,
        }
    }

    /// The VLM `agent_node.vlm` describes: its own server when `vlm.base_url` is set,
    /// else `agent_node.llm`'s.
    pub fn from_config(cfg: &AgentConfig) -> Result<Self, LlmError> {
        let mut llm = cfg.llm.clone();
        if !cfg.vlm.base_url.trim().is_empty() {
            llm.base_url = cfg.vlm.base_url.trim().to_owned();
            llm.api_key_env = cfg.vlm.api_key_env.clone();
        }
        Ok(Self::new(
            Arc::new(LlmClient::from_config(&llm)?),
            VlmSettings::from_config(&cfg.vlm),
        ))
    }

    pub fn client(&self) -> &Arc<LlmClient> {
        &self.client
    }

    fn model_name(&self) -> String {
        self.settings
            .model
            .clone()
            .unwrap_or_else(|| self.client.model().to_owned())
    }

    fn backend_error(&self, e: &LlmError) -> ModelError {
        ModelError::Backend {
            model: self.model_name(),
            message: e.to_string(),
        }
    }

    fn encode(&self, obs: &Observation) -> Result<EncodedImage, ModelError> {
        encode_png_data_url(&obs.rgb, self.settings.max_image_side).map_err(|message| {
            ModelError::InvalidInput {
                model: self.model_name(),
                problem: message,
            }
        })
    }

    /// Asks `prompt` about `images` and returns the answer as `T`, after `check`.
    async fn ask<T, R>(
        &self,
        name: &str,
        prompt: String,
        images: Vec<String>,
        check: impl Fn(T) -> Result<R, String>,
    ) -> Result<R, ModelError>
    where
        T: DeserializeOwned + JsonSchema,
    {
        let schema = schema_for::<T>();
        let mut system = SYSTEM.to_owned();
        let use_schema_format = self.json_schema_supported.load(Ordering::Relaxed);
        if !use_schema_format {
            system.push('\n');
            system.push_str(&SCHEMA_HINT.replace("{schema}", &schema.to_string()));
        }
        let mut req = ChatRequest {
            messages: vec![
                Message::system(system),
                Message::user_with_images(prompt, images),
            ],
            response_format: match (use_schema_format, self.settings.response_format) {
                (true, _) => Some(ResponseFormat::JsonSchema {
                    name: name.to_owned(),
                    schema: schema.clone(),
                }),
                (false, JsonResponseFormat::None) => None,
                (false, _) => Some(ResponseFormat::JsonObject),
            },
            model: self.settings.model.clone(),
            ..Default::default()
        };
        let mut repairs = 0;
        loop {
            let answer = match self.client.chat(&req).await {
                Ok(resp) => resp,
                Err(LlmError::Http {
                    status: 400 | 422,
                    message,
                    ..
                }) if matches!(req.response_format, Some(ResponseFormat::JsonSchema { .. }))
                    && mentions_response_format(&message) =>
                {
                    // the server does not take json_schema: ask the same with json_object
                    // and the schema in the prompt, now and for later questions
                    debug!(%message, "server rejects json_schema; using json_object");
                    self.json_schema_supported.store(false, Ordering::Relaxed);
                    req.response_format = Some(ResponseFormat::JsonObject);
                    if let Some(Message::System { content }) = req.messages.first_mut() {
                        content.push('\n');
                        content.push_str(&SCHEMA_HINT.replace("{schema}", &schema.to_string()));
                    }
                    continue;
                }
                Err(e) if e.is_bad_response() && repairs < self.settings.max_repairs => {
                    repairs += 1;
                    continue;
                }
                Err(e) => return Err(self.backend_error(&e)),
            };
            let text = answer.content.clone().unwrap_or_default();
            let problem = match parse_lenient(&text) {
                Ok((value, _)) => match serde_json::from_value::<T>(value) {
                    Ok(parsed) => match check(parsed) {
                        Ok(r) => return Ok(r),
                        Err(p) => p,
                    },
                    Err(e) => format!("it does not match the schema ({e})"),
                },
                Err(e) => format!("it is not JSON ({e})"),
            };
            if repairs >= self.settings.max_repairs {
                return Err(ModelError::BadAnswer {
                    model: self.model_name(),
                    message: format!(
                        "{name}: {problem}; answer was: {}",
                        crate::wire::excerpt(&text)
                    ),
                });
            }
            repairs += 1;
            debug!(question = name, %problem, "re-asking the VLM");
            req.messages.push(Message::Assistant {
                content: Some(text),
                tool_calls: Vec::new(),
            });
            req.messages
                .push(Message::user(REPAIR.replace("{problem}", &problem)));
        }
    }
}

/// How a box is written in `format`, as the prompts say it.
fn box_convention(format: BboxFormat) -> &'static str {
    match format {
        BboxFormat::Pixels => {
            "[x0, y0, x1, y1] in pixels of this image, x to the right and y down from the \
             top-left corner."
        }
        BboxFormat::Normalized1000Yx => {
            "[ymin, xmin, ymax, xmax], each scaled to 0-1000 of the image height or width."
        }
    }
}

/// A box the VLM gave in `format` about the image it was sent (`sent`: width, height),
/// in pixels of the original image (`original`), clamped to it; `Err` when it has a
/// non-finite number or is empty once clamped (inverted, or wholly outside the image).
fn box_in_original(
    b: [f32; 4],
    format: BboxFormat,
    sent: (f32, f32),
    original: (f32, f32),
) -> Result<Box2, String> {
    if b.iter().any(|v| !v.is_finite()) {
        return Err(format!("bbox {b:?} has a non-finite number"));
    }
    let ((sw, sh), (ow, oh)) = (sent, original);
    let (x0, y0, x1, y1) = match format {
        BboxFormat::Pixels => (
            b[0] / sw * ow,
            b[1] / sh * oh,
            b[2] / sw * ow,
            b[3] / sh * oh,
        ),
        BboxFormat::Normalized1000Yx => (
            b[1] / 1000.0 * ow,
            b[0] / 1000.0 * oh,
            b[3] / 1000.0 * ow,
            b[2] / 1000.0 * oh,
        ),
    };
    let bbox = Box2::new(x0.max(0.0), y0.max(0.0), x1.min(ow), y1.min(oh));
    if bbox.is_empty() {
        return Err(format!(
            "bbox {b:?} is empty or outside the {sw}×{sh} image"
        ));
    }
    Ok(bbox)
}

fn mentions_response_format(message: &str) -> bool {
    let m = message.to_ascii_lowercase();
    m.contains("response_format") || m.contains("json_schema") || m.contains("response format")
}

#[async_trait]
impl RetrievalVlm for OpenAiVlm {
    async fn confirm(&self, query: &str, views: &[Observation]) -> Result<bool, ModelError> {
        if views.is_empty() {
            return Err(ModelError::InvalidInput {
                model: self.model_name(),
                problem: "confirm needs at least one view".into(),
            });
        }
        let images = views
            .iter()
            .map(|v| self.encode(v).map(|e| e.data_url))
            .collect::<Result<Vec<_>, _>>()?;
        let prompt = CONFIRM
            .replace("{query}", query)
            .replace("{n}", &views.len().to_string());
        self.ask("confirm", prompt, images, |a: ConfirmAnswer| {
            debug!(query, matches = a.matches, reason = %a.reason, "retrieval confirmation");
            Ok(a.matches)
        })
        .await
    }
}

#[async_trait]
impl AffordanceVlm for OpenAiVlm {
    async fn propose(
        &self,
        action: &str,
        views: &[Observation],
    ) -> Result<Vec<AffordanceProposal>, ModelError> {
        if views.is_empty() {
            return Err(ModelError::InvalidInput {
                model: self.model_name(),
                problem: "propose needs at least one view".into(),
            });
        }
        let images = views
            .iter()
            .map(|v| self.encode(v).map(|e| e.data_url))
            .collect::<Result<Vec<_>, _>>()?;
        let prompt = PROPOSE.replace("{action}", action);
        self.ask("propose", prompt, images, |a: ProposeAnswer| {
            let mut out = Vec::new();
            for item in a.pairs {
                let skill = Skill::from_str(item.skill.trim()).map_err(|e| e.to_string())?;
                let part = item.part.trim();
                if part.is_empty() {
                    return Err(format!("the pair for {skill} names no part"));
                }
                out.push(AffordanceProposal {
                    skill,
                    part: part.to_owned(),
                });
            }
            Ok(out)
        })
        .await
    }

    async fn locate_part(
        &self,
        part: &str,
        view: &Observation,
    ) -> Result<Option<PartLocation>, ModelError> {
        let enc = self.encode(view)?;
        let instructions = format!(
            "Give its bounding box as \"bbox\": {}",
            box_convention(self.settings.bbox_format)
        );
        let prompt = LOCATE
            .replace("{part}", part)
            .replace("{width}", &enc.width.to_string())
            .replace("{height}", &enc.height.to_string())
            .replace("{bbox_instructions}", &instructions);
        let (ow, oh) = (view.width() as f32, view.height() as f32);
        let (sw, sh) = (enc.width as f32, enc.height as f32);
        let format = self.settings.bbox_format;
        self.ask(
            "locate_part",
            prompt,
            vec![enc.data_url],
            move |a: LocateAnswer| {
                if !a.visible {
                    return Ok(None);
                }
                let b = a
                    .bbox
                    .ok_or_else(|| "visible is true but bbox is null".to_owned())?;
                let bbox = box_in_original(b, format, (sw, sh), (ow, oh))?;
                Ok(Some(PartLocation {
                    bbox,
                    confidence: a.confidence.unwrap_or(1.0).clamp(0.0, 1.0),
                }))
            },
        )
        .await
    }
}

#[async_trait]
impl OutcomeVlm for OpenAiVlm {
    async fn yes_no(
        &self,
        question: &str,
        before: &Observation,
        after: &Observation,
    ) -> Result<bool, ModelError> {
        let images = vec![self.encode(before)?.data_url, self.encode(after)?.data_url];
        let prompt = YES_NO.replace("{question}", question);
        self.ask("yes_no", prompt, images, |a: YesNoAnswer| {
            debug!(question, answer = ?a.answer, reason = %a.reason, "outcome question");
            Ok(a.answer == YesNo::Yes)
        })
        .await
    }
}

#[async_trait]
impl MemoryVlm for OpenAiVlm {
    async fn describe_view(&self, view: &Observation) -> Result<ViewDescription, ModelError> {
        let enc = self.encode(view)?;
        let instructions = box_convention(self.settings.bbox_format);
        let prompt = DESCRIBE
            .replace("{width}", &enc.width.to_string())
            .replace("{height}", &enc.height.to_string())
            .replace("{bbox_instructions}", instructions);
        let original = (view.width() as f32, view.height() as f32);
        let sent = (enc.width as f32, enc.height as f32);
        let format = self.settings.bbox_format;
        self.ask(
            "describe_view",
            prompt,
            vec![enc.data_url],
            move |a: DescribeAnswer| {
                let scene = a.scene.trim();
                if scene.is_empty() {
                    return Err("\"scene\" is empty: describe the place in one sentence".into());
                }
                let mut objects = Vec::with_capacity(a.objects.len());
                for (i, o) in a.objects.into_iter().enumerate() {
                    let description = o.description.trim();
                    if description.is_empty() {
                        return Err(format!("object {i} has an empty \"description\""));
                    }
                    let bbox = box_in_original(o.bbox, format, sent, original)
                        .map_err(|e| format!("object {i} ({description:?}): {e}"))?;
                    let mut affordances = Vec::with_capacity(o.affordances.len());
                    for s in o.affordances {
                        let affordance = ViewAffordance::from_str(&s.affordance)
                            .map_err(|e| format!("object {i} ({description:?}): {e}"))?;
                        if !(s.score.is_finite() && (0.0..=1.0).contains(&s.score)) {
                            return Err(format!(
                                "object {i} ({description:?}): score {} of {} is not in [0, 1]",
                                s.score,
                                affordance.name()
                            ));
                        }
                        affordances.push(ViewAffordanceScore {
                            affordance,
                            score: s.score,
                        });
                    }
                    objects.push(SeenObject {
                        description: description.to_owned(),
                        bbox,
                        affordances,
                    });
                }
                Ok(ViewDescription {
                    description: scene.to_owned(),
                    objects,
                })
            },
        )
        .await
    }
}

/// A keyword is cut to this many characters, at a word boundary: a wordy model still
/// grounds the word, and an answer that pastes page text does not carry it along.
const MAX_KEYWORD_CHARS: usize = 60;

/// `v` cut to [`MAX_KEYWORD_CHARS`] at the last space before the limit (mid-word when
/// there is none).
fn keyword_cut(v: &str) -> String {
    if v.chars().count() <= MAX_KEYWORD_CHARS {
        return v.to_owned();
    }
    let head: String = v.chars().take(MAX_KEYWORD_CHARS + 1).collect();
    match head.rfind(' ') {
        Some(i) if i > 0 => head[..i].trim_end_matches([',', ';', ' ']).to_owned(),
        _ => head.chars().take(MAX_KEYWORD_CHARS).collect(),
    }
}

#[async_trait]
impl ConceptVlm for OpenAiVlm {
    async fn keywords(&self, word: &str, collage: &Collage) -> Result<ConceptKeywords, ModelError> {
        let enc = self.encode(&collage.image)?;
        let prompt = KEYWORDS
            .replace("{columns}", &collage.columns.to_string())
            .replace("{n}", &collage.pictures.to_string())
            .replace("{word}", word);
        self.ask(
            "keywords",
            prompt,
            vec![enc.data_url],
            |a: KeywordsAnswer| {
                let field = |name: &str, v: String| {
                    let v = v.trim().to_lowercase();
                    if v.is_empty() {
                        Err(format!("\"{name}\" is empty"))
                    } else {
                        Ok(keyword_cut(&v))
                    }
                };
                Ok(ConceptKeywords {
                    colour: field("colour", a.colour)?,
                    shape: field("shape", a.shape)?,
                    material: field("material", a.material)?,
                    size: field("size", a.size)?,
                    function: field("function", a.function)?,
                })
            },
        )
        .await
    }

    async fn replacement(
        &self,
        word: &str,
        collage: &Collage,
        keywords: &ConceptKeywords,
        web_text: &[String],
        known: &[String],
    ) -> Result<Option<String>, ModelError> {
        if known.is_empty() {
            return Err(ModelError::InvalidInput {
                model: self.model_name(),
                problem: "replacement needs the list of known words".into(),
            });
        }
        let enc = self.encode(&collage.image)?;
        let quoted: Vec<String> = web_text.iter().map(|t| format!("- {t}")).collect();
        let prompt = REPLACEMENT
            .replace("{n}", &collage.pictures.to_string())
            .replace("{columns}", &collage.columns.to_string())
            .replace("{keywords}", &keywords.phrase())
            .replace("{known}", &known.join(", "))
            .replace(
                "{web_text}",
                if quoted.is_empty() {
                    "(no page text)".into()
                } else {
                    quoted.join("\n")
                }
                .as_str(),
            )
            // the word last: page text is already in, and a word with "{…}" in it
            // replaces nothing after it
            .replace("{word}", word);
        self.ask("replacement", prompt, vec![enc.data_url], |a: ReplacementAnswer| {
            let Some(w) = a.replacement.map(|w| w.trim().to_lowercase()) else {
                return Ok(None);
            };
            if w.is_empty() || w == "null" || w == "none" {
                return Ok(None);
            }
            match known.iter().find(|k| k.eq_ignore_ascii_case(&w)) {
                Some(k) => {
                    debug!(word, replacement = %k, reason = %a.reason, "replacement");
                    Ok(Some(k.clone()))
                }
                None => Err(format!(
                    "\"{w}\" is not one of the words the detector knows; pick one of the list or null"
                )),
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_keyword_is_cut_at_a_word_boundary() {
        assert_eq!(keyword_cut("silver"), "silver");
        let long = "flat rectangular book with rounded corners and an elastic band";
        let cut = keyword_cut(long);
        assert_eq!(
            cut,
            "flat rectangular book with rounded corners and an elastic"
        );
        assert!(cut.chars().count() <= MAX_KEYWORD_CHARS);
        // pasted page text stays bounded, even without spaces
        let pasted = "x".repeat(500);
        assert_eq!(keyword_cut(&pasted).chars().count(), MAX_KEYWORD_CHARS);
    }
}
