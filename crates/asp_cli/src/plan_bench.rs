//! `asp bench plan`: the offline planner on the goal corpus (`config/goals/`): exact-plan
//! accuracy per split and per category, what differs first in the misses, and the misses
//! themselves.

use std::path::Path;
use std::process::ExitCode;

use asp_agent::planner::corpus::{SplitScore, grammar_planner, is_held_out, load_corpus, score};
use asp_agent::planner::understand::{GoalGrammar, Understanding};
use asp_config::LoadedConfig;

use crate::EXIT_CONFIG;

/// Scores the offline goal grammar on the corpus under `cfg`'s `goals/`; `split` limits it
/// to one split, `misses` is how many of the dev split's misses to list (the held-out
/// splits' only with `held_out_misses`), `json` where to write every goal's result.
pub fn plan_report(
    cfg: &LoadedConfig,
    split: Option<&str>,
    misses: usize,
    held_out_misses: bool,
    json: Option<&Path>,
) -> ExitCode {
    let dir = cfg.config_dir.join("goals");
    let splits = match load_corpus(&dir) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the goal corpus does not load: {e}");
            return ExitCode::from(EXIT_CONFIG);
        }
    };
    let chosen: Vec<_> = splits
        .iter()
        .filter(|s| split.is_none_or(|want| s.name == want))
        .collect();
    if chosen.is_empty() {
        eprintln!(
            "no split named {:?} in {} (there are: {})",
            split.unwrap_or_default(),
            dir.display(),
            splits
                .iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        );
        return ExitCode::from(EXIT_CONFIG);
    }
    let Some(grammar) = grammar(cfg) else {
        return ExitCode::from(EXIT_CONFIG);
    };
    let scores: Vec<SplitScore> = chosen
        .iter()
        .map(|s| score(s, grammar_planner(&grammar)))
        .collect();
    println!(
        "goal planning on the corpus ({}), offline goal grammar{}",
        dir.display(),
        if grammar.has_meaning() {
            " with words matched by meaning"
        } else {
            " (lists only)"
        }
    );
    // the int8 text embedder runs other kernels with and without VNNI: say which, so
    // that figures from two machines can be told apart if they ever differ (on AVX2
    // without VNNI every split read as with exact u8 products)
    println!("int8 kernels of this CPU: {}", int8_kernels());
    println!();
    print!("| category |");
    for s in &scores {
        print!(" {} |", s.split);
    }
    println!();
    print!("|---|");
    for _ in &scores {
        print!("---|");
    }
    println!();
    let categories: std::collections::BTreeSet<_> = scores
        .iter()
        .flat_map(|s| s.per_category().into_keys())
        .collect();
    for c in categories {
        print!("| {c} |");
        for s in &scores {
            match s.per_category().get(&c) {
                Some((n, of)) => print!(" {n}/{of} ({:.0} %) |", 100.0 * *n as f64 / *of as f64),
                None => print!(" — |"),
            }
        }
        println!();
    }
    print!("| **all** |");
    for s in &scores {
        let n = s.goals.iter().filter(|g| g.exact).count();
        print!(
            " **{n}/{} ({:.1} %)** |",
            s.goals.len(),
            100.0 * s.accuracy()
        );
    }
    println!();
    for s in &scores {
        println!();
        let confusion: Vec<String> = s
            .confusion()
            .into_iter()
            .map(|(k, n)| format!("{k} {n}"))
            .collect();
        println!(
            "{} misses by what differs first: {}",
            s.split,
            confusion.join(", ")
        );
        if is_held_out(&s.split) && !held_out_misses {
            println!("  (a held-out split: its misses are listed only with --held-out-misses)");
            continue;
        }
        for g in s.goals.iter().filter(|g| !g.exact).take(misses) {
            println!("  {} [{}] {:?}: {}", g.id, g.category, g.goal, g.difference);
        }
    }
    if let Some(path) = json {
        let text = match serde_json::to_string_pretty(&scores) {
            Ok(t) => t,
            Err(e) => {
                eprintln!("cannot serialise the results: {e}");
                return ExitCode::FAILURE;
            }
        };
        if let Err(e) = std::fs::write(path, text) {
            eprintln!("cannot write {}: {e}", path.display());
            return ExitCode::FAILURE;
        }
        println!("\nresults: {}", path.display());
    }
    ExitCode::SUCCESS
}

/// The offline agent's grammar as configured, or `None` after saying why not.
fn grammar(cfg: &LoadedConfig) -> Option<GoalGrammar> {
    match asp_nodes::agent::goal_grammar(cfg) {
        Ok(g) => Some(g),
        Err(e) => {
            eprintln!("the goal grammar's text embedder does not load (run scripts/setup): {e}");
            None
        }
    }
}

/// `asp understand GOAL`: the structured plan the grammar reads from one goal, as YAML,
/// with its notes; or its refusal or question back.
pub fn understand(cfg: &LoadedConfig, goal: &str) -> ExitCode {
    let Some(grammar) = grammar(cfg) else {
        return ExitCode::from(EXIT_CONFIG);
    };
    match grammar.understand(goal) {
        Understanding::Plan { steps, notes } => {
            match serde_yaml_ng::to_string(&steps) {
                Ok(y) => print!("{y}"),
                Err(e) => eprintln!("cannot show the plan: {e}"),
            }
            for n in notes {
                println!("# {n}");
            }
            ExitCode::SUCCESS
        }
        Understanding::Refused { class, reason } => {
            println!("refused ({class:?}): {reason}");
            ExitCode::FAILURE
        }
        Understanding::AskBack {
            question, guess, ..
        } => {
            println!("asks back: {question}");
            if let Ok(y) = serde_yaml_ng::to_string(&guess) {
                print!("{y}");
            }
            ExitCode::FAILURE
        }
    }
}

/// Which instructions an int8 ONNX model's matrix products run on here.
fn int8_kernels() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512vnni") {
            return "AVX-512 VNNI";
        }
        if std::arch::is_x86_feature_detected!("avxvnni") {
            return "AVX-VNNI";
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            return "AVX2 (no VNNI)";
        }
        "SSE"
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        std::env::consts::ARCH
    }
}
