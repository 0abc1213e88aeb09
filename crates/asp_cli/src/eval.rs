//! `asp eval --suite <name|file>`: runs a scenario suite on the embedded simulator and
//! prints, per episode, success, progress, tool calls, LLM calls and tokens, skill calls,
//! verifier rejections, wall time and the failure class; then `success: N/M`.
//! Exit status 0 when the suite ran, whatever its success rate.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Mutex;

use asp_config::sections::agent::LlmBackend;
use asp_eval::{
    EpisodeResult, EpisodeSpec, EvalError, EvalSettings, InProcess, NodeGraph, Progress, Suite,
};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// What `asp eval` was asked.
#[derive(Debug, Clone)]
pub struct EvalOptions {
    pub suite: String,
    pub llm: Option<LlmBackend>,
    pub runs: u32,
    pub seed: Option<u64>,
    pub json: Option<PathBuf>,
    pub report_dir: Option<PathBuf>,
    pub wiring: Wiring,
    pub concept_memory: ConceptMemoryChoice,
}

/// What the concept memory holds when an episode starts (`--concept-memory`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ConceptMemoryChoice {
    /// Nothing: every episode grounds unknown words from the web.
    Empty,
    /// What the earlier episodes of the run learnt (a warm memory).
    Shared,
}

/// How `asp eval` joins the nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Wiring {
    /// The ROS node graph on an in-process bus.
    Graph,
    /// The nodes' services called directly.
    Services,
}

/// Exit status for an unknown suite name (sysexits' EX_USAGE).
const EXIT_USAGE: u8 = 64;
/// Exit status for a malformed suite, scenario or configuration (EX_CONFIG).
const EXIT_CONFIG: u8 = 78;
/// Exit status when the suite could not be run or its results not written.
const EXIT_FAILED: u8 = 1;

fn exit_for(e: &EvalError) -> ExitCode {
    ExitCode::from(match e {
        EvalError::UnknownSuite { .. } => EXIT_USAGE,
        EvalError::Suite { .. } | EvalError::Scenario(_) | EvalError::Config { .. } => EXIT_CONFIG,
        EvalError::Io { .. }
        | EvalError::Start { .. }
        | EvalError::Results { .. }
        | EvalError::Report(_) => EXIT_FAILED,
    })
}

const HEADER: &str = "scenario                  run success progress tools llm tokens skills rejects  wall_s failure";

fn row(r: &EpisodeResult) -> String {
    format!(
        "{:<25} {:>3} {:<7} {:>8.2} {:>5} {:>3} {:>6} {:>6} {:>7} {:>7.2} {}",
        r.spec.scenario,
        r.spec.run,
        if r.success { "yes" } else { "no" },
        r.progress,
        r.counts.tool_calls,
        r.counts.llm_calls,
        r.counts.tokens(),
        r.counts.skill_calls,
        r.counts.verifier_rejections,
        r.wall.total_ms / 1e3,
        r.failure
            .as_ref()
            .map_or("-".to_owned(), |c| c.class.to_string()),
    )
}

/// Progress bar on stderr (hidden when stderr is not a terminal) and one line per
/// finished episode on stdout.
struct Bars {
    bar: ProgressBar,
    out: Mutex<()>,
}

impl Bars {
    fn new(total: u64) -> Self {
        let bar = ProgressBar::with_draw_target(Some(total), ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {bar:30} {pos}/{len} episodes, eta {eta} — {msg}",
        ) {
            bar.set_style(style);
        }
        Self {
            bar,
            out: Mutex::new(()),
        }
    }

    fn println(&self, line: &str) {
        let _guard = self
            .out
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        self.bar.suspend(|| {
            // a closed stdout (a pipe to `head`) must not stop the evaluation
            let _ = writeln!(std::io::stdout().lock(), "{line}");
        });
    }
}

impl Progress for Bars {
    fn started(&self, spec: &EpisodeSpec, _index: usize, _total: usize) {
        self.bar.set_message(format!(
            "{} (run {}, seed {})",
            spec.scenario, spec.run, spec.seed
        ));
    }

    fn finished(&self, result: &EpisodeResult, _index: usize, _total: usize) {
        self.println(&row(result));
        self.bar.inc(1);
    }

    fn touring(&self, world: &str, run: u32) {
        self.bar
            .set_message(format!("touring {world} (run {run}) to build its memory"));
    }

    fn toured(&self, t: &asp_eval::runner::TourResult) {
        self.println(&format!(
            "tour of {} (run {}, seed {}): {} stops, {:.0} m, {:.0} m² of floor seen ({}), {} views, {} objects, memory levels {:?}; {:.0} s touring, {:.0} s building",
            t.world,
            t.run,
            t.seed,
            t.stops,
            t.travelled_m,
            t.free_area_m2,
            t.ended,
            t.views,
            t.objects,
            t.levels,
            t.tour_s,
            t.build_s
        ));
    }
}

/// Runs the suite; see the module notes for the exit status.
pub fn eval(config_dir: &Path, overrides: &[String], opts: &EvalOptions) -> ExitCode {
    let file = match asp_eval::suite::resolve(&opts.suite, config_dir) {
        Ok(f) => f,
        Err(e) => {
            eprintln!("asp eval: {e}");
            return exit_for(&e);
        }
    };
    let suite = match Suite::load(&file) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("asp eval: bad suite:\n{e}");
            return exit_for(&e);
        }
    };
    let mut extra = overrides.to_vec();
    if let Some(llm) = opts.llm {
        extra.push(format!(
            "agent_node.llm.backend={}",
            match llm {
                LlmBackend::Offline => "offline",
                LlmBackend::Openai => "openai",
            }
        ));
    }
    let settings = EvalSettings {
        config_dir: config_dir.to_path_buf(),
        overrides: extra,
        runs: opts.runs.max(1),
        seed: opts.seed,
        report_dir: opts.report_dir.clone(),
        concept_memory: match opts.concept_memory {
            ConceptMemoryChoice::Empty => asp_eval::ConceptMemory::Empty,
            ConceptMemoryChoice::Shared => asp_eval::ConceptMemory::Shared,
        },
    };
    // check the configuration before starting anything
    if let Err(e) = suite.config(config_dir, &settings.overrides) {
        eprintln!("asp eval: configuration error:\n{e}");
        return exit_for(&e);
    }
    let runtime = match asp_runtime::async_runtime() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("asp eval: cannot start the async runtime: {e}");
            return ExitCode::from(EXIT_FAILED);
        }
    };
    let total = suite.scenarios.len() as u64 * u64::from(settings.runs);
    let bars = Bars::new(total);
    bars.println(&format!(
        "suite {} ({}): {} scenario(s) × {} run(s) — {}",
        suite.spec.name,
        file.display(),
        suite.scenarios.len(),
        settings.runs,
        suite.spec.description
    ));
    bars.println(HEADER);
    // by default the node graph on an in-process ROS bus: the node code of `asp launch`
    let launcher: Box<dyn asp_eval::Launcher> = match opts.wiring {
        Wiring::Graph => Box::new(NodeGraph::default()),
        Wiring::Services => Box::new(InProcess::default()),
    };
    let results = runtime.block_on(asp_eval::run_suite(
        &suite,
        &settings,
        launcher.as_ref(),
        &bars,
    ));
    bars.bar.finish_and_clear();
    let results = match results {
        Ok(r) => r,
        Err(e) => {
            eprintln!("asp eval: {e}");
            return exit_for(&e);
        }
    };
    let s = &results.summary;
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "success: {}/{} ({:.1} %), mean progress {:.2}, agent {}, seed {}, wiring {}",
        s.successes,
        s.episodes,
        s.success_rate * 100.0,
        s.mean_progress,
        results.agent,
        results.seed,
        match opts.wiring {
            Wiring::Graph => "graph",
            Wiring::Services => "services",
        }
    );
    let _ = writeln!(
        out,
        "verified: {}/{} said done; false success claims {} (said done, not done), false failures {} (done, not confirmed); verified agrees with the world on {:.1} %",
        s.verified,
        s.episodes,
        s.false_success_claims,
        s.false_failures,
        s.agreement * 100.0
    );
    let _ = writeln!(
        out,
        "per scenario (world / verified of runs): {}",
        s.per_scenario
            .iter()
            .map(|p| format!("{} {}/{}/{}", p.scenario, p.successes, p.verified, p.runs))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let _ = writeln!(
        out,
        "wall time: {:.2} s per goal, {:.2} s per episode (system start and map building included)",
        s.mean_goal_s, s.mean_episode_s
    );
    if !s.per_level.is_empty() {
        let _ = writeln!(
            out,
            "per level: {}",
            s.per_level
                .iter()
                .map(|l| format!(
                    "{} {}/{} ({:.1} %; {:.1} web calls, {:.2} s per goal)",
                    l.level,
                    l.successes,
                    l.runs,
                    100.0 * l.success_rate,
                    l.web_calls_per_goal,
                    l.mean_goal_s
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if !s.yes_no.is_empty() {
        let pct = |x: Option<f64>| x.map_or("–".to_owned(), |x| format!("{:.3}", x));
        let _ = writeln!(
            out,
            "outcome Yes/No against the world (precision, recall; yes/no answers judged, cannot tell, unjudged): {}",
            s.yes_no
                .iter()
                .map(|v| format!(
                    "{} {} {} ({}; {}; {})",
                    v.verb,
                    pct(v.precision()),
                    pct(v.recall()),
                    v.true_yes + v.false_yes + v.true_no + v.false_no,
                    v.cannot_tell,
                    v.unjudged
                ))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(
        out,
        "totals: {} tool calls, {} LLM calls, {} tokens (${:.4}), {} skill calls, {} verifier rejections, {} web calls",
        s.tool_calls,
        s.llm_calls,
        s.tokens,
        s.cost_usd,
        s.skill_calls,
        s.verifier_rejections,
        s.web_calls
    );
    if !s.failures.is_empty() {
        let _ = writeln!(
            out,
            "failures: {}",
            s.failures
                .iter()
                .map(|(c, n)| format!("{c} {n}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(dir) = &opts.report_dir {
        let _ = writeln!(
            out,
            "reports: {} HTML file(s) in {}",
            results.reports.len(),
            dir.display()
        );
    }
    if let Some(path) = &opts.json {
        let written = serde_json::to_string(&results)
            .map_err(|e| e.to_string())
            .and_then(|text| std::fs::write(path, text).map_err(|e| e.to_string()));
        match written {
            Ok(()) => {
                let _ = writeln!(out, "results: {}", path.display());
            }
            Err(e) => {
                eprintln!("asp eval: cannot write {}: {e}", path.display());
                return ExitCode::from(EXIT_FAILED);
            }
        }
    }
    ExitCode::SUCCESS
}
