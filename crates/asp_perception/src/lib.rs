//! Perception for ASP (SPEC §1.1, §1.3): model backends behind the `asp_core::models`
//! traits, the open-vocabulary ObjectMap builder, object retrieval, spatial tools and
//! offline mapping from rosbag2 recordings.
//!
//! - [`onnx`]: ONNX Runtime backends (MiniLM text embedder, SAM-style segmenters,
//!   CLIP-style image embedder), the runtime loaded from a configured shared library.
//! - [`simulated`]: simulated segmenter, image embedder and retrieval, outcome and memory
//!   VLMs driven by the simulator's ground truth (simulation only).
//! - [`hashing`]: a lexical text embedder that needs no model file.
//! - [`lexicon`]: kinds and uses of nouns from a WordNet database, the simulated VLM's
//!   world knowledge (simulation only).
//! - [`builder`]: segment → crop → embed → back-project → merge, incrementally.
//! - [`retrieval`]: `object_retrieval` and the key registry.
//! - [`completion`]: a closer look's partial view of an object completed by the map's.
//! - [`spatial`]: distance_to, distance_between, left_of, right_of, size_of.
//! - [`replay`]: mapping from a rosbag2 MCAP recording.
//! - [`factory`]: the configured backends.
//! - [`eval`]: precision/recall of a map against simulator ground truth.

pub mod builder;
pub mod completion;
pub mod concepts;
mod error;
pub mod eval;
pub mod factory;
pub mod filter;
pub mod hashing;
pub mod lexicon;
pub mod onnx;
pub mod preprocess;
pub mod record;
pub mod replay;
pub mod retrieval;
pub mod simulated;
pub mod spatial;
mod voxel;

pub use builder::{BuiltMap, Detection, KeyframeDetections, KeyframeReport, MapBuilder};
pub use error::PerceptionError;
pub use factory::PerceptionModels;
pub use hashing::HashingTextEmbedder;
pub use retrieval::{Ask, Candidate, ObjectRegistry, ObjectRetriever, Retrieval};
pub use simulated::{
    SimulatedImageEmbedder, SimulatedMemoryParams, SimulatedMemoryVlm, SimulatedOutcomeVlm,
    SimulatedRetrievalVlm, SimulatedSegmenter,
};
