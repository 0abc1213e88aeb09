//! `asp memory build --bag`: the building memory (SPEC §3.1) from a recorded tour, a
//! real robot's rosbag2 MCAP or one the exploration recorded in simulation.
//!
//! The bag is read on a blocking thread (streaming, two frames in flight); each keyframe
//! goes to the VLM ([`MemoryVlm`]: a description and the objects with boxes and
//! affordances), becomes a view ([`view_from_frame`]), and all views are added to the
//! site's memory in one transaction at the end, so a failed build leaves the memory as
//! it was.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use asp_config::LoadedConfig;
use asp_core::models::{ImageEmbedder, MemoryVlm, ModelError, Observation, TextEmbedder};
use asp_core::{FrameId, RgbdFrame};
use asp_memory::MemoryError;
use asp_memory::building::{BuildingMemory, ClusterParams, KeywordSummariser, view_from_frame};
use asp_perception::PerceptionError;
use asp_perception::replay::{ReplayReport, read_frames};
use tracing::info;

/// Sees each frame before the VLM is asked about it.
pub type FrameTap = Arc<dyn Fn(&RgbdFrame) + Send + Sync>;

/// Why a memory could not be built from a bag.
#[derive(Debug, thiserror::Error)]
pub enum TourMemoryError {
    #[error("{0}")]
    Bag(#[from] PerceptionError),
    #[error("view {index} of {bag} (stamp {stamp:.3} s): {source}")]
    Model {
        bag: String,
        index: usize,
        stamp: f64,
        #[source]
        source: ModelError,
    },
    #[error("{0}")]
    Memory(#[from] MemoryError),
    #[error("{bag} holds no keyframe with a camera pose in {frame} ({reason})")]
    Empty {
        bag: String,
        frame: String,
        reason: String,
    },
}

/// What a build did.
#[derive(Debug, Clone)]
pub struct TourMemoryReport {
    pub bag: PathBuf,
    pub replay: ReplayReport,
    /// Views added.
    pub views: usize,
    /// Objects the VLM listed, and those the depth placed.
    pub instances: usize,
    pub placed: usize,
    /// Views in the memory now, and clusters per level (level 4 first).
    pub memory_views: usize,
    pub levels: Vec<usize>,
    pub database: PathBuf,
}

/// Builds the memory of `agent_node.building_memory` from `bag`, asking `vlm` about each
/// keyframe. `tap` sees each frame before the VLM is asked (the simulation's stand-in
/// records its ground truth there); `progress` gets (views done, frames read so far).
pub async fn build_memory_from_bag(
    cfg: &LoadedConfig,
    bag: &Path,
    vlm: Arc<dyn MemoryVlm>,
    text: Arc<dyn TextEmbedder>,
    image: Arc<dyn ImageEmbedder>,
    tap: Option<FrameTap>,
    progress: &mut dyn FnMut(usize),
) -> Result<TourMemoryReport, TourMemoryError> {
    let mem_cfg = cfg.config.agent_node.building_memory.clone();
    let replay_cfg = cfg.config.object_map_node.replay.clone();
    // a building's frame first: storeys stay apart in the memory (see
    // `common.frames.building`); a recording without it is of one storey's map
    let frames = [
        FrameId::new(cfg.config.common.frames.building.clone()),
        FrameId::new(cfg.config.common.frames.map.clone()),
    ];
    let (tx, mut rx) = tokio::sync::mpsc::channel::<RgbdFrame>(2);
    let path = bag.to_path_buf();
    let reader = tokio::task::spawn_blocking(move || {
        read_frames(&path, &replay_cfg, &frames, &mut |frame| {
            // the receiver only goes when the build failed: stop reading
            tx.blocking_send(frame)
                .map_err(|_| PerceptionError::Replay {
                    path: path.clone(),
                    message: "the memory build stopped".into(),
                })
        })
    });
    let bag_name = bag.display().to_string();
    let mut views = Vec::new();
    let (mut instances, mut placed) = (0, 0);
    let mut failure = None;
    // the frames the views' poses are in: one, or the memory could not compare them
    let mut roots: Vec<String> = Vec::new();
    while let Some(frame) = rx.recv().await {
        if let Some(tap) = &tap {
            tap(&frame);
        }
        let root = frame.camera_pose.parent.as_str();
        if !roots.iter().any(|r| r == root) {
            roots.push(root.to_owned());
        }
        let index = views.len();
        let observation = Observation {
            rgb: frame.rgb.clone(),
            depth: Some(frame.depth.clone()),
            ground_truth: None,
        };
        let stamp = frame.stamp;
        let model_error = |source| TourMemoryError::Model {
            bag: bag_name.clone(),
            index,
            stamp,
            source,
        };
        let built = match vlm.describe_view(&observation).await {
            Ok(described) => {
                let (text, image) = (Arc::clone(&text), Arc::clone(&image));
                let source = format!("{bag_name}#{index}");
                let range = mem_cfg.max_instance_range_m;
                tokio::task::spawn_blocking(move || {
                    view_from_frame(&frame, source, &described, &*text, &*image, range)
                })
                .await
                .map_err(|e| ModelError::Backend {
                    model: "embedders".into(),
                    message: e.to_string(),
                })
                .and_then(|r| r)
            }
            Err(e) => Err(e),
        };
        match built {
            Ok(view) => {
                instances += view.instances.len();
                placed += view
                    .instances
                    .iter()
                    .filter(|i| i.position.is_some())
                    .count();
                views.push(view);
                progress(views.len());
            }
            Err(e) => {
                failure = Some(model_error(e));
                break;
            }
        }
    }
    drop(rx);
    let replay = reader.await.map_err(|e| PerceptionError::Replay {
        path: bag.to_path_buf(),
        message: format!("the reader stopped: {e}"),
    });
    if let Some(f) = failure {
        return Err(f);
    }
    let replay = replay??;
    if views.is_empty() {
        return Err(TourMemoryError::Empty {
            bag: bag_name,
            frame: cfg.config.common.frames.map.clone(),
            reason: replay
                .first_pose_error
                .clone()
                .unwrap_or_else(|| format!("{} colour images", replay.rgb_images)),
        });
    }
    if let [first, second, ..] = roots.as_slice() {
        return Err(MemoryError::Corrupt(format!(
            "{bag_name}: some views are placed in {first:?}, others in {second:?} (TF reached the building's frame only part of the time); record the tour with the building's frame throughout"
        ))
        .into());
    }
    let root = roots
        .pop()
        .unwrap_or_else(|| cfg.config.common.frames.map.clone());
    let database = cfg.data_path(&mem_cfg.database);
    let added = views.len();
    let (memory_views, levels) = tokio::task::spawn_blocking({
        let database = database.clone();
        move || -> Result<(usize, Vec<usize>), MemoryError> {
            let mut memory = BuildingMemory::open(&database, &mem_cfg.site)?;
            memory.set_frame(&root)?;
            let h = memory.add_views(
                views,
                &ClusterParams::default(),
                &KeywordSummariser::default(),
                &*text,
            )?;
            Ok((h.views.len(), h.levels.iter().map(Vec::len).collect()))
        }
    })
    .await
    .map_err(|e| MemoryError::Database {
        file: database.display().to_string(),
        message: format!("the build stopped: {e}"),
    })??;
    info!(bag = %bag_name, views = added, instances, placed, memory_views, ?levels, "building memory built");
    Ok(TourMemoryReport {
        bag: bag.to_path_buf(),
        replay,
        views: added,
        instances,
        placed,
        memory_views,
        levels,
        database,
    })
}
