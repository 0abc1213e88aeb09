//! End-to-end evaluation of the ASP system (issue 9).
//!
//! - [`suite`]: suite files (`config/suites/*.yaml`): scenario files and parameter
//!   overrides for every scenario of the suite.
//! - [`runner`]: suite × runs × seed; every episode is a fresh simulation of its scenario
//!   and a freshly started system ([`runner::Launcher`]: [`graph::NodeGraph`] starts the
//!   ROS node graph on an in-process bus, [`runner::InProcess`] wires the nodes' services
//!   directly), judged by the scenario's success predicate and
//!   partial-credit levels on the simulator's state, which no part of the system reads.
//! - [`episode`]: per-episode figures (success, progress, tool/LLM/skill calls, tokens,
//!   verifier rejections, wall times), the failure class read from the trace
//!   ([`episode::classify`] documents the rule), and trace comparison for determinism
//!   and replays.
//! - [`outcome_truth`]: the verifier's per-step Yes/No answers against the world at the
//!   times of the views they judged (precision and recall per verb).
//! - [`report`]: self-contained HTML episode reports.
//! - Component benchmarks on simulator renders, which need the renderer's ground truth
//!   and so live here, beside the judge, rather than in the product crates they measure:
//!   [`map_quality`] (the object map against the world's objects, `asp bench map`) and
//!   [`affordance_set`] (the simulator-generated affordance-grounding set).
//!
//! Results serialise to JSON ([`runner::SuiteResults`]); a recorded episode can be run
//! again from it ([`runner::replay_difference`]).

pub mod affordance_set;
pub mod episode;
pub mod error;
pub mod graph;
pub mod image;
pub mod map_quality;
pub mod memory_bench;
pub mod outcome_truth;
pub mod report;
pub mod runner;
pub mod suite;

pub use episode::{
    Classification, Counts, EpisodeResult, EpisodeSpec, FailureClass, Trace, WallTimes, classify,
    comparable_trace, first_difference, strip_wall_clock,
};
pub use error::EvalError;
pub use graph::NodeGraph;
pub use report::{EpisodeView, Judgement, render_html, write_report};
pub use runner::{
    ConceptMemory, EvalSettings, InProcess, Launcher, LevelSummary, Progress, Quiet, Recorded,
    RunningSystem, SuiteResults, Summary, recorded_episodes, replay, replay_difference,
    run_episode, run_suite,
};
pub use suite::Suite;
