//! `asp bench map`, `asp map` and `asp memory`: thin front ends over the library crates.
//! Each loads the configuration, calls one library function and prints its report.

use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_eval::map_quality::{MapQualityConfig, map_quality};
use asp_memory::{AffordanceMemory, SeedFile};
use asp_perception::factory;
use asp_perception::replay::replay_mcap;

/// Exit status for a failure of the work itself (not of the configuration).
const EXIT_FAILED: u8 = 1;

fn fail(what: &str, e: impl std::fmt::Display) -> ExitCode {
    eprintln!("{what}: {e}");
    ExitCode::from(EXIT_FAILED)
}

/// Builds the map of `world` (default `sim_node.world`) from simulator keyframes and
/// prints precision/recall against the simulator's ground truth and the builder's
/// one-core throughput.
pub fn map_quality_report(cfg: &LoadedConfig, world: Option<&Path>) -> ExitCode {
    let world_path = world
        .map(Path::to_path_buf)
        .unwrap_or_else(|| cfg.config_path(&cfg.config.sim_node.world));
    let world = match asp_sim::load_world(&world_path) {
        Ok(w) => w,
        Err(e) => return fail(&format!("world {}", world_path.display()), e),
    };
    let text = match factory::text_embedder(cfg) {
        Ok(t) => t,
        Err(e) => return fail("text embedder", e),
    };
    let report = match map_quality(&world, &MapQualityConfig::from_config(&cfg.config), text) {
        Ok(r) => r,
        Err(e) => return fail("map building", e),
    };
    println!("{}", report.summary());
    for o in &report.per_object {
        match &o.matched {
            Some(m) => println!("  {:<24} found (voxel IoU {:.2})", o.name, m.iou),
            None => println!("  {:<24} MISSED", o.name),
        }
    }
    ExitCode::SUCCESS
}

/// Builds a map from a rosbag2 MCAP recording with the configured models.
pub fn map_from_bag(cfg: &LoadedConfig, bag: &Path) -> ExitCode {
    let models = match factory::models(cfg) {
        Ok(m) => m,
        Err(e) => return fail("perception models", e),
    };
    let mut builder = match factory::map_builder(cfg, &models) {
        Ok(b) => b,
        Err(e) => return fail("map builder", e),
    };
    let report = match replay_mcap(bag, &cfg.config.object_map_node.replay, &mut builder) {
        Ok(r) => r,
        Err(e) => return fail(&format!("replay of {}", bag.display()), e),
    };
    println!(
        "{}: {} colour and {} depth images, {} TF messages, {} synchronised pairs, \
         {} keyframes ({} without a camera pose, {} too close to the previous one)",
        bag.display(),
        report.rgb_images,
        report.depth_images,
        report.tf_messages,
        report.pairs,
        report.keyframes.len(),
        report.no_pose,
        report.skipped_still,
    );
    if let Some(reason) = &report.first_pose_error {
        println!("  first pose error: {reason}");
    }
    let map = builder.map();
    println!("{} objects in frame {}", map.len(), map.frame);
    for o in &map.objects {
        let c = o.point_cloud.centroid();
        let at = c.map_or("-".to_string(), |c| {
            format!("({:.2}, {:.2}, {:.2})", c.x, c.y, c.z)
        });
        println!(
            "  object {:<4} {:>6} points, {} views, centroid {at}",
            o.id.0,
            o.point_cloud.len(),
            o.observations
        );
    }
    ExitCode::SUCCESS
}

#[derive(Debug, Clone, Copy)]
pub enum MemoryCommand {
    Show,
    Compact,
    Clear,
}

/// Opens the affordance memory of `affordance_node.memory` (seeding an empty one).
fn open_memory(cfg: &LoadedConfig) -> Result<AffordanceMemory, String> {
    let mem_cfg = &cfg.config.affordance_node.memory;
    let seed_path = cfg.config_path(&mem_cfg.common_sense_seed);
    let seed = SeedFile::load(&seed_path).map_err(|e| e.to_string())?;
    AffordanceMemory::open(cfg.data_path(&mem_cfg.database), mem_cfg, &seed.priors)
        .map_err(|e| e.to_string())
}

pub fn memory(cfg: &LoadedConfig, command: MemoryCommand) -> ExitCode {
    let mut mem = match open_memory(cfg) {
        Ok(m) => m,
        Err(e) => return fail("affordance memory", e),
    };
    match command {
        MemoryCommand::Show => {
            let (stats, priors, episodes, capsules) =
                match (mem.stats(), mem.priors(), mem.episodes(), mem.capsules()) {
                    (Ok(s), Ok(p), Ok(e), Ok(c)) => (s, p, e, c),
                    (Err(e), ..) | (_, Err(e), ..) | (_, _, Err(e), _) | (.., Err(e)) => {
                        return fail("affordance memory", e);
                    }
                };
            println!(
                "{}: {} common-sense priors, {} episodes ({} written in all), {} capsules",
                mem.path().display(),
                stats.priors,
                stats.episodes,
                stats.episodes_written,
                stats.capsules
            );
            for p in &priors {
                println!("  prior    {} / {}: {:?}", p.category, p.part, p.skill);
            }
            for e in &episodes {
                println!(
                    "  episode  {:>4} {} / {}: {:?}",
                    e.id, e.category, e.part, e.skill
                );
            }
            for c in &capsules {
                println!("  capsule  {}", c.summary);
            }
        }
        MemoryCommand::Clear => match mem.clear_test_time() {
            Ok((episodes, capsules)) => println!(
                "{}: removed {episodes} episodes and {capsules} capsules; the common-sense bank is kept",
                mem.path().display()
            ),
            Err(e) => return fail("affordance memory", e),
        },
        MemoryCommand::Compact => match mem.compact() {
            Ok(true) => println!("{}: compacted", mem.path().display()),
            Ok(false) => println!("{}: nothing to compact", mem.path().display()),
            Err(e) => return fail("affordance memory", e),
        },
    }
    ExitCode::SUCCESS
}

/// `asp world generate`: a building from a recipe, written into `out`.
pub fn generate_building(recipe: &Path, out: &Path, seed: Option<u64>) -> ExitCode {
    let (mut r, catalogue) = match asp_sim::building::Recipe::load(recipe) {
        Ok(x) => x,
        Err(e) => return fail("building recipe", e),
    };
    if let Some(seed) = seed {
        r.seed = seed;
    }
    let building = asp_sim::building::generate(&r, &catalogue);
    let files = match asp_sim::building::write(&building, out) {
        Ok(f) => f,
        Err(e) => return fail("building", e),
    };
    let movable = building
        .truth
        .objects
        .iter()
        .filter(|o| !o.receptacle)
        .count();
    let kinds: std::collections::BTreeSet<&str> = building
        .truth
        .rooms
        .iter()
        .map(|r| r.kind.as_str())
        .collect();
    eprintln!(
        "{} (seed {}): {} storeys, {} rooms of {} kinds, {} objects on {} pieces of furniture",
        r.name,
        r.seed,
        building.storeys.len(),
        building.truth.rooms.len(),
        kinds.len(),
        movable,
        building.truth.objects.len() - movable
    );
    for f in files {
        eprintln!("  wrote {}", f.display());
    }
    ExitCode::SUCCESS
}

/// `asp memory build --bag`: the tour's views into the building memory of
/// `agent_node.building_memory`. A bag recorded in simulation is described by the
/// simulation's VLM stand-in (from the ground truth in the bag, with its seeded errors);
/// any other by the VLM of `agent_node.vlm`.
pub fn memory_build(cfg: &LoadedConfig, bag: &Path) -> ExitCode {
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(r) => r,
        Err(e) => return fail("tokio runtime", e),
    };
    let simulated = match asp_perception::replay::recorded_in_simulation(bag) {
        Ok(s) => s,
        Err(e) => return fail("tour recording", e),
    };
    let models = match factory::models(cfg) {
        Ok(m) => m,
        Err(e) => return fail("perception models", e),
    };
    runtime.block_on(async {
        // the stand-in answers about the frames it is shown before each question
        let standin = if simulated && cfg.config.sim_node.vlm_standin.enabled {
            match asp_simulation::standin::start_recording_standin(cfg).await {
                Ok(s) => Some(s),
                Err(e) => return fail("the simulation's VLM stand-in", e),
            }
        } else {
            None
        };
        let vlm_cfg = asp_simulation::standin::pointed_at(cfg, standin.as_ref());
        let vlm = match asp_llm::vlm::OpenAiVlm::from_config(&vlm_cfg.config.agent_node) {
            Ok(v) => v,
            Err(e) => return fail("agent_node.vlm", e),
        };
        let tap: Option<asp_system::tour_memory::FrameTap> = standin.as_ref().map(|s| {
            let log = Arc::clone(s.frames());
            Arc::new(move |f: &asp_core::RgbdFrame| log.record_frame(f))
                as asp_system::tour_memory::FrameTap
        });
        let started = std::time::Instant::now();
        let mut progress = |views: usize| {
            if views.is_multiple_of(10) {
                eprintln!(
                    "  {views} views described ({:.0} s)",
                    started.elapsed().as_secs_f64()
                );
            }
        };
        let report = match asp_system::tour_memory::build_memory_from_bag(
            cfg,
            bag,
            Arc::new(vlm),
            Arc::clone(&models.text_embedder),
            Arc::clone(&models.image_embedder),
            tap,
            &mut progress,
        )
        .await
        {
            Ok(r) => r,
            Err(e) => return fail("building memory", e),
        };
        println!(
            "{}: {} keyframes of {} colour images ({} without a camera pose), {} views added \
             ({} objects, {} placed by depth) in {:.1} s",
            bag.display(),
            report.replay.frames,
            report.replay.rgb_images,
            report.replay.no_pose,
            report.views,
            report.instances,
            report.placed,
            started.elapsed().as_secs_f64()
        );
        println!(
            "{}: site {:?}, {} views, clusters per level {:?} (level 4 first)",
            report.database.display(),
            cfg.config.agent_node.building_memory.site,
            report.memory_views,
            report.levels
        );
        ExitCode::SUCCESS
    })
}

/// `asp memory find --query`: the building memory's answer to a request (SPEC §3.2), the
/// views best first with the objects that made them, and where those are.
pub fn memory_find(cfg: &LoadedConfig, query: &str, room: Option<&str>) -> ExitCode {
    use asp_memory::building::{
        Affordance, BuildingMemory, EmbeddingJudge, Query, RetrievalParams, retrieve,
    };
    let mem_cfg = &cfg.config.agent_node.building_memory;
    let memory = match BuildingMemory::open(cfg.data_path(&mem_cfg.database), &mem_cfg.site) {
        Ok(m) => m,
        Err(e) => return fail("building memory", e),
    };
    let h = memory.hierarchy();
    if h.views.is_empty() {
        return fail(
            "building memory",
            format!(
                "{} holds no views of site {:?}; build it with `asp memory build --bag TOUR.mcap`",
                memory.path().display(),
                mem_cfg.site
            ),
        );
    }
    let text = match factory::text_embedder(cfg) {
        Ok(t) => t,
        Err(e) => return fail("text embedder", e),
    };
    let vector = match text.embed_text(query) {
        Ok(v) => v,
        Err(e) => return fail("text embedder", e),
    };
    let params = RetrievalParams {
        top: 5,
        ..RetrievalParams::default()
    };
    let found = retrieve(
        h,
        &Query {
            instruction: query,
            text: &vector,
            visual: &vector,
            affordance: Some(Affordance::Pick),
            heights: None,
        },
        &params,
        &EmbeddingJudge,
    );
    println!("{query:?}: {} views of {}", found.len(), h.views.len());
    for r in &found {
        let v = &h.views[r.view as usize];
        println!(
            "  {:.3} view {} at ({:.2}, {:.2}, {:.2}): {}",
            r.score, v.source, v.position[0], v.position[1], v.position[2], v.description
        );
        for &i in &r.instances {
            let o = &v.instances[i as usize];
            let at = o.position.map_or("-".to_owned(), |p| {
                format!("({:.2}, {:.2}, {:.2})", p[0], p[1], p[2])
            });
            println!("      {} at {at}", o.description);
        }
    }
    // the zones a named room is taken for
    let scope = match room {
        Some(room) => {
            let embed = |t: &str| text.embed_text(t);
            let named = match embed(room) {
                Ok(v) => v,
                Err(e) => return fail("text embedder", e),
            };
            let kinds = match mem_cfg
                .room_kinds
                .iter()
                .map(|k| embed(k))
                .collect::<Result<Vec<_>, _>>()
            {
                Ok(k) => k,
                Err(e) => return fail("text embedder", e),
            };
            let names = asp_memory::building::RoomNames {
                room,
                text: &named,
                kinds: &kinds,
            };
            let params = asp_memory::building::RoomParams {
                margin: mem_cfg.room_margin,
                temperature: mem_cfg.room_temperature,
            };
            let Some(scope) = asp_memory::building::room_scope(h, &names, &params, None) else {
                return fail(
                    "building memory",
                    format!("the memory saw no objects to tell its rooms by, so no {room}"),
                );
            };
            println!(
                "room {room:?}: zones {:?} (level 4), the best {:.3}, taken for its {}",
                scope.zones,
                scope.score,
                scope.evidence.join(", ")
            );
            let scores = asp_memory::building::room_scores(h, &names, &params);
            let mut zones: Vec<(f32, usize)> =
                scores.iter().enumerate().map(|(i, &s)| (s, i)).collect();
            zones.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
            for (score, i) in zones {
                let z = &h.levels[0][i];
                println!(
                    "  zone {i}: {score:.3}, {} views about ({:.1}, {:.1}): {}",
                    z.views, z.position[0], z.position[1], z.summary
                );
            }
            Some(scope)
        }
        None => None,
    };
    // what object_retrieval goes to look at when the live map lacks it
    let places = asp_memory::building::recall_request(
        h,
        query,
        &vector,
        asp_memory::building::RecallScope {
            room: scope.as_ref(),
            heights: None,
        },
        mem_cfg.min_relevance,
        asp_memory::building::PassOver {
            vacated: memory.vacated(),
            ..Default::default()
        },
        mem_cfg.max_places,
    );
    let passed = memory
        .vacated()
        .iter()
        .filter(|v| v.is_like(&vector))
        .count();
    if passed > 0 {
        println!(
            "recall: {passed} place(s) found empty since the tour for requests like this are passed over"
        );
    }
    if places.is_empty() {
        println!(
            "recall: no remembered object is {:.2} or more like it (agent_node.building_memory.min_relevance)",
            mem_cfg.min_relevance
        );
    }
    for p in &places {
        let from = p.viewpoints.first().map_or("-".to_owned(), |(xy, yaw)| {
            format!("({:.2}, {:.2}, {:.0}°)", xy[0], xy[1], yaw.to_degrees())
        });
        println!(
            "recall: {:.3} {} at ({:.2}, {:.2}, {:.2}), looked at from {from}",
            p.relevance, p.description, p.position[0], p.position[1], p.position[2]
        );
    }
    ExitCode::SUCCESS
}
