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
    pub vlm: VlmConfig,
    #[garde(dive)]
    pub limits: AgentLimits,
    #[garde(dive)]
    pub planner: PlannerConfig,
    /// The robot has a mobile base: offer `go_to` to the model, and call it in the
    /// offline agent before acting on an object. Default false (tabletop).
    #[garde(skip)]
    pub mobile: bool,
    /// A goal that arrives while another runs, through the service or the action
    /// alike. Default `preempt`, as Nav2 does.
    #[garde(skip)]
    pub when_busy: WhenBusy,
    #[garde(dive)]
    pub building_memory: BuildingMemoryConfig,
}

/// The building memory (Affordance RAG, SPEC §3): what the robot saw on its tours,
/// built by `asp memory build --bag` and consulted for objects out of view.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct BuildingMemoryConfig {
    /// Database file, relative to `paths.data_dir`. Default `building_memory.redb`.
    #[garde(skip)]
    pub database: std::path::PathBuf,
    /// The building the memory is of; a file of another site is refused. Default
    /// `default`.
    #[garde(length(min = 1))]
    pub site: String,
    /// Instances further than this from the camera are not placed (depth past it is
    /// too coarse to send the robot to). Default 6.0 m.
    #[garde(range(min = 0.5, max = 50.0))]
    pub max_instance_range_m: f32,
    /// `object_retrieval` asks the memory when the live map, its looks and its search
    /// found nothing: the base drives to where a remembered view showed the object and
    /// looks again. Default true (no memory file: nothing is asked).
    #[garde(skip)]
    pub recall: bool,
    /// A remembered object counts as what was asked for at this cosine of the request
    /// and its description (text embedder) or above. Default 0.5.
    #[garde(range(min = 0.0, max = 1.0))]
    pub min_relevance: f32,
    /// Remembered places visited for one request at most, best first (one object seen
    /// twice on the tour, or two alike). Default 3.
    #[garde(range(min = 1, max = 20))]
    pub max_places: usize,
    /// A room a request names ("the desk in the office") is the memory's zones (its
    /// level-4 clusters) whose objects most suggest it: the best, the others within
    /// this fraction of its score, and those that saw the same objects. Default 0.1.
    #[garde(range(min = 0.0, max = 1.0))]
    pub room_margin: f32,
    /// Softmax temperature of an object's belief among room kinds (over text
    /// cosines; lower is more decided). Default 0.02.
    #[garde(range(min = 0.001, max = 1.0))]
    pub room_temperature: f32,
    /// Kinds of room a named room is told apart from: an object counts for the named
    /// room as far as it is more like it than like these (a background, not a list of
    /// the rooms a goal may name). Default: kitchen, office, living room, bedroom,
    /// bathroom, dining room, library, laundry room, storage room, garage, hallway,
    /// corridor.
    #[garde(length(min = 1), inner(length(min = 1)))]
    pub room_kinds: Vec<String>,
    /// Keep retrieval to a room the request names, as the memory tells rooms (no
    /// memory: the room is not checked, and the agent is told so). Default true.
    #[garde(skip)]
    pub rooms: bool,
    /// The building's elevator, for recall of what the memory saw on another storey.
    #[garde(dive)]
    pub elevator: ElevatorConfig,
}

/// A building's elevator as the site sets it up: the action that rides it and where the
/// base stands to ride it on each storey. No storeys: recall stays on the robot's storey.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct ElevatorConfig {
    /// `asp_interfaces/action/RideElevator` (sim_node in a simulated building; the
    /// site's elevator integration on a robot). Default `/asp/elevator/ride`.
    #[garde(length(min = 1))]
    pub action: String,
    /// One per storey, from the ground floor up. Default none.
    #[garde(dive)]
    pub storeys: Vec<ElevatorStorey>,
    /// The number the site's ground floor goes by, for goals that name floors ("the
    /// second floor"): 1 where the ground floor is the first (the United States), 0
    /// where the first is one up (Britain, much of Europe). Default 1.
    #[garde(range(max = 1))]
    pub ground_floor_number: u32,
}

/// Where a storey is and where its elevator is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(deny_unknown_fields)]
pub struct ElevatorStorey {
    /// The storey's floor above the ground floor's, metres (z of its map in the
    /// building's frame).
    #[garde(range(min = -100.0, max = 1000.0))]
    pub height_m: f32,
    /// Where the base stands to ride, x and y in the storey's map, metres.
    #[garde(custom(finite2))]
    pub spot: [f32; 2],
}

fn finite2(v: &[f32; 2], _: &()) -> garde::Result {
    if v.iter().all(|x| x.is_finite()) {
        Ok(())
    } else {
        Err(garde::Error::new(format!("{v:?} is not finite")))
    }
}

impl Default for ElevatorConfig {
    fn default() -> Self {
        Self {
            action: "/asp/elevator/ride".into(),
            storeys: Vec::new(),
            ground_floor_number: 1,
        }
    }
}

impl Default for BuildingMemoryConfig {
    fn default() -> Self {
        Self {
            database: "building_memory.redb".into(),
            site: "default".into(),
            max_instance_range_m: 6.0,
            recall: true,
            min_relevance: 0.5,
            max_places: 3,
            room_margin: 0.1,
            room_temperature: 0.02,
            room_kinds: [
                "kitchen",
                "office",
                "living room",
                "bedroom",
                "bathroom",
                "dining room",
                "library",
                "laundry room",
                "storage room",
                "garage",
                "hallway",
                "corridor",
            ]
            .map(String::from)
            .to_vec(),
            rooms: true,
            elevator: ElevatorConfig::default(),
        }
    }
}

/// What agent_node does with a goal that arrives while another runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum WhenBusy {
    /// Stop the running goal (its result says it was preempted, and by which) and run
    /// the new one.
    #[default]
    Preempt,
    /// Refuse the new goal (error code 24, naming the running one).
    Reject,
    /// Run the new goal when those before it have ended, in the order they came; it
    /// can be cancelled while it waits.
    Queue,
}

/// Which agent drives the tools.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LlmBackend {
    /// The offline goal grammar over the same tools; needs no model server.
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
    /// Per-request timeout (connecting, sending, the model's answer), seconds. Default 60.
    #[garde(range(min = 0.1, max = 3600.0))]
    pub timeout_s: f64,
    /// Timeout for opening the connection, seconds. Default 10.
    #[garde(range(min = 0.1, max = 600.0))]
    pub connect_timeout_s: f64,
    /// Retries on 429, 5xx, timeouts and connection errors (never on other 4xx).
    /// Default 3.
    #[garde(range(max = 20))]
    pub max_retries: u32,
    /// Longest `Retry-After` the client waits for; a server asking for longer fails the
    /// request at once with an error that says so. Seconds. Default 60.
    #[garde(range(min = 0.0, max = 3600.0))]
    pub retry_after_max_s: f64,
    /// First backoff, seconds; doubles per retry. Default 0.5.
    #[garde(range(min = 0.0, max = 60.0))]
    pub backoff_initial_s: f64,
    /// Backoff ceiling, seconds. Default 8.
    #[garde(range(min = 0.0, max = 600.0))]
    pub backoff_max_s: f64,
    /// Default 0.
    #[garde(range(min = 0.0, max = 2.0))]
    pub temperature: f64,
    /// `max_tokens` sent with every request; `null` leaves it to the server. Default null.
    #[garde(inner(range(min = 1)))]
    pub max_tokens: Option<u32>,
    /// Mark tool schemas `strict` (OpenAI structured outputs). Off by default because
    /// not every compatible server accepts the flag. Default false.
    #[garde(skip)]
    pub strict_tools: bool,
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
            connect_timeout_s: 10.0,
            max_retries: 3,
            retry_after_max_s: 60.0,
            backoff_initial_s: 0.5,
            backoff_max_s: 8.0,
            temperature: 0.0,
            max_tokens: None,
            strict_tools: false,
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
    /// After a cancel, how long the running tool may take to stop (stop the arm, cancel
    /// navigation) before the agent stops waiting for it. Seconds. Default 5.
    #[garde(range(min = 0.0, max = 120.0))]
    pub cancel_grace_s: f64,
    /// Longest goal accepted, in characters; longer goals are refused before planning.
    /// Default 2000.
    #[garde(range(min = 1, max = 1_000_000))]
    pub max_goal_chars: u32,
    /// What the node remembers of backend calls (retrievals, groundings, skills) for
    /// reports: at most this many entries, the oldest dropped first, so a node that runs
    /// all day does not grow. Default 1024.
    #[garde(range(min = 1, max = 1_000_000))]
    pub journal_entries: u32,
}

impl Default for AgentLimits {
    fn default() -> Self {
        Self {
            max_tool_calls: 40,
            max_retries_per_call: 3,
            max_malformed_replies: 2,
            cancel_grace_s: 5.0,
            max_goal_chars: 2000,
            journal_entries: 1024,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct PlannerConfig {
    /// Decompose the goal with the LLM when `llm.backend` is `openai` (off: the
    /// offline goal grammar always). Default true.
    #[garde(skip)]
    pub use_llm: bool,
    /// Regenerations with a hint before the goal grammar takes over (SPEC §4.1). Default 2.
    #[garde(range(max = 10))]
    pub max_regenerations: u32,
    /// Match verbs and attribute words the offline grammar's lists do not know by
    /// meaning, with the configured text embedder (`object_map_node.models`; not with
    /// `hashing`, which has no meaning). Default true.
    #[garde(skip)]
    pub match_by_meaning: bool,
    /// Cosine similarity between an unknown verb and its nearest prototype (both said
    /// in the goal's clause) under which the word is not taken for a verb. Default 0.6.
    #[garde(range(min = 0.0, max = 1.0))]
    pub meaning_min_similarity: f64,
    /// How much nearer the nearest prototype must be than any prototype of another
    /// action for the agent to act; with less it asks back "did you mean …?". Default
    /// 0.05.
    #[garde(range(min = 0.0, max = 1.0))]
    pub meaning_min_margin: f64,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        Self {
            use_llm: true,
            max_regenerations: 2,
            match_by_meaning: true,
            meaning_min_similarity: 0.6,
            meaning_min_margin: 0.05,
        }
    }
}

/// How VLM answers are requested as JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum JsonResponseFormat {
    /// `response_format: {type: json_schema, strict: true}` (OpenAI, Gemini, vLLM,
    /// recent Ollama and llama.cpp); a server that rejects it is asked again with
    /// `json_object`.
    JsonSchema,
    /// `response_format: {type: json_object}`; the schema goes into the prompt.
    JsonObject,
    /// No `response_format`; the schema goes into the prompt and the answer is parsed
    /// and repaired.
    None,
}

/// How the VLM gives a part's bounding box.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BboxFormat {
    /// `[x0, y0, x1, y1]` in pixels of the image sent.
    Pixels,
    /// `[ymin, xmin, ymax, xmax]` scaled to 0–1000 (Gemini's native convention).
    Normalized1000Yx,
}

/// The vision-language model behind `RetrievalVlm`, `AffordanceVlm` and `OutcomeVlm`
/// (the same server as `llm`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Validate)]
#[serde(default, deny_unknown_fields)]
pub struct VlmConfig {
    /// The VLM's own server, up to and including `/v1`; empty uses `llm.base_url` (and
    /// `llm.api_key_env`). In simulation the sim's stand-in server. Default empty.
    #[garde(skip)]
    pub base_url: String,
    /// Environment variable holding the key of `base_url`'s server; empty for servers
    /// without keys. Used only with `base_url` set. Default empty.
    #[garde(skip)]
    pub api_key_env: String,
    /// Model name; empty uses `llm.model`. Default empty.
    #[garde(skip)]
    pub model: String,
    /// Default `json_schema`.
    #[garde(skip)]
    pub response_format: JsonResponseFormat,
    /// Default `pixels`.
    #[garde(skip)]
    pub bbox_format: BboxFormat,
    /// Times an unusable answer is re-asked before the question fails (SPEC §4.2: retry
    /// once, then fall back). Default 1.
    #[garde(range(max = 5))]
    pub max_repairs: u32,
    /// Images larger than this on their longer side are scaled down before sending,
    /// pixels. Default 1024.
    #[garde(range(min = 16, max = 8192))]
    pub max_image_side: u32,
}

impl Default for VlmConfig {
    fn default() -> Self {
        Self {
            base_url: String::new(),
            api_key_env: String::new(),
            model: String::new(),
            response_format: JsonResponseFormat::JsonSchema,
            bbox_format: BboxFormat::Pixels,
            max_repairs: 1,
            max_image_side: 1024,
        }
    }
}
