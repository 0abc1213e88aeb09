//! A suite with a `tour:` explores each world once per run, records the views, builds
//! the building memory from the recording, and its episodes start with that memory: an
//! object out of view from the start is found where the tour saw it, which the same
//! suite without the tour does not find (oracle profile, so that nothing else in view is
//! taken for it).
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use asp_agent::AgentEvent;
use asp_eval::suite::{SuiteSpec, TourSpec};
use asp_eval::{EvalSettings, InProcess, Quiet, Suite, run_suite};
use asp_sim::scenario::RobotStart;
use serde_yaml_ng::{Mapping, Value};

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn mapping(entries: &[(&str, &str)]) -> Mapping {
    entries
        .iter()
        .map(|(k, v)| {
            (
                Value::String((*k).to_owned()),
                serde_yaml_ng::from_str(v).unwrap(),
            )
        })
        .collect()
}

fn suite(tour: Option<TourSpec>) -> Suite {
    let spec = SuiteSpec {
        start: None,
        name: "toured".into(),
        description: "the stapler in the office, from the living room".into(),
        scenarios: vec![
            config_dir()
                .join("scenarios/mobile/stapler_to_kitchen.yaml")
                .display()
                .to_string(),
        ],
        // no survey: from the living room the office is out of view
        world_parameters: Default::default(),
        parameters: mapping(&[
            ("agent_node.mobile", "true"),
            ("object_map_node.mapping.survey", "[]"),
            (
                "object_map_node.mapping.arm_poses",
                "[look, look_left, look_right]",
            ),
        ]),
        tour,
    };
    Suite::from_spec(&config_dir().join("suites/toured.yaml"), spec).unwrap()
}

/// Whether the episode's first `object_retrieval` found something.
fn first_retrieval_found(r: &asp_eval::EpisodeResult) -> bool {
    r.trace
        .report
        .events
        .iter()
        .find_map(|e| match e {
            AgentEvent::ToolFinished { tool, output, .. } if tool == "object_retrieval" => {
                Some(output.success)
            }
            _ => None,
        })
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_toured_suite_starts_its_episodes_with_the_memory_of_the_tour() {
    let data = tempfile::tempdir().unwrap();
    // the oracle profile: no false match in view stands in for the stapler
    let mut overrides = asp_runtime::profile_overrides(&config_dir(), "oracle").unwrap();
    overrides.push(format!("common.paths.data_dir={}", data.path().display()));
    let settings = EvalSettings {
        config_dir: config_dir(),
        overrides,
        runs: 1,
        seed: Some(2),
        report_dir: None,
        concept_memory: Default::default(),
    };
    let toured = suite(Some(TourSpec {
        start: RobotStart {
            base: [1.0, 3.6],
            heading_deg: 0.0,
            arm: "home".into(),
            storey: 0,
        },
        parameters: mapping(&[
            ("object_map_node.mapping.cameras", "[head]"),
            ("object_map_node.mapping.arm_poses", "[look]"),
        ]),
    }));
    let with = run_suite(&toured, &settings, &InProcess::default(), &Quiet)
        .await
        .unwrap();
    assert_eq!(with.tours.len(), 1, "{:?}", with.tours);
    let t = &with.tours[0];
    assert_eq!(
        (t.world.as_str(), t.run, t.seed),
        ("worlds/apartment.yaml", 0, 2)
    );
    // six views a stop (turning in place may end one short), all in the memory
    assert!(t.stops >= 4 && t.views >= 5 * t.stops, "{t:?}");
    assert!(t.objects > t.views, "{t:?}");
    assert!(!t.levels.is_empty(), "{t:?}");
    // the tour's files stay out of the data folder the episodes were given
    assert!(!data.path().join("tour.mcap").exists());
    assert!(!data.path().join("building_memory.redb").exists());
    let episode = &with.episodes[0];
    assert!(
        first_retrieval_found(episode),
        "the red stapler was not recalled: {}",
        episode.summary
    );

    // the same episode without the tour: nothing in view, nothing remembered
    let without = run_suite(&suite(None), &settings, &InProcess::default(), &Quiet)
        .await
        .unwrap();
    assert!(without.tours.is_empty());
    assert!(
        !first_retrieval_found(&without.episodes[0]),
        "found without a memory: {}",
        without.episodes[0].summary
    );
}
