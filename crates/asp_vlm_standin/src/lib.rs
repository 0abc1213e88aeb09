//! The simulation's VLM, served as a deployment serves one: an OpenAI-compatible
//! chat-completions server, so the product's nodes ask it through the same client and
//! code path they use with a real model on a robot.
//!
//! The simulator records every frame it renders, with its ground truth, in a
//! [`FrameLog`]. A question's images (crops of those frames) are found in the log by
//! exact match, and the stand-in models (`asp_perception`'s retrieval, outcome and memory
//! stand-ins, `asp_affordance`'s affordance stand-in, with their seeded per-image errors)
//! answer from the ground truth cut alike. An image no rendered frame contains is
//! refused: the stand-in never answers about a real camera.

pub mod frames;
pub mod questions;
pub mod server;

pub use frames::{Found, FrameLog};
pub use server::{MODEL, StandInModels, VlmStandIn};
