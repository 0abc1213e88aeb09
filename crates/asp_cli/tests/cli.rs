//! The `asp` binary as a user meets it.
#![allow(clippy::unwrap_used)]

use std::process::Command;

fn asp(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn help_lists_every_subcommand() {
    let (code, out, _) = asp(&["--help"]);
    assert_eq!(code, 0);
    for sub in [
        "run",
        "launch",
        "eval",
        "bench",
        "map",
        "memory",
        "config",
        "understand",
    ] {
        assert!(
            out.lines().any(|l| l.trim_start().starts_with(sub)),
            "`{sub}` missing from:\n{out}"
        );
    }
}

#[test]
fn config_check_and_show() {
    let (code, out, err) = asp(&["config", "check"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("configuration OK") && out.contains("agent_node.yaml"),
        "{out}"
    );
    let (code, out, _) = asp(&["config", "show", "--set", "go_to_node.radius=1.1"]);
    assert_eq!(code, 0);
    assert!(out.contains("radius: 1.1"), "{out}");
}

#[test]
fn bad_configuration_exits_with_ex_config_and_names_the_key() {
    let (code, _, err) = asp(&["config", "check", "--set", "go_to_node.radius=-4"]);
    assert_eq!(code, 78);
    assert!(
        err.contains("go_to_node.radius") && err.contains("-4"),
        "{err}"
    );
}

#[test]
fn unbuilt_subcommands_say_so_and_fail() {
    let (code, out, err) = asp(&["bench", "agent"]);
    assert_eq!(code, 69);
    assert!(out.is_empty());
    assert!(
        err.contains("not built yet") && err.contains("Nothing was run"),
        "{err}"
    );
}

#[test]
fn memory_show_clear_and_compact_work_on_a_fresh_database() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let (code, out, err) = asp(&["memory", "show", "--set", &data]);
    assert_eq!(code, 0, "{err}");
    // a fresh database is seeded with the shipped common-sense priors
    let first = out.lines().next().unwrap();
    assert!(first.contains("common-sense priors, 0 episodes"), "{out}");
    assert!(
        out.lines().any(|l| l.trim_start().starts_with("prior")),
        "{out}"
    );
    assert!(dir.path().join("affordance_memory.redb").exists());
    let (code, out, err) = asp(&["memory", "clear", "--set", &data]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("removed 0 episodes and 0 capsules"), "{out}");
    let (code, _, err) = asp(&["memory", "compact", "--set", &data]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn map_of_the_default_world_reports_precision_and_recall() {
    let (code, out, err) = asp(&["map"]);
    assert_eq!(code, 0, "{err}");
    let line = out.lines().find(|l| l.contains("precision")).unwrap();
    let recall: f64 = line
        .split("recall ")
        .nth(1)
        .unwrap()
        .split(|c: char| c != '.' && !c.is_ascii_digit())
        .next()
        .unwrap()
        .parse()
        .unwrap();
    assert!((0.0..=1.0).contains(&recall), "{line}");
    // one line per ground-truth object, found or missed
    let listed = out
        .lines()
        .filter(|l| l.contains("found (voxel IoU") || l.ends_with("MISSED"))
        .count();
    assert!(listed > 0, "{out}");
}

#[test]
fn map_from_a_missing_bag_names_the_file() {
    let (code, _, err) = asp(&["map", "--bag", "/nonexistent/recording.mcap"]);
    assert_ne!(code, 0);
    assert!(err.contains("/nonexistent/recording.mcap"), "{err}");
}

#[test]
fn run_picks_up_the_mug_and_exits_zero_on_a_verified_success() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let (code, out, err) = asp(&["run", "pick up the mug", "--set", &data]);
    assert_eq!(code, 0, "{out}\n{err}");
    // the trace names the tool calls and the verifier's verdicts, then the result
    assert!(out.contains("object_retrieval(query=\"mug\")"), "{out}");
    assert!(out.contains("verifier gate PASS"), "{out}");
    assert!(out.contains("verifier outcome PASS"), "{out}");
    assert!(out.contains("result: SUCCESS (verified)"), "{out}");
    assert!(out.contains("final state: held mug_0"), "{out}");
}

#[test]
fn run_of_a_drive_goes_there_moves_nothing_and_is_verified_by_finding_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let (code, out, err) = asp(&["run", "please drive over to the bowl", "--set", &data]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("1. go to the bowl"), "{out}");
    assert!(out.contains("go_to(action=\"go to the bowl\""), "{out}");
    assert!(out.contains("verifier arrival PASS"), "{out}");
    // nothing was gated: no skill ran
    assert!(!out.contains("verifier gate"), "{out}");
    assert!(out.contains("result: SUCCESS (verified)"), "{out}");
    assert!(out.contains("final state: held nothing"), "{out}");
    // a room is found by the memory of a tour: with none, the drive fails before
    // anything moves, saying why and what to say instead
    let (code, out, err) = asp(&["run", "go to the kitchen", "--set", &data]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("cannot tell where the kitchen is"), "{out}");
    assert!(out.contains("no building memory"), "{out}");
    assert!(
        out.contains("go to the table in the kitchen"),
        "{out}\n{err}"
    );
    assert!(!out.contains("go_to("), "{out}");
}

#[test]
fn run_of_an_impossible_goal_fails_with_status_one() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let (code, out, err) = asp(&["run", "pick up the unicorn", "--set", &data]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("result: FAILED"), "{out}");
    assert!(out.contains("final state: held nothing"), "{out}");
}

fn scenario_path(rel: &str) -> String {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../config/scenarios")
        .join(rel)
        .display()
        .to_string()
}

#[test]
fn eval_runs_a_small_suite_prints_a_row_per_episode_and_writes_json_and_reports() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("small.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: small\ndescription: one quick scenario\nscenarios:\n  - {}\nparameters:\n  agent_node.limits.max_tool_calls: 12\n",
            scenario_path("tabletop/mug_by_handle.yaml")
        ),
    )
    .unwrap();
    let json = dir.path().join("results.json");
    let reports = dir.path().join("reports");
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let (code, out, err) = asp(&[
        "eval",
        "--suite",
        suite.to_str().unwrap(),
        "--runs",
        "2",
        "--seed",
        "7",
        "--llm",
        "offline",
        "--json",
        json.to_str().unwrap(),
        "--report-dir",
        reports.to_str().unwrap(),
        "--set",
        &data,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains("success progress tools llm tokens skills rejects"),
        "{out}"
    );
    let rows: Vec<&str> = out
        .lines()
        .filter(|l| l.starts_with("mug_by_handle "))
        .collect();
    assert_eq!(rows.len(), 2, "{out}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let episodes = results["episodes"].as_array().unwrap();
    assert_eq!(episodes.len(), 2);
    assert_eq!(episodes[1]["spec"]["seed"], 8);
    // the suite's parameter reached the episodes, and so did --llm
    let overrides = episodes[0]["spec"]["overrides"].to_string();
    assert!(
        overrides.contains("agent_node.limits.max_tool_calls=12"),
        "{overrides}"
    );
    assert!(
        overrides.contains("agent_node.llm.backend=offline"),
        "{overrides}"
    );
    // each row says what its episode's JSON says
    for (row, e) in rows.iter().zip(episodes) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        let success = if e["success"].as_bool().unwrap() {
            "yes"
        } else {
            "no"
        };
        assert_eq!(cols[2], success, "{row}");
        assert_eq!(cols[4], e["counts"]["tool_calls"].to_string(), "{row}");
        assert_eq!(cols[7], e["counts"]["skill_calls"].to_string(), "{row}");
    }
    let n = episodes.iter().filter(|e| e["success"] == true).count();
    assert!(out.contains(&format!("success: {n}/2")), "{out}");
    assert!(out.contains("wiring graph"), "{out}");
    for run in 0..2 {
        let html =
            std::fs::read_to_string(reports.join(format!("mug_by_handle_run{run}.html"))).unwrap();
        assert!(html.contains("data-tool=\"object_retrieval\""));
    }
}

#[test]
fn eval_of_an_unknown_suite_names_it_and_the_known_ones() {
    let (code, out, err) = asp(&["eval", "--suite", "tabeltop"]);
    assert_eq!(code, 64, "{out}\n{err}");
    assert!(
        err.contains("tabeltop") && err.contains("mobile, tabletop"),
        "{err}"
    );
}

#[test]
fn eval_of_a_malformed_suite_names_the_file_and_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let suite = dir.path().join("broken.yaml");
    std::fs::write(
        &suite,
        format!(
            "name: broken\nscenarios:\n  - {}\n  - no/such/scenario.yaml\n",
            scenario_path("tabletop/mug_by_handle.yaml")
        ),
    )
    .unwrap();
    let (code, out, err) = asp(&["eval", "--suite", suite.to_str().unwrap()]);
    assert_eq!(code, 78, "{out}\n{err}");
    assert!(
        err.contains("broken.yaml") && err.contains("scenarios[1] (no/such/scenario.yaml)"),
        "{err}"
    );
    assert!(out.is_empty(), "nothing ran: {out}");
}

#[test]
fn run_with_report_writes_a_self_contained_html_episode_report() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let report = dir.path().join("out/mug.html");
    let (code, out, err) = asp(&[
        "run",
        "pick up the mug",
        "--report",
        report.to_str().unwrap(),
        "--set",
        &data,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(
        out.contains(&format!("report: {}", report.display())),
        "{out}"
    );
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("data-tool=\"object_retrieval\""));
    assert!(html.contains("class=\"verdict pass\" data-stage=\"outcome\""));
    assert!(html.contains("data:image/png;base64,"));
    assert!(
        !html.contains("src=\"http"),
        "nothing is fetched from elsewhere"
    );
}

#[test]
fn launch_without_node_binaries_says_which_and_runs_nothing() {
    let empty = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args(["launch", "robot"])
        .env("ASP_NODE_BIN_DIR", empty.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(69), "{err}");
    assert!(
        err.contains("agent_node") && err.contains("Nothing was run"),
        "{err}"
    );
    // robot: the product nodes only
    assert!(!err.contains("sim_node"), "{err}");
    // a bad configuration is reported before anything is looked for
    let out = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args(["launch", "sim", "--set", "go_to_node.radius=-4"])
        .env("ASP_NODE_BIN_DIR", empty.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(78));
}

#[test]
fn eval_with_services_wiring_runs_without_the_ros_layer_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let data = format!("common.paths.data_dir={}", dir.path().display());
    let json = dir.path().join("r.json");
    let (code, out, err) = asp(&[
        "eval",
        "--suite",
        &scenario_path("tabletop/apple_in_bowl.yaml"),
        "--wiring",
        "services",
        "--json",
        json.to_str().unwrap(),
        "--set",
        &data,
    ]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.contains("wiring services"), "{out}");
    let results: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(results["episodes"].as_array().unwrap().len(), 1);
    // an unknown wiring is refused by name
    let (code, _, err) = asp(&["eval", "--suite", "tabletop", "--wiring", "dds"]);
    assert_ne!(code, 0);
    assert!(err.contains("dds"), "{err}");
}

#[test]
fn bench_plan_scores_the_goal_corpus_per_split_and_category() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("plan.json");
    let (code, out, err) = asp(&[
        "bench",
        "plan",
        "--split",
        "dev",
        "--misses",
        "3",
        "--json",
        json.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{err}");
    // dev: the held-out splits' misses are never listed, not even in a test log
    assert!(out.contains("| category | dev |"), "{out}");
    assert!(
        out.contains("| refusal |") && out.contains("**all**"),
        "{out}"
    );
    assert!(out.contains("dev misses by what differs first"), "{out}");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let goals = v[0]["goals"].as_array().unwrap();
    assert_eq!(v[0]["split"], "dev");
    assert!(goals.len() >= 400, "{}", goals.len());
    // every miss says what differed; every hit says nothing
    for g in goals {
        let exact = g["exact"].as_bool().unwrap();
        assert_eq!(exact, g["difference"].as_str().unwrap().is_empty(), "{g}");
    }
    let (code, _, err) = asp(&["bench", "plan", "--split", "nope"]);
    assert_eq!(code, 78);
    assert!(err.contains("no split named \"nope\""), "{err}");
    assert!(err.contains("there are: dev, test, test2"), "{err}");
    // every split scored, the held-out ones without their misses
    let (code, out, err) = asp(&["bench", "plan", "--misses", "5"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("| category | dev | test | test2 |"), "{out}");
    assert!(out.contains("listed only with --held-out-misses"), "{out}");
    let listed: Vec<&str> = out.lines().filter(|l| l.starts_with("  test")).collect();
    assert!(listed.is_empty(), "held-out misses listed: {listed:?}");
}

#[test]
fn understand_shows_the_structured_plan_or_why_not() {
    let (code, out, err) = asp(&[
        "understand",
        "could you put the small red cup from the left into the top drawer of the desk?",
    ]);
    assert_eq!(code, 0, "{err}");
    let steps: serde_json::Value = serde_yaml_ng::from_str(&out).unwrap();
    let steps = steps.as_array().unwrap();
    let verbs: Vec<&str> = steps.iter().map(|s| s["verb"].as_str().unwrap()).collect();
    assert_eq!(verbs, ["open", "pick_up", "place"], "{out}");
    assert_eq!(steps[1]["object"]["name"], "cup");
    assert_eq!(steps[1]["object"]["attributes"][0], "small");
    assert_eq!(steps[2]["location"]["name"], "desk");
    assert_eq!(steps[2]["location_part"], "top drawer");
    let (code, out, _) = asp(&["understand", "please fold my shirts"]);
    assert_eq!(code, 1);
    assert!(out.contains("refused (Unsupported)"), "{out}");
}

/// `asp understand … | head`: the reader goes before the plan is printed; the command
/// ends as Unix tools do (SIGPIPE), not with a panic in println!.
#[test]
fn understand_ends_quietly_when_its_reader_goes() {
    use std::os::unix::process::ExitStatusExt;
    let mut child = Command::new(env!("CARGO_BIN_EXE_asp"))
        .args([
            "understand",
            "put the red cup into the top drawer of the desk",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // closed before the embedder has loaded, so the first line already meets a closed pipe
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("panicked"), "{err}");
    assert!(
        out.status.success() || out.status.signal() == Some(13),
        "{:?}: {err}",
        out.status
    );
}

#[test]
fn verbs_no_list_knows_are_read_with_the_shape_of_their_clause() {
    let verbs = |goal: &str| -> Vec<String> {
        let (code, out, err) = asp(&["understand", goal]);
        assert_eq!(code, 0, "{goal}: {out} {err}");
        let body: String = out
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let steps: serde_json::Value = serde_yaml_ng::from_str(&body).unwrap();
        steps
            .as_array()
            .unwrap()
            .iter()
            .map(|s| {
                let place = s["location"]["name"].as_str().map(|l| format!(" {l}"));
                format!(
                    "{} {}{}",
                    s["verb"].as_str().unwrap(),
                    s["object"]["name"].as_str().unwrap(),
                    place.unwrap_or_default()
                )
            })
            .collect()
    };
    // the state it ends in decides, and is not part of the object's name
    assert_eq!(verbs("slam the cupboard closed"), ["close cupboard"]);
    assert_eq!(verbs("swing the gate open"), ["open gate"]);
    // a taking verb said with "onto": the thing is put there
    assert_eq!(
        verbs("heave the box onto the table"),
        ["pick_up box", "place box table"]
    );
    // undoing a closing verb opens
    assert_eq!(verbs("unlatch the gate"), ["open gate"]);
    // a harm stays a harm whatever the shape
    let (code, out, _) = asp(&["understand", "smash the vase on the floor"]);
    assert_eq!(code, 1);
    assert!(out.contains("refused (Unsafe)"), "{out}");
}

#[test]
fn relation_words_no_list_knows_are_read_by_meaning_or_asked_about() {
    let yaml = |out: &str| -> serde_json::Value {
        let body: String = out
            .lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with("asks back"))
            .map(|l| format!("{l}\n"))
            .collect();
        serde_yaml_ng::from_str(&body).unwrap()
    };
    // clear: acted on, the object's name kept clean for retrieval, and said so
    let (code, out, err) = asp(&["understand", "grab the cup adjacent to the sink"]);
    assert_eq!(code, 0, "{err}");
    let steps = yaml(&out);
    assert_eq!(steps[0]["object"]["name"], "cup", "{out}");
    assert_eq!(steps[0]["object"]["relation"]["kind"], "near", "{out}");
    assert_eq!(
        steps[0]["object"]["relation"]["anchor"]["name"], "sink",
        "{out}"
    );
    assert!(out.contains("\"adjacent to\" read as Near"), "{out}");
    // through a region of the anchor
    let (code, out, err) = asp(&["understand", "get the remote in the vicinity of the tv"]);
    assert_eq!(code, 0, "{err}");
    let steps = yaml(&out);
    assert_eq!(steps[0]["object"]["relation"]["kind"], "near", "{out}");
    assert_eq!(
        steps[0]["object"]["relation"]["anchor"]["name"], "tv",
        "{out}"
    );
    // too close to call: asked back, naming the words
    let (code, out, _) = asp(&["understand", "grab the pen to the side of the notebook"]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("asks back") && out.contains("\"to the side of\""),
        "{out}"
    );
    // a participle before a known relation is not part of the name
    let (code, out, err) = asp(&["understand", "grab the keys tucked under the pillow"]);
    assert_eq!(code, 0, "{err}");
    let steps = yaml(&out);
    assert_eq!(steps[0]["object"]["name"], "key", "{out}");
    assert_eq!(steps[0]["object"]["relation"]["kind"], "under", "{out}");
}

#[test]
fn owners_no_list_knows_are_read_by_meaning_and_never_take_a_part() {
    let object = |goal: &str| -> (String, Option<String>) {
        let (code, out, err) = asp(&["understand", goal]);
        assert_eq!(code, 0, "{goal}: {err}");
        let steps: serde_json::Value = serde_yaml_ng::from_str(&out).unwrap();
        let name = steps[0]["object"]["name"].as_str().unwrap().to_string();
        let part = steps[0]["part"].as_str().map(str::to_string);
        (name, part)
    };
    // people no list names own the thing after 's
    assert_eq!(object("hand me the toddler's cup"), ("cup".into(), None));
    assert_eq!(object("bring me the visitor's coat"), ("coat".into(), None));
    // a thing's part no list knows stays its part
    assert_eq!(
        object("pick up the teapot's infuser"),
        ("teapot".into(), Some("infuser".into()))
    );
    // "fan" reads nearly as much a person as a thing: its switch stays a part
    assert_eq!(
        object("press the fan's switch"),
        ("fan".into(), Some("switch".into()))
    );
}

/// `asp memory build --bag` on a bag recorded in simulation (the default world's head
/// camera turned round in place, with ground truth) builds the building memory through
/// the VLM stand-in, and `asp memory find` answers from it; misuse is named.
#[test]
fn memory_build_from_a_recorded_tour_and_find() {
    use asp_core::robot::BaseNavigation;
    let dir = tempfile::tempdir().unwrap();
    let data = format!("/**.paths.data_dir={}", dir.path().display());
    let cfg = asp_config::ConfigLoader::new()
        .dir(std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../config"))
        .unwrap()
        .set(&data)
        .unwrap()
        .load()
        .unwrap();
    let sim = asp_simulation::simulation(&cfg, None).unwrap();
    let bag = dir.path().join("tour.mcap");
    let mut recorder =
        asp_perception::record::TourRecorder::create(&bag, &cfg.config.object_map_node.replay)
            .unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let start = runtime.block_on(sim.base_pose()).unwrap();
    for k in 0..4 {
        let heading = start.theta + k as f32 * std::f32::consts::FRAC_PI_3 / 2.0;
        sim.with_state_mut(|s| {
            s.robot.base.theta = heading;
            s.time += 1.0;
        });
        recorder.record(&sim.render("head").unwrap()).unwrap();
    }
    assert_eq!(recorder.finish().unwrap(), 4);

    let (code, out, err) = asp(&[
        "memory",
        "build",
        "--bag",
        bag.to_str().unwrap(),
        "--set",
        &data,
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("4 views added"), "{out}");
    assert!(dir.path().join("building_memory.redb").exists());
    let (code, out, err) = asp(&["memory", "find", "--query", "the mug", "--set", &data]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("views of 4"), "{out}");
    assert!(out.contains("mug"), "{out}");
    // and what object_retrieval would go and look at
    assert!(
        out.lines().any(|l| l.starts_with("recall: ")
            && l.contains("mug")
            && l.contains("looked at from")),
        "{out}"
    );

    // misuse: no bag, no query, a missing bag, flags of another action
    let (code, _, err) = asp(&["memory", "build", "--set", &data]);
    assert_eq!(code, 64, "{err}");
    assert!(err.contains("--bag"), "{err}");
    let (code, _, err) = asp(&["memory", "find", "--query", " ", "--set", &data]);
    assert_eq!(code, 64, "{err}");
    let (code, _, err) = asp(&[
        "memory",
        "build",
        "--bag",
        "/nonexistent/tour.mcap",
        "--set",
        &data,
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("/nonexistent/tour.mcap"), "{err}");
    let (code, _, err) = asp(&["memory", "show", "--query", "mug", "--set", &data]);
    assert_eq!(code, 64, "{err}");
}
