//! Evaluation of a built map against simulator ground truth (EVALUATION ONLY: it reads
//! `GroundTruth`, which no product decision may use).
//!
//! Ground-truth objects are the instances seen in the keyframes, each with the cloud of
//! its back-projected ground-truth mask pixels over all keyframes. A map object and a
//! ground-truth object match when their clouds' voxel IoU (on `voxel_size` voxels)
//! reaches `iou_threshold`; matching is one-to-one, greedy by IoU. Precision is the
//! share of map objects that match, recall the share of ground-truth objects matched.

use std::collections::BTreeMap;

use asp_core::RgbdFrame;
use asp_core::geometry::{PointCloud, Real};
use asp_core::map::{ObjectId, ObjectMap};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;

/// One ground-truth instance as seen in the keyframes.
#[derive(Debug, Clone, PartialEq)]
pub struct GtObject {
    pub id: u32,
    pub name: String,
    pub cloud: PointCloud,
}

/// Ground-truth objects of `frames`: instances with at least `min_pixels` pixels in some
/// frame, clouds voxel-downsampled at `voxel_size`.
pub fn ground_truth_objects(
    frames: &[RgbdFrame],
    min_depth: Real,
    max_depth: Real,
    min_pixels: u64,
    voxel_size: Real,
) -> Result<Vec<GtObject>, PerceptionError> {
    let mut out: BTreeMap<u32, GtObject> = BTreeMap::new();
    for frame in frames {
        let Some(gt) = &frame.ground_truth else {
            continue;
        };
        let mut ids: Vec<u32> = gt
            .instance_ids
            .pixels()
            .iter()
            .copied()
            .filter(|&l| l != 0)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        for id in ids {
            let mask = gt.instance_mask(id);
            if mask.area() < min_pixels {
                continue;
            }
            let cloud = frame.back_project(Some(&mask), min_depth, max_depth)?;
            let entry = out.entry(id).or_insert_with(|| GtObject {
                id,
                name: gt
                    .instances
                    .get(&id)
                    .map_or_else(|| format!("instance {id}"), |i| i.name.clone()),
                cloud: PointCloud::empty(cloud.frame.clone()),
            });
            entry.cloud.extend(&cloud)?;
            entry.cloud = entry.cloud.voxel_downsample(voxel_size)?;
        }
    }
    Ok(out.into_values().filter(|o| !o.cloud.is_empty()).collect())
}

/// A matched pair.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Match {
    pub object: ObjectId,
    pub gt_id: u32,
    pub gt_name: String,
    pub iou: Real,
}

/// Precision and recall of a map's objects.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapScore {
    pub objects: usize,
    pub gt_objects: usize,
    pub matches: Vec<Match>,
    /// Ground-truth names no map object matched.
    pub missed: Vec<String>,
    pub precision: Real,
    pub recall: Real,
}

/// Scores `map` against `gt` (see the module docs).
pub fn score_map(
    map: &ObjectMap,
    gt: &[GtObject],
    voxel_size: Real,
    iou_threshold: Real,
) -> Result<MapScore, PerceptionError> {
    let mut pairs = Vec::new();
    for o in &map.objects {
        for g in gt {
            let iou = o.point_cloud.voxel_iou(&g.cloud, voxel_size)?;
            if iou >= iou_threshold {
                pairs.push((iou, o.id, g.id));
            }
        }
    }
    pairs.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(&b.2)));
    let mut used_o = Vec::new();
    let mut used_g = Vec::new();
    let mut matches = Vec::new();
    for (iou, o, g) in pairs {
        if used_o.contains(&o) || used_g.contains(&g) {
            continue;
        }
        used_o.push(o);
        used_g.push(g);
        let name = gt
            .iter()
            .find(|x| x.id == g)
            .map(|x| x.name.clone())
            .unwrap_or_default();
        matches.push(Match {
            object: o,
            gt_id: g,
            gt_name: name,
            iou,
        });
    }
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as Real / b as Real };
    Ok(MapScore {
        objects: map.len(),
        gt_objects: gt.len(),
        missed: gt
            .iter()
            .filter(|g| !used_g.contains(&g.id))
            .map(|g| g.name.clone())
            .collect(),
        precision: ratio(matches.len(), map.len()),
        recall: ratio(matches.len(), gt.len()),
        matches,
    })
}
