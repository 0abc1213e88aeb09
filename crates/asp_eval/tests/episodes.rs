//! Episodes end to end on the embedded simulator with the offline agent: the same suite
//! and seed give identical traces, a recorded episode replays to the same trace, and the
//! HTML report shows every tool call and verdict with valid images.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use asp_agent::AgentEvent;
use asp_eval::image::decode_png_data_url;
use asp_eval::suite::SuiteSpec;
use asp_eval::{
    EpisodeSpec, EvalSettings, InProcess, NodeGraph, Quiet, Suite, comparable_trace,
    first_difference, recorded_episodes, render_html, replay_difference, run_episode, run_suite,
};

fn config_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config")
}

fn suite(scenarios: &[&str]) -> Suite {
    let spec = SuiteSpec {
        start: None,
        name: "small".into(),
        description: "test suite".into(),
        scenarios: scenarios
            .iter()
            .map(|s| config_dir().join("scenarios").join(s).display().to_string())
            .collect(),
        world_parameters: Default::default(),
        parameters: Default::default(),
        tour: None,
    };
    Suite::from_spec(&config_dir().join("suites/small.yaml"), spec).unwrap()
}

fn settings(data: &tempfile::TempDir, runs: u32, seed: Option<u64>) -> EvalSettings {
    EvalSettings {
        config_dir: config_dir(),
        overrides: vec![format!("common.paths.data_dir={}", data.path().display())],
        runs,
        seed,
        report_dir: None,
        concept_memory: Default::default(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_same_suite_and_seed_give_identical_traces_and_a_recorded_episode_replays() {
    // through the ROS node graph on the in-process bus, as `asp eval` runs them
    let data = tempfile::tempdir().unwrap();
    // one success and one failure with verifier rejections and retries
    let s = suite(&["tabletop/apple_in_bowl.yaml", "tabletop/ring_bell.yaml"]);
    let set = settings(&data, 1, Some(3));
    let first = run_suite(&s, &set, &NodeGraph::default(), &Quiet)
        .await
        .unwrap();
    let second = run_suite(&s, &set, &NodeGraph::default(), &Quiet)
        .await
        .unwrap();
    assert_eq!(first.episodes.len(), 2);
    assert_eq!(first.summary.episodes, 2);
    for (a, b) in first.episodes.iter().zip(&second.episodes) {
        assert!(
            a.counts.tool_calls > 0,
            "{}: the agent did nothing",
            a.spec.scenario
        );
        let (ta, tb) = (comparable_trace(&a.trace), comparable_trace(&b.trace));
        assert_eq!(first_difference(&ta, &tb), None, "{}", a.spec.scenario);
        assert_eq!(ta, tb);
        assert_eq!(
            (a.success, a.progress, &a.counts, &a.failure),
            (b.success, b.progress, &b.counts, &b.failure)
        );
        assert_eq!(a.spec.seed, 3);
        // the judgement agrees with itself: success scores 1, a failure has a class
        assert_eq!(a.success, a.progress == 1.0, "{}", a.spec.scenario);
        assert_eq!(a.success, a.failure.is_none(), "{}", a.spec.scenario);
        assert!((0.0..=1.0).contains(&a.progress));
    }
    // every outcome answer is judged against the world at the times of its views (their
    // stamps crossed the graph), the same on both runs; the apple's pick and place were
    // answered yes and were so
    for (a, b) in first.episodes.iter().zip(&second.episodes) {
        assert_eq!(a.outcome_checks, b.outcome_checks, "{}", a.spec.scenario);
        assert!(
            a.outcome_checks.iter().all(|j| j.truth.is_some()),
            "{}: {:?}",
            a.spec.scenario,
            a.outcome_checks
        );
    }
    let apple = &first.episodes[0];
    assert!(apple.success);
    for verb in [asp_verify::Verb::PickUp, asp_verify::Verb::Place] {
        assert!(
            apple.outcome_checks.iter().any(|j| j.verb == verb
                && j.answer == asp_verify::Answer::Yes
                && j.truth == Some(true)),
            "{verb:?}: {:?}",
            apple.outcome_checks
        );
    }
    assert!(first.summary.yes_no.iter().any(|v| v.verb == "all"));
    // the JSON results file records enough to run an episode again
    let file = data.path().join("results.json");
    std::fs::write(&file, serde_json::to_string(&first).unwrap()).unwrap();
    let recorded = recorded_episodes(&file).unwrap();
    assert_eq!(recorded.len(), 2);
    assert_eq!(recorded[1].spec, first.episodes[1].spec);
    let launcher = NodeGraph::default();
    assert_eq!(
        replay_difference(&recorded[1], &launcher).await.unwrap(),
        None
    );
    // and the comparison would notice a different trace
    let mut tampered = recorded[1].clone();
    tampered.trace["report"]["tool_calls"] = serde_json::json!(1000);
    let d = replay_difference(&tampered, &launcher)
        .await
        .unwrap()
        .unwrap();
    assert!(d.contains("tool_calls"), "{d}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_use_consecutive_seeds_and_the_summary_counts_them() {
    let data = tempfile::tempdir().unwrap();
    let s = suite(&["tabletop/mug_by_handle.yaml"]);
    let r = run_suite(
        &s,
        &settings(&data, 2, Some(40)),
        &InProcess::default(),
        &Quiet,
    )
    .await
    .unwrap();
    let seeds: Vec<u64> = r.episodes.iter().map(|e| e.spec.seed).collect();
    assert_eq!(seeds, vec![40, 41]);
    assert_eq!(r.seed, 40);
    assert_ne!(r.episodes[0].spec.goal_id(), r.episodes[1].spec.goal_id());
    assert_eq!(r.summary.per_scenario.len(), 1);
    assert_eq!(r.summary.per_scenario[0].runs, 2);
    let successes = r.episodes.iter().filter(|e| e.success).count() as u32;
    assert_eq!(r.summary.successes, successes);
    assert_eq!(r.summary.per_scenario[0].successes, successes);
    // world and verified success, and their confusion, count the same episodes
    let count = |f: &dyn Fn(&asp_eval::EpisodeResult) -> bool| {
        r.episodes.iter().filter(|e| f(e)).count() as u32
    };
    assert_eq!(r.summary.verified, count(&|e| e.verified));
    assert_eq!(r.summary.per_scenario[0].verified, r.summary.verified);
    assert_eq!(
        r.summary.false_success_claims,
        count(&|e| e.verified && !e.success)
    );
    assert_eq!(
        r.summary.false_failures,
        count(&|e| !e.verified && e.success)
    );
    assert!(
        (r.summary.agreement - f64::from(count(&|e| e.verified == e.success)) / 2.0).abs() < 1e-9
    );
    assert_eq!(
        r.summary.tool_calls,
        r.episodes
            .iter()
            .map(|e| u64::from(e.counts.tool_calls))
            .sum::<u64>()
    );
    assert_eq!(r.agent, "offline");
    assert_eq!(r.summary.llm_calls, 0, "the offline agent calls no model");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_report_shows_every_tool_call_and_verdict_with_valid_images() {
    let data = tempfile::tempdir().unwrap();
    let s = suite(&["tabletop/ring_bell.yaml"]);
    let overrides = s.all_overrides(&settings(&data, 1, None).overrides);
    let cfg = s
        .config(&config_dir(), &settings(&data, 1, None).overrides)
        .unwrap();
    let sc = &s.scenarios[0];
    let spec = EpisodeSpec {
        scenario: sc.spec.name.clone(),
        scenario_file: sc.file.clone(),
        run: 0,
        seed: 0,
        config_dir: config_dir(),
        overrides,
    };
    let (result, view) = run_episode(&spec, &cfg, sc, &InProcess::default(), true)
        .await
        .unwrap();
    let view = view.unwrap();
    let html = render_html(&view).unwrap();
    assert!(html.starts_with("<!DOCTYPE html>") && html.trim_end().ends_with("</html>"));
    assert!(!html.contains("<script"), "self-contained and static");

    // every tool call, with its tool name, and every verdict with its stage and check
    let mut verdicts = 0;
    for e in &result.trace.report.events {
        if let AgentEvent::ToolFinished {
            index,
            tool,
            verdicts: vs,
            ..
        } = e
        {
            let tag = format!(r#"data-index="{index}" data-tool="{tool}""#);
            assert!(html.contains(&tag), "call {index} ({tool}) missing");
            for v in vs {
                verdicts += 1;
                let check = asp_eval::report::esc(&v.check);
                assert!(html.contains(&check), "verdict {check:?} missing");
                assert!(html.contains(&format!("data-stage=\"{}\"", v.stage)));
            }
        }
    }
    assert!(result.counts.tool_calls > 0);
    assert!(
        verdicts > 0,
        "ring_bell's pushes are judged by the verifier"
    );
    assert_eq!(html.matches(r#"<li class="verdict "#).count(), verdicts);
    assert_eq!(
        html.matches(r#"<li class="verdict fail""#).count(),
        result.counts.verifier_rejections as usize
    );
    assert_eq!(
        html.matches(r#"<section class="call "#).count(),
        result.counts.tool_calls as usize
    );

    // valid embedded images: frames of every camera at the start and the end, the map's
    // objects, and the detected affordances
    let urls: Vec<&str> = html
        .split("src=\"")
        .skip(1)
        .map(|s| &s[..s.find('"').unwrap()])
        .collect();
    let cameras = view.start_frames.len();
    assert!(cameras >= 1 && view.end_frames.len() == cameras);
    let affordance_images = view
        .affordances
        .iter()
        .filter(|a| a.image.is_some())
        .count();
    assert!(
        !view.affordances.is_empty(),
        "the bell's button was detected"
    );
    assert_eq!(
        urls.len(),
        2 * cameras
            + view.objects.iter().filter(|o| o.image.is_some()).count()
            + affordance_images
            + usize::from(view.affordances_in_start.is_some())
    );
    for url in &urls {
        let img = decode_png_data_url(url).unwrap();
        assert!(img.width() > 0 && img.height() > 0);
    }
    // the start and end head frames differ: the robot acted
    assert_ne!(view.start_frames[0].1, view.end_frames[0].1);
    // the outcome and failure class are stated
    if let Some(f) = &result.failure {
        assert!(html.contains(&format!("<span class=\"badge warn\">{}</span>", f.class)));
    } else {
        assert!(html.contains(">SUCCESS<"));
    }
    assert!(html.contains(&format!("{:.2}", result.progress)));
    // written as one file
    let path = data.path().join("reports/ring_bell.html");
    asp_eval::write_report(&path, &view).unwrap();
    assert_eq!(std::fs::read_to_string(&path).unwrap(), html);
}
