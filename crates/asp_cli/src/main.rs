//! `asp`: run goals on the embedded simulator, bring up the ROS 2 graph, evaluate,
//! benchmark, build maps and manage memory.
#![allow(clippy::print_stdout)] // a command-line program reports on stdout

use std::path::PathBuf;
use std::process::ExitCode;

use asp_config::LoadedConfig;
use clap::{Args, Parser, Subcommand, ValueEnum};

mod eval;
mod launch;
mod plan_bench;
mod run;
mod tools;

/// Exit status of a subcommand that is not built yet (sysexits' EX_UNAVAILABLE).
const EXIT_NOT_BUILT: u8 = 69;
/// Exit status for bad configuration (sysexits' EX_CONFIG).
const EXIT_CONFIG: u8 = 78;
/// Exit status for a command used wrongly (sysexits' EX_USAGE; clap's own errors exit 2).
const EXIT_USAGE: u8 = 64;

#[derive(Debug, Parser)]
#[command(
    name = "asp",
    version,
    about = "Agentic Scene Policies: language goals for a mobile manipulator, verified before every motion",
    long_about = None,
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Args)]
struct GlobalArgs {
    /// Folder of parameter files [default: $ASP_CONFIG_DIR, ./config, or the source tree's config/]
    #[arg(long, global = true, value_name = "DIR")]
    config_dir: Option<PathBuf>,
    /// Override a parameter, e.g. `--set agent_node.llm.backend=openai` (repeatable)
    #[arg(long = "set", global = true, value_name = "KEY=VALUE")]
    overrides: Vec<String>,
    /// Error profile of the simulated models and sensors: `realistic` (the shipped
    /// defaults) or a file `<config-dir>/profiles/<NAME>.yaml`, e.g. `oracle` (no errors,
    /// for debugging); `--set` wins over it
    #[arg(long, global = true, value_name = "NAME", default_value = "realistic")]
    profile: String,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Run one language goal end to end on the embedded simulator
    Run(RunArgs),
    /// Start the ROS 2 node graph as separate processes (sim or robot)
    Launch(LaunchArgs),
    /// Run a scenario suite and report success, progress and costs
    Eval(EvalArgs),
    /// Run the benchmarks and print their figures
    Bench(BenchArgs),
    /// Build an object map from the simulator or from a rosbag2 MCAP recording
    Map(MapArgs),
    /// Inspect or manage the affordance memory database
    Memory(MemoryArgs),
    /// Check the configuration and print the effective parameters
    Config(ConfigArgs),
    /// Show how the offline agent reads a goal: its steps, or why it refuses or asks
    Understand(UnderstandArgs),
    /// Make simulator worlds
    World(WorldArgs),
}

#[derive(Debug, Args)]
struct WorldArgs {
    #[command(subcommand)]
    action: WorldAction,
}

#[derive(Debug, Subcommand)]
enum WorldAction {
    /// Generate a multi-storey building from a recipe (config/buildings/recipes/*.yaml):
    /// one world per storey, the index joining them, and the truth for evaluation
    Generate {
        /// Recipe file
        recipe: PathBuf,
        /// Folder to write into
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
        /// Seed [default: the recipe's]
        #[arg(long)]
        seed: Option<u64>,
    },
}

#[derive(Debug, Args)]
struct UnderstandArgs {
    /// The goal, as you would say it
    goal: String,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LlmChoice {
    /// The offline goal grammar and a fixed strategy per subtask, no model server needed
    Offline,
    /// An OpenAI-compatible server (agent_node.llm)
    Openai,
}

impl LlmChoice {
    fn backend(self) -> asp_config::sections::agent::LlmBackend {
        use asp_config::sections::agent::LlmBackend;
        match self {
            LlmChoice::Offline => LlmBackend::Offline,
            LlmChoice::Openai => LlmBackend::Openai,
        }
    }
}

#[derive(Debug, Args)]
struct RunArgs {
    /// The goal in plain language, e.g. "pick up the mug"
    goal: String,
    /// World file [default: sim_node.world]
    #[arg(long)]
    world: Option<PathBuf>,
    /// Agent backend [default: agent_node.llm.backend]
    #[arg(long, value_enum)]
    llm: Option<LlmChoice>,
    /// Seed for the simulator [default: sim_node.seed]
    #[arg(long)]
    seed: Option<u64>,
    /// Write a self-contained HTML episode report here
    #[arg(long, value_name = "FILE")]
    report: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum LaunchTarget {
    /// The simulator node and every product node, talking DDS on loopback
    Sim,
    /// The product nodes only, against a real robot's MoveIt 2, Nav2 and camera
    Robot,
}

#[derive(Debug, Args)]
struct LaunchArgs {
    #[arg(value_enum)]
    target: LaunchTarget,
}

#[derive(Debug, Args)]
struct EvalArgs {
    /// Suite name (tabletop, mobile: config/suites/NAME.yaml), a suite file or a scenario file
    #[arg(long)]
    suite: String,
    #[arg(long, value_enum)]
    llm: Option<LlmChoice>,
    /// Runs per scenario
    #[arg(long, default_value_t = 1)]
    runs: u32,
    #[arg(long)]
    seed: Option<u64>,
    /// Write the results as JSON here
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Write one self-contained HTML report per episode into this folder
    #[arg(long, value_name = "DIR")]
    report_dir: Option<PathBuf>,
    /// How the nodes are joined: `graph`, the ROS node graph on an in-process bus (the
    /// node code of `asp launch`), or `services`, their services called directly (no ROS
    /// layer; tells a fault in the ROS adapters from one in the nodes' logic)
    #[arg(long, value_enum, default_value_t = eval::Wiring::Graph)]
    wiring: eval::Wiring,
    /// What the concept memory (unknown words grounded from the web) holds when an
    /// episode starts: `empty`, or `shared`, what the run's earlier episodes learnt
    #[arg(long, value_enum, default_value_t = eval::ConceptMemoryChoice::Empty)]
    concept_memory: eval::ConceptMemoryChoice,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BenchTarget {
    /// Ray-cast rendering of RGB-D frames
    Render,
    /// Goal planning on the goal corpus (config/goals): exact-plan accuracy
    Plan,
    /// Arm motion planning and base path planning
    Motion,
    /// Object-map building from keyframes
    Map,
    /// The agent's own overhead per tool call
    Agent,
    /// Affordance grounding with and without the verifier
    Affordance,
    /// Building-scale memory retrieval on generated buildings (`--split dev|test`)
    Memory,
    /// Everything above
    All,
}

#[derive(Debug, Args)]
struct BenchArgs {
    #[arg(value_enum, default_value = "all")]
    target: BenchTarget,
    /// `plan`: only this split of the corpus (dev, test, test2, …)
    #[arg(long)]
    split: Option<String>,
    /// `plan`: misses listed for the dev split
    #[arg(long, default_value_t = 20)]
    misses: usize,
    /// `plan`: list the held-out splits' misses as well. Read them and the split can no
    /// longer tell whether the grammar generalises (config/goals/README.md)
    #[arg(long)]
    held_out_misses: bool,
    /// `plan`: write every goal's result as JSON here
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

#[derive(Debug, Args)]
struct MapArgs {
    /// Build from this rosbag2 MCAP file instead of the simulator
    #[arg(long, value_name = "FILE")]
    bag: Option<PathBuf>,
    /// World to map when no bag is given
    #[arg(long)]
    world: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum MemoryAction {
    /// Affordance memory: list the banks' entries
    Show,
    /// Affordance memory: compact the database
    Compact,
    /// Affordance memory: remove every test-time entry
    Clear,
    /// Building memory: add the views of a recorded tour (`--bag`)
    Build,
    /// Building memory: the views and objects a request leads to (`--query`)
    Find,
}

#[derive(Debug, Args)]
struct MemoryArgs {
    #[arg(value_enum)]
    action: MemoryAction,
    /// `build`: the tour, a rosbag2 MCAP file (colour, registered depth, camera info, TF)
    #[arg(long, value_name = "FILE")]
    bag: Option<PathBuf>,
    /// `find`: what to look for, e.g. "the blue thermos in the office"
    #[arg(long)]
    query: Option<String>,
    /// `find`: only what is in this room, as recall keeps to it ("office"): the zones
    /// the memory takes for it are printed
    #[arg(long)]
    room: Option<String>,
}

#[derive(Debug, Clone, Copy, ValueEnum, Default)]
enum ConfigAction {
    /// Validate and report which files were read
    #[default]
    Check,
    /// Print the effective parameters as YAML
    Show,
}

#[derive(Debug, Args)]
struct ConfigArgs {
    #[arg(value_enum, default_value = "check")]
    action: ConfigAction,
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let dir = asp_runtime::find_config_dir(cli.global.config_dir.as_deref());
    match asp_runtime::profile_overrides(&dir, &cli.global.profile) {
        Ok(mut o) => {
            o.append(&mut cli.global.overrides);
            cli.global.overrides = o;
        }
        Err(e) => {
            eprintln!("asp: {e}");
            return ExitCode::from(78);
        }
    }
    // `asp run` drives the simulated robot, which stands on a base: the agent may move
    // it (searches, go_to) unless the user's overrides say otherwise
    if matches!(cli.command, Command::Run(_)) {
        cli.global
            .overrides
            .insert(0, asp_nodes::launch::SIMULATED_BASE.to_owned());
    }
    // Commands that only print end quietly when their reader goes (`asp understand … |
    // head`), as Unix tools do. Not the others: they write to sockets (HTTP, the
    // launcher's children), where SIGPIPE's default action would kill the process
    // instead of returning the error Rust's ignored SIGPIPE gives.
    if matches!(cli.command, Command::Understand(_) | Command::Config(_)) {
        sigpipe::reset();
    }
    match cli.command {
        // these print their own trace; the log keeps to warnings unless RUST_LOG says more
        Command::Run(_) => asp_runtime::init_tracing_with("warn"),
        // an episode's failures are in its row and trace; warnings would break the table
        Command::Eval(_) => asp_runtime::init_tracing_with("error"),
        Command::Understand(_) | Command::Bench(_) => asp_runtime::init_tracing_with("warn"),
        _ => asp_runtime::init_tracing(),
    }
    match cli.command {
        Command::Config(args) => config(&cli.global, &args),
        Command::Run(args) => with_config(&cli.global, |cfg| {
            run::run(
                cfg,
                &run::RunOptions {
                    goal: args.goal.clone(),
                    world: args.world.clone(),
                    llm: args.llm.map(LlmChoice::backend),
                    seed: args.seed,
                    report: args.report.clone(),
                },
            )
        }),
        Command::Launch(args) => launch::launch(&cli.global, args.target),
        Command::Eval(args) => eval::eval(
            &asp_runtime::find_config_dir(cli.global.config_dir.as_deref()),
            &cli.global.overrides,
            &eval::EvalOptions {
                suite: args.suite.clone(),
                llm: args.llm.map(LlmChoice::backend),
                runs: args.runs,
                seed: args.seed,
                json: args.json.clone(),
                report_dir: args.report_dir.clone(),
                wiring: args.wiring,
                concept_memory: args.concept_memory,
            },
        ),
        Command::Bench(args) => bench(&cli.global, &args),
        Command::Understand(args) => {
            with_config(&cli.global, |cfg| plan_bench::understand(cfg, &args.goal))
        }
        Command::World(args) => match args.action {
            WorldAction::Generate { recipe, out, seed } => {
                tools::generate_building(&recipe, &out, seed)
            }
        },
        Command::Map(args) => with_config(&cli.global, |cfg| match &args.bag {
            Some(bag) => tools::map_from_bag(cfg, bag),
            None => tools::map_quality_report(cfg, args.world.as_deref()),
        }),
        Command::Memory(args) => with_config(&cli.global, |cfg| {
            let affordance = |command| {
                if args.bag.is_some() || args.query.is_some() || args.room.is_some() {
                    eprintln!(
                        "asp memory {:?}: --bag, --query and --room belong to build and find",
                        args.action
                    );
                    return ExitCode::from(EXIT_USAGE);
                }
                tools::memory(cfg, command)
            };
            match args.action {
                MemoryAction::Show => affordance(tools::MemoryCommand::Show),
                MemoryAction::Compact => affordance(tools::MemoryCommand::Compact),
                MemoryAction::Clear => affordance(tools::MemoryCommand::Clear),
                MemoryAction::Build => match &args.bag {
                    Some(bag) => tools::memory_build(cfg, bag),
                    None => {
                        eprintln!("asp memory build: --bag FILE names the recorded tour");
                        ExitCode::from(EXIT_USAGE)
                    }
                },
                MemoryAction::Find => match &args.query {
                    Some(q) if !q.trim().is_empty() => {
                        tools::memory_find(cfg, q, args.room.as_deref())
                    }
                    _ => {
                        eprintln!("asp memory find: --query TEXT says what to look for");
                        ExitCode::from(EXIT_USAGE)
                    }
                },
            }
        }),
    }
}

/// Loads the configuration (exit 78 with the error if it is bad) and runs `f` on it.
fn with_config(global: &GlobalArgs, f: impl FnOnce(&LoadedConfig) -> ExitCode) -> ExitCode {
    let dir = asp_runtime::find_config_dir(global.config_dir.as_deref());
    match asp_runtime::load_config(&dir, &global.overrides) {
        Ok(cfg) => f(&cfg),
        Err(e) => {
            eprintln!("configuration error:\n{e}");
            ExitCode::from(EXIT_CONFIG)
        }
    }
}

fn bench(global: &GlobalArgs, args: &BenchArgs) -> ExitCode {
    let cargo_bench = |what: &str, command: &str| {
        eprintln!(
            "asp bench {what}: not built yet; its figures come from `{command}`. Nothing was run."
        );
        ExitCode::from(EXIT_NOT_BUILT)
    };
    match args.target {
        BenchTarget::Map | BenchTarget::All => {
            let mut code = with_config(global, |cfg| tools::map_quality_report(cfg, None));
            if matches!(args.target, BenchTarget::All) {
                let plan = with_config(global, |cfg| {
                    plan_bench::plan_report(cfg, None, args.misses, false, None)
                });
                if plan != ExitCode::SUCCESS {
                    code = plan;
                }
                eprintln!(
                    "asp bench all: only `map` and `plan` are built into `asp` so far; see the \
                     README's results table for the cargo bench commands of the others"
                );
            }
            code
        }
        BenchTarget::Render => cargo_bench("render", "cargo bench -p asp_sim --bench sim"),
        BenchTarget::Plan => with_config(global, |cfg| {
            plan_bench::plan_report(
                cfg,
                args.split.as_deref(),
                args.misses,
                args.held_out_misses,
                args.json.as_deref(),
            )
        }),
        BenchTarget::Motion => {
            cargo_bench("motion", "cargo bench -p asp_kinematics --bench kinematics")
        }
        BenchTarget::Agent => cargo_bench("agent", "cargo bench -p asp_agent --bench overhead"),
        BenchTarget::Memory => {
            let dir = asp_runtime::find_config_dir(global.config_dir.as_deref());
            let recipe = dir.join("buildings/recipes/three_floors.yaml");
            let split = match args.split.as_deref() {
                None | Some("test") => asp_eval::memory_bench::Split::Test,
                Some("dev") => asp_eval::memory_bench::Split::Dev,
                Some(other) => {
                    eprintln!("asp bench memory: --split {other:?}: the splits are dev and test");
                    return ExitCode::from(EXIT_CONFIG);
                }
            };
            match asp_eval::memory_bench::run(&recipe, split, 100) {
                Ok(report) => {
                    print!("{}", report.table());
                    ExitCode::SUCCESS
                }
                Err(e) => {
                    eprintln!("asp bench memory: {e}");
                    ExitCode::from(EXIT_CONFIG)
                }
            }
        }
        BenchTarget::Affordance => cargo_bench(
            "affordance",
            "cargo run --release -p asp_affordance --example grounding_eval",
        ),
    }
}

fn config(global: &GlobalArgs, args: &ConfigArgs) -> ExitCode {
    let dir = asp_runtime::find_config_dir(global.config_dir.as_deref());
    let loaded = match asp_runtime::load_config(&dir, &global.overrides) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("configuration error:\n{e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    match args.action {
        ConfigAction::Check => {
            println!("configuration OK: {}", loaded.config_dir.display());
            for f in &loaded.sources {
                println!("  read {}", f.display());
            }
            for o in &global.overrides {
                println!("  override {o}");
            }
        }
        ConfigAction::Show => match serde_yaml_ng::to_string(&loaded.config) {
            Ok(yaml) => print!("{yaml}"),
            Err(e) => {
                eprintln!("cannot print the configuration: {e}");
                return ExitCode::FAILURE;
            }
        },
    }
    ExitCode::SUCCESS
}
