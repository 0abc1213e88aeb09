//! The embedded default's web search (issue 17, SPEC §4.2): a server on loopback that
//! speaks SearXNG's JSON API over the concept corpus shipped in `config/concepts/`, so
//! `asp run` needs no internet and tests search a real HTTP server. General searches
//! answer with the concepts' pages (untrusted text, served as written); image searches
//! with pictures the simulator's renderer makes of the concepts' shapes and colours.

pub mod corpus;
pub mod render;
pub mod server;
pub mod vlm;

pub use corpus::{Concept, Corpus, CorpusError};
pub use server::WebStandIn;
pub use vlm::{ConceptErrors, CorpusVlm};
