//! The episode runner: suite × runs, each episode a fresh simulation of its scenario and
//! a freshly started system, judged by the scenario's predicates on the simulator state.
//!
//! How the system under test starts is behind [`Launcher`]: [`crate::NodeGraph`] starts
//! the ROS node graph (what `asp eval` uses); [`InProcess`] wires the nodes' services
//! directly ([`asp_simulation::SimSystem`]), with no ROS layer between them.

use std::path::{Path, PathBuf};
use std::time::Instant;

use asp_agent::GoalReport;
use asp_config::LoadedConfig;
use asp_core::robot::CancellationToken;
use asp_sim::SimRobot;
use asp_sim::scenario::Scenario;
use asp_simulation::{SimSystem, SystemOptions};
use asp_system::ports::{MapSnapshot, ObjectMapPort};
use asp_system::{JournalEntry, verified_success};
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tracing::{Instrument, info, info_span, warn};

use crate::episode::{
    Counts, EpisodeResult, EpisodeSpec, FailureClass, Trace, WallTimes, classify, comparable_trace,
    first_difference,
};
use crate::error::EvalError;
use crate::outcome_truth::{YesNoScore, judge_outcomes};
use crate::report::{EpisodeView, Judgement};
use crate::suite::{Suite, TourSpec, load_config};

/// A started system under test, as the runner drives it.
#[async_trait]
pub trait RunningSystem: Send + Sync {
    /// Carries out `goal` to its end.
    async fn run_goal(&self, goal_id: &str, goal: &str, cancel: CancellationToken) -> GoalReport;
    /// What every backend call found so far.
    fn journal(&self) -> Vec<JournalEntry>;
    /// The object map now.
    async fn map(&self) -> MapSnapshot;
    /// Requests the simulation's web search answered so far (searches and pictures);
    /// 0 without one.
    fn web_requests(&self) -> u32;
}

/// Requests `web` answered so far (searches and pictures).
pub(crate) fn web_requests(web: &asp_web_standin::WebStandIn) -> u32 {
    u32::try_from(web.searches() + web.downloads()).unwrap_or(u32::MAX)
}

/// Starts the system under test over a simulation.
#[async_trait]
pub trait Launcher: Send + Sync {
    /// Starts every node's logic with `cfg` over `sim` (the runner keeps its own handle on
    /// `sim` to judge the episode).
    async fn launch(
        &self,
        cfg: &LoadedConfig,
        sim: SimRobot,
    ) -> Result<Box<dyn RunningSystem>, String>;
}

/// Every node's logic in this process, over the embedded simulator.
#[derive(Debug, Clone)]
pub struct InProcess {
    pub options: SystemOptions,
}

impl Default for InProcess {
    /// Without the affordance memory, so episodes do not depend on earlier ones.
    fn default() -> Self {
        Self {
            options: SystemOptions {
                memory: false,
                ..SystemOptions::default()
            },
        }
    }
}

struct InProcessSystem(SimSystem);

#[async_trait]
impl RunningSystem for InProcessSystem {
    async fn run_goal(&self, goal_id: &str, goal: &str, cancel: CancellationToken) -> GoalReport {
        self.0.agent.run_goal(goal_id, goal, cancel).await
    }

    fn journal(&self) -> Vec<JournalEntry> {
        self.0.journal.entries()
    }

    async fn map(&self) -> MapSnapshot {
        self.0.map.snapshot().await
    }

    fn web_requests(&self) -> u32 {
        self.0.web_standin.as_ref().map_or(0, web_requests)
    }
}

#[async_trait]
impl Launcher for InProcess {
    async fn launch(
        &self,
        cfg: &LoadedConfig,
        sim: SimRobot,
    ) -> Result<Box<dyn RunningSystem>, String> {
        let system = SimSystem::start(cfg, sim, &self.options, None, None)
            .await
            .map_err(|e| e.to_string())?;
        Ok(Box::new(InProcessSystem(system)))
    }
}

/// Hears about episodes as they start and finish (progress bars, printing).
pub trait Progress: Send + Sync {
    fn started(&self, _spec: &EpisodeSpec, _index: usize, _total: usize) {}
    fn finished(&self, _result: &EpisodeResult, _index: usize, _total: usize) {}
    /// A tour (`tour:` in the suite) begins on `world` for `run`, and ended.
    fn touring(&self, _world: &str, _run: u32) {}
    fn toured(&self, _tour: &TourResult) {}
}

/// Hears nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Progress for Quiet {}

/// How to run a suite.
#[derive(Debug, Clone)]
pub struct EvalSettings {
    /// The folder of parameter files.
    pub config_dir: PathBuf,
    /// The caller's overrides, applied after the suite's parameters.
    pub overrides: Vec<String>,
    /// Runs per scenario (at least 1).
    pub runs: u32,
    /// Base seed; run `r` uses `seed + r`. `None`: `sim_node.seed`.
    pub seed: Option<u64>,
    /// Write one HTML report per episode here.
    pub report_dir: Option<PathBuf>,
    /// What the concept memory (words grounded from the web, with the search cache)
    /// holds when an episode starts.
    pub concept_memory: ConceptMemory,
}

/// What the concept memory (`object_map_node.concepts.database`) holds when an episode
/// starts; a suite run never reads or writes the user's own.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConceptMemory {
    /// Nothing: every episode grounds its words from the web (the cost of a new word).
    #[default]
    Empty,
    /// What the episodes before it in this suite run learnt (the cost once warm).
    Shared,
}

/// Success of one scenario over its runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScenarioSummary {
    pub scenario: String,
    pub runs: u32,
    /// The scenario's success predicate held on the world (the judge's word).
    pub successes: u32,
    /// The system said the goal was done (the verifier's word).
    #[serde(default)]
    pub verified: u32,
    pub mean_progress: f64,
}

/// The figures of a suite run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub episodes: u32,
    /// World success: the scenario's predicate holds at the end (the judge's word).
    pub successes: u32,
    pub success_rate: f64,
    /// Verified success: the system's own answer (the verifier confirmed the goal).
    #[serde(default)]
    pub verified: u32,
    /// Said done, not done: the worst error a robot can report.
    #[serde(default)]
    pub false_success_claims: u32,
    /// Done, but not confirmed.
    #[serde(default)]
    pub false_failures: u32,
    /// Share of episodes whose verified answer matches the world.
    #[serde(default)]
    pub agreement: f64,
    pub mean_progress: f64,
    /// Mean wall time of a goal (`run_goal`), seconds.
    pub mean_goal_s: f64,
    /// Mean wall time of an episode (system start and map build, goal, judging), seconds.
    pub mean_episode_s: f64,
    pub tool_calls: u64,
    pub llm_calls: u64,
    pub tokens: u64,
    pub cost_usd: f64,
    pub skill_calls: u64,
    pub verifier_rejections: u64,
    /// Requests to the web search (grounding unknown words).
    #[serde(default)]
    pub web_calls: u64,
    /// Failed episodes by class.
    pub failures: std::collections::BTreeMap<FailureClass, u32>,
    pub per_scenario: Vec<ScenarioSummary>,
    /// By the scenarios' levels, in order of appearance (empty when none has one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub per_level: Vec<LevelSummary>,
    /// The verifier's Yes/No outcome answers against the world, per verb and in all.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub yes_no: Vec<YesNoScore>,
}

/// The episodes of one level (the concepts suite's easy, medium, hard).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LevelSummary {
    pub level: String,
    pub runs: u32,
    pub successes: u32,
    pub success_rate: f64,
    /// Mean requests to the web search per goal.
    pub web_calls_per_goal: f64,
    /// Mean wall time of a goal, seconds.
    pub mean_goal_s: f64,
}

impl LevelSummary {
    /// One per level of `episodes`, in order of first appearance.
    fn of(episodes: &[EpisodeResult]) -> Vec<LevelSummary> {
        let mut levels: Vec<&str> = Vec::new();
        for l in episodes.iter().filter_map(|e| e.level.as_deref()) {
            if !levels.contains(&l) {
                levels.push(l);
            }
        }
        levels
            .into_iter()
            .map(|level| {
                let of: Vec<&EpisodeResult> = episodes
                    .iter()
                    .filter(|e| e.level.as_deref() == Some(level))
                    .collect();
                let n = of.len() as f64;
                let successes = of.iter().filter(|e| e.success).count() as u32;
                LevelSummary {
                    level: level.to_owned(),
                    runs: of.len() as u32,
                    successes,
                    success_rate: f64::from(successes) / n,
                    web_calls_per_goal: of
                        .iter()
                        .map(|e| f64::from(e.counts.web_calls))
                        .sum::<f64>()
                        / n,
                    mean_goal_s: of.iter().map(|e| e.wall.goal_ms).sum::<f64>() / n / 1e3,
                }
            })
            .collect()
    }
}

impl Summary {
    pub fn of(episodes: &[EpisodeResult]) -> Summary {
        let n = episodes.len().max(1) as f64;
        let mut failures = std::collections::BTreeMap::new();
        let mut per_scenario: Vec<ScenarioSummary> = Vec::new();
        for e in episodes {
            if let Some(c) = &e.failure {
                *failures.entry(c.class).or_insert(0) += 1;
            }
            let i = match per_scenario
                .iter()
                .position(|s| s.scenario == e.spec.scenario)
            {
                Some(i) => i,
                None => {
                    per_scenario.push(ScenarioSummary {
                        scenario: e.spec.scenario.clone(),
                        runs: 0,
                        successes: 0,
                        verified: 0,
                        mean_progress: 0.0,
                    });
                    per_scenario.len() - 1
                }
            };
            let s = &mut per_scenario[i];
            s.mean_progress =
                (s.mean_progress * f64::from(s.runs) + e.progress) / f64::from(s.runs + 1);
            s.runs += 1;
            s.successes += u32::from(e.success);
            s.verified += u32::from(e.verified);
        }
        let successes = episodes.iter().filter(|e| e.success).count() as u32;
        let count =
            |f: &dyn Fn(&EpisodeResult) -> bool| episodes.iter().filter(|e| f(e)).count() as u32;
        let false_success_claims = count(&|e| e.verified && !e.success);
        let false_failures = count(&|e| !e.verified && e.success);
        let sum = |f: &dyn Fn(&EpisodeResult) -> f64| episodes.iter().map(f).sum::<f64>();
        let total = |f: &dyn Fn(&Counts) -> u64| episodes.iter().map(|e| f(&e.counts)).sum();
        Summary {
            episodes: episodes.len() as u32,
            successes,
            success_rate: f64::from(successes) / n,
            verified: count(&|e| e.verified),
            false_success_claims,
            false_failures,
            agreement: f64::from(count(&|e| e.verified == e.success)) / n,
            mean_progress: sum(&|e| e.progress) / n,
            mean_goal_s: sum(&|e| e.wall.goal_ms) / n / 1e3,
            mean_episode_s: sum(&|e| e.wall.total_ms) / n / 1e3,
            tool_calls: total(&|c| u64::from(c.tool_calls)),
            llm_calls: total(&|c| c.llm_calls),
            tokens: total(&Counts::tokens),
            cost_usd: sum(&|e| e.counts.cost_usd),
            skill_calls: total(&|c| u64::from(c.skill_calls)),
            verifier_rejections: total(&|c| u64::from(c.verifier_rejections)),
            web_calls: total(&|c| u64::from(c.web_calls)),
            failures,
            per_scenario,
            per_level: LevelSummary::of(episodes),
            yes_no: YesNoScore::per_verb(episodes.iter().flat_map(|e| &e.outcome_checks)),
        }
    }
}

/// A suite run: what ran, every episode, and the summary. This is the JSON `asp eval
/// --json` writes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SuiteResults {
    pub suite: String,
    pub description: String,
    pub suite_file: PathBuf,
    pub runs: u32,
    pub seed: u64,
    /// `offline` or `llm`.
    pub agent: String,
    pub episodes: Vec<EpisodeResult>,
    pub summary: Summary,
    /// HTML reports written, one per episode, when asked.
    #[serde(default)]
    pub reports: Vec<PathBuf>,
    /// The tours the episodes started from (suites with `tour:`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tours: Vec<TourResult>,
}

/// A tour a suite's episodes started from: the exploration and the memory built from
/// its recording.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TourResult {
    /// The world file, as the scenarios name it.
    pub world: String,
    pub run: u32,
    pub seed: u64,
    pub stops: usize,
    pub travelled_m: f64,
    /// Why the exploration ended.
    pub ended: String,
    /// Floor seen free, square metres.
    pub free_area_m2: f64,
    /// Views recorded and put in the memory, the objects the VLM listed in them, and the
    /// memory's clusters per level (level 4 first).
    pub views: usize,
    pub objects: usize,
    pub levels: Vec<usize>,
    /// Wall-clock seconds of the tour and of the memory build.
    pub tour_s: f64,
    pub build_s: f64,
}

/// Tours `scenario`'s world as written (before its setup) from `tour.start` with the
/// suite's, the world's and the tour's parameters, in `dir`; the tour and the memory
/// file its episodes use.
async fn tour_world(
    suite: &Suite,
    tour: &TourSpec,
    settings: &EvalSettings,
    scenario: &Scenario,
    run: u32,
    seed: u64,
    dir: &Path,
) -> Result<(TourResult, PathBuf), EvalError> {
    let fail = |message: String| EvalError::Start {
        scenario: format!("the tour of {}", scenario.spec.world),
        run,
        message,
    };
    let mut extra = suite.tour_overrides.clone();
    extra.extend(settings.overrides.iter().cloned());
    extra.push(format!("common.paths.data_dir={}", dir.display()));
    // the world's parameters too (a building's tour rides to every storey)
    let cfg = episode_config(
        &suite.world_config(&settings.config_dir, &scenario.spec.world, &extra)?,
        seed,
    );
    let world_file = asp_sim::scenario::config_root_of(&scenario.file).join(&scenario.spec.world);
    let site = asp_sim::storeys::load_site(&world_file).map_err(|e| fail(e.to_string()))?;
    let mut spec = scenario.spec.clone();
    spec.setup = Default::default();
    spec.robot = tour.start.clone();
    let before =
        Scenario::from_site(&scenario.file, spec, site).map_err(|e| fail(e.to_string()))?;
    let sim = asp_simulation::scenario_simulation(&cfg, &before, Some(seed))
        .map_err(|e| fail(e.to_string()))?;
    let t = asp_simulation::tour::tour_into_memory(&cfg, sim)
        .await
        .map_err(|e| fail(e.to_string()))?;
    let result = TourResult {
        world: scenario.spec.world.clone(),
        run,
        seed,
        stops: t.stops,
        travelled_m: f64::from(t.travelled_m),
        ended: format!("{:?}", t.ended),
        free_area_m2: f64::from(t.free_area_m2),
        views: t.memory.views,
        objects: t.memory.instances,
        levels: t.memory.levels.clone(),
        tour_s: t.tour_s,
        build_s: t.build_s,
    };
    // the bag is the memory's source, not needed by the episodes
    if let Err(e) = std::fs::remove_file(&t.bag) {
        tracing::warn!(bag = %t.bag.display(), error = %e, "cannot remove the tour's recording");
    }
    Ok((result, t.memory.database))
}

/// Renders every camera of `sim` now.
pub fn render_cameras(sim: &SimRobot) -> Vec<(String, asp_core::RgbdFrame)> {
    sim.cameras()
        .into_iter()
        .filter_map(|c| match sim.render(&c) {
            Ok(f) => Some((c, f)),
            Err(e) => {
                tracing::warn!(camera = %c, error = %e, "cannot render a report frame");
                None
            }
        })
        .collect()
}

/// The configuration of an episode: the simulated models' draws are seeded by the
/// episode's seed too (added to their configured seeds), so the runs of a scenario are
/// independent trials of the models' mistakes, not one trial repeated. Seed 0 keeps the
/// configured seeds.
pub fn episode_config(cfg: &LoadedConfig, seed: u64) -> LoadedConfig {
    let mut c = cfg.clone();
    let aff = &mut c.config.affordance_node.simulated_models.seed;
    *aff = aff.wrapping_add(seed);
    let map = &mut c.config.object_map_node.simulation.seed;
    *map = map.wrapping_add(seed);
    let outcome = &mut c.config.verifier_node.outcome.simulated_seed;
    *outcome = outcome.wrapping_add(seed);
    c
}

/// Worlds kept per episode for judging outcome answers: an episode's motions, survey
/// included, with room to spare.
const WORLD_HISTORY: usize = 4096;

/// Runs one episode: a fresh simulation of `scenario` seeded with `spec.seed`, a fresh
/// system from `launcher`, the goal, and the judgement. With `capture`, also what an
/// HTML report shows (camera frames are rendered from a twin simulation at the start,
/// so capturing does not change the episode).
pub async fn run_episode(
    spec: &EpisodeSpec,
    cfg: &LoadedConfig,
    scenario: &Scenario,
    launcher: &dyn Launcher,
    capture: bool,
) -> Result<(EpisodeResult, Option<EpisodeView>), EvalError> {
    let start_err = |message: String| EvalError::Start {
        scenario: spec.scenario.clone(),
        run: spec.run,
        message,
    };
    let started = Instant::now();
    let cfg = &episode_config(cfg, spec.seed);
    let sim = asp_simulation::scenario_simulation(cfg, scenario, Some(spec.seed))
        .map_err(|e| start_err(e.to_string()))?;
    let twin = if capture {
        Some(
            asp_simulation::scenario_simulation(cfg, scenario, Some(spec.seed))
                .map_err(|e| start_err(e.to_string()))?,
        )
    } else {
        None
    };
    // the world after every motion, for judging the verifier's answers
    sim.keep_history(WORLD_HISTORY);
    let system = launcher.launch(cfg, sim.clone()).await.map_err(start_err)?;
    let setup_ms = started.elapsed().as_secs_f64() * 1e3;
    let goal_started = Instant::now();
    let report = system
        .run_goal(
            &spec.goal_id(),
            &scenario.spec.goal,
            CancellationToken::new(),
        )
        .await;
    let goal_ms = goal_started.elapsed().as_secs_f64() * 1e3;
    let success = sim.holds(&scenario.spec.success);
    let progress = f64::from(sim.score(scenario));
    let trace = Trace {
        report,
        journal: system.journal(),
    };
    let failure = (!success).then(|| classify(&trace));
    let outcome_checks = judge_outcomes(&trace.journal, &sim);
    let result = EpisodeResult {
        spec: spec.clone(),
        goal: scenario.spec.goal.clone(),
        level: scenario.spec.level.clone(),
        success,
        progress,
        status: trace.report.status.clone(),
        verified: verified_success(&trace.report),
        summary: trace.report.summary.clone(),
        counts: Counts {
            web_calls: system.web_requests(),
            ..Counts::of(&trace)
        },
        failure,
        wall: WallTimes {
            setup_ms,
            goal_ms,
            total_ms: started.elapsed().as_secs_f64() * 1e3,
        },
        outcome_checks,
        trace,
    };
    let view = match twin {
        Some(twin) => {
            let judgement = Judgement::of(scenario, &sim, &result);
            Some(
                EpisodeView::capture(
                    format!("{} (run {}, seed {})", spec.scenario, spec.run, spec.seed),
                    Some(&twin),
                    &sim,
                    system.map().await,
                    &result.trace,
                    Some(judgement),
                )
                .await,
            )
        }
        None => None,
    };
    Ok((result, view))
}

/// The file name of an episode's report.
pub fn report_file_name(spec: &EpisodeSpec) -> String {
    let safe: String = spec
        .scenario
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}_run{}.html", spec.run)
}

/// Runs every scenario of `suite` `settings.runs` times.
pub async fn run_suite(
    suite: &Suite,
    settings: &EvalSettings,
    launcher: &dyn Launcher,
    progress: &dyn Progress,
) -> Result<SuiteResults, EvalError> {
    let cfg = suite.config(&settings.config_dir, &settings.overrides)?;
    // each world's configuration (its overrides after the suite's), loaded once
    let mut world_cfgs: Vec<(String, Vec<String>, LoadedConfig)> = Vec::new();
    for s in &suite.scenarios {
        let world = &s.spec.world;
        if !world_cfgs.iter().any(|(w, _, _)| w == world) {
            world_cfgs.push((
                world.clone(),
                suite.world_overrides(world, &settings.overrides),
                suite.world_config(&settings.config_dir, world, &settings.overrides)?,
            ));
        }
    }
    let seed = settings.seed.unwrap_or(cfg.config.sim_node.seed);
    let runs = settings.runs.max(1);
    if let Some(dir) = &settings.report_dir {
        std::fs::create_dir_all(dir).map_err(|e| EvalError::Io {
            file: dir.clone(),
            message: e.to_string(),
        })?;
    }
    let total = suite.scenarios.len() * runs as usize;
    let mut episodes = Vec::with_capacity(total);
    let mut reports = Vec::new();
    // one tour per world and run, kept for the suite's length
    let tour_dir = match &suite.spec.tour {
        Some(_) => Some(tempfile::tempdir().map_err(|e| EvalError::Io {
            file: std::env::temp_dir(),
            message: format!("a folder for the tours: {e}"),
        })?),
        None => None,
    };
    // concept memories of this run only, never the user's
    let concept_dir = tempfile::tempdir().map_err(|e| EvalError::Io {
        file: std::env::temp_dir(),
        message: format!("a folder for the concept memory: {e}"),
    })?;
    let mut toured: Vec<((String, u32), PathBuf)> = Vec::new();
    let mut tours = Vec::new();
    for scenario in &suite.scenarios {
        let (_, overrides, cfg) = world_cfgs
            .iter()
            .find(|(w, _, _)| *w == scenario.spec.world)
            .expect("every scenario's world was configured above");
        for run in 0..runs {
            let mut episode_cfg = None;
            let mut episode_memory = None;
            if let (Some(tour), Some(dir)) = (&suite.spec.tour, &tour_dir) {
                let key = (scenario.spec.world.clone(), run);
                let memory = match toured.iter().find(|(k, _)| *k == key) {
                    Some((_, m)) => m.clone(),
                    None => {
                        let here = dir.path().join(format!("tour{}", toured.len()));
                        progress.touring(&scenario.spec.world, run);
                        let (result, memory) = tour_world(
                            suite,
                            tour,
                            settings,
                            scenario,
                            run,
                            seed.wrapping_add(u64::from(run)),
                            &here,
                        )
                        .instrument(info_span!("tour", world = %scenario.spec.world, run))
                        .await?;
                        info!(
                            world = %result.world,
                            run,
                            stops = result.stops,
                            views = result.views,
                            tour_s = result.tour_s,
                            "toured"
                        );
                        progress.toured(&result);
                        tours.push(result);
                        toured.push((key, memory.clone()));
                        memory
                    }
                };
                // a copy per episode: a recall that finds a place empty writes that
                // into the memory, and the next episode must not start from it
                let copy = dir.path().join(format!("episode{}.redb", episodes.len()));
                std::fs::copy(&memory, &copy).map_err(|e| EvalError::Io {
                    file: copy.clone(),
                    message: format!("copying the tour's memory {}: {e}", memory.display()),
                })?;
                let mut c = cfg.clone();
                c.config.agent_node.building_memory.database = copy.clone();
                episode_cfg = Some(c);
                episode_memory = Some(copy);
            }
            let mut c = episode_cfg.unwrap_or_else(|| cfg.clone());
            let concepts = match settings.concept_memory {
                ConceptMemory::Empty => format!("concepts{}.redb", episodes.len()),
                ConceptMemory::Shared => "concepts.redb".to_owned(),
            };
            c.config.object_map_node.concepts.database =
                concept_dir.path().join(concepts).display().to_string();
            let cfg = &c;
            let spec = EpisodeSpec {
                scenario: scenario.spec.name.clone(),
                scenario_file: scenario.file.clone(),
                run,
                seed: seed.wrapping_add(u64::from(run)),
                config_dir: settings.config_dir.clone(),
                overrides: overrides.clone(),
            };
            let index = episodes.len();
            progress.started(&spec, index, total);
            let span = info_span!("episode", scenario = %spec.scenario, run, seed = spec.seed);
            let (result, view) = run_episode(
                &spec,
                cfg,
                scenario,
                launcher,
                settings.report_dir.is_some(),
            )
            .instrument(span)
            .await?;
            info!(
                scenario = %spec.scenario,
                run,
                success = result.success,
                progress = result.progress,
                "episode finished"
            );
            if let (Some(dir), Some(view)) = (&settings.report_dir, view) {
                let path = dir.join(report_file_name(&spec));
                crate::report::write_report(&path, &view)?;
                reports.push(path);
            }
            progress.finished(&result, index, total);
            episodes.push(result);
            if let Some(copy) = episode_memory
                && let Err(e) = std::fs::remove_file(&copy)
            {
                warn!(file = %copy.display(), "episode's memory copy not removed: {e}");
            }
        }
    }
    let summary = Summary::of(&episodes);
    Ok(SuiteResults {
        suite: suite.spec.name.clone(),
        description: suite.spec.description.clone(),
        suite_file: suite.file.clone(),
        runs,
        seed,
        agent: match cfg.config.agent_node.llm.backend {
            asp_config::sections::agent::LlmBackend::Offline => "offline".into(),
            asp_config::sections::agent::LlmBackend::Openai => "llm".into(),
        },
        episodes,
        summary,
        reports,
        tours,
    })
}

/// An episode as a results file recorded it: how to run it and its trace (as JSON, with
/// wall-clock values removed).
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    pub spec: EpisodeSpec,
    pub trace: serde_json::Value,
}

/// The episodes of a results file written by `asp eval --json` ([`SuiteResults`]).
pub fn recorded_episodes(file: &Path) -> Result<Vec<Recorded>, EvalError> {
    let problem = |p: String| EvalError::Results {
        file: file.to_path_buf(),
        problem: p,
    };
    let text = std::fs::read_to_string(file).map_err(|e| EvalError::Io {
        file: file.to_path_buf(),
        message: e.to_string(),
    })?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| problem(format!("not JSON: {e}")))?;
    let episodes = doc
        .get("episodes")
        .and_then(serde_json::Value::as_array)
        .ok_or_else(|| problem("no `episodes` list".into()))?;
    episodes
        .iter()
        .enumerate()
        .map(|(i, e)| {
            let spec = e
                .get("spec")
                .cloned()
                .ok_or_else(|| problem(format!("episodes[{i}]: no `spec`")))
                .and_then(|s| {
                    serde_json::from_value::<EpisodeSpec>(s)
                        .map_err(|err| problem(format!("episodes[{i}].spec: {err}")))
                })?;
            let mut trace = e
                .get("trace")
                .cloned()
                .ok_or_else(|| problem(format!("episodes[{i}]: no `trace`")))?;
            crate::episode::strip_wall_clock(&mut trace);
            Ok(Recorded { spec, trace })
        })
        .collect()
}

/// Runs a recorded episode again from its spec (scenario file, seed, configuration
/// folder and overrides).
pub async fn replay(
    spec: &EpisodeSpec,
    launcher: &dyn Launcher,
) -> Result<EpisodeResult, EvalError> {
    let mut cfg =
        load_config(&spec.config_dir, &spec.overrides).map_err(|source| EvalError::Config {
            context: format!("replay of {} run {}", spec.scenario, spec.run),
            source: Box::new(source),
        })?;
    // an empty concept memory, as a suite run's episode starts with; never the user's
    let concepts = tempfile::tempdir().map_err(|e| EvalError::Io {
        file: std::env::temp_dir(),
        message: format!("a folder for the concept memory: {e}"),
    })?;
    cfg.config.object_map_node.concepts.database =
        concepts.path().join("concepts.redb").display().to_string();
    let scenario = Scenario::load(&spec.scenario_file)?;
    let (result, _) = run_episode(spec, &cfg, &scenario, launcher, false).await?;
    Ok(result)
}

/// Replays `recorded` and compares the traces: `None` when identical (wall-clock values
/// aside), else the first difference.
pub async fn replay_difference(
    recorded: &Recorded,
    launcher: &dyn Launcher,
) -> Result<Option<String>, EvalError> {
    let fresh = replay(&recorded.spec, launcher).await?;
    Ok(first_difference(
        &recorded.trace,
        &comparable_trace(&fresh.trace),
    ))
}
