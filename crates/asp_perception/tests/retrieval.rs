//! object_retrieval and the spatial tools on a map built from a synthetic keyframe, with
//! the simulated retrieval VLM and the real MiniLM text embedder.
#![allow(clippy::unwrap_used)]

mod support;

use std::sync::Arc;

use asp_config::ObjectMapConfig;
use asp_config::sections::perception::{PerceptionSimulationConfig, RetrievalConfig};
use asp_core::geometry::{Isometry3, Transform};
use asp_core::map::{ObjectId, ObjectMap};
use asp_core::models::{RetrievalVlm, TextEmbedder};
use asp_perception::{
    MapBuilder, ObjectRegistry, ObjectRetriever, SimulatedImageEmbedder, SimulatedRetrievalVlm,
    SimulatedSegmenter, spatial,
};
use support::scene;

fn map(text: &Arc<dyn TextEmbedder>) -> ObjectMap {
    map_from(text, &scene::tabletop_views()[..1])
}

/// The map of the synthetic tabletop seen from `poses`.
fn map_from(text: &Arc<dyn TextEmbedder>, poses: &[Transform]) -> ObjectMap {
    let config = ObjectMapConfig::default();
    let mut b = MapBuilder::new(
        &config,
        "map",
        Arc::new(SimulatedSegmenter::new(config.simulation.clone())),
        Arc::new(SimulatedImageEmbedder::new(
            Arc::clone(text),
            config.simulation.clone(),
        )),
    )
    .unwrap();
    for pose in poses {
        b.add_keyframe(&scene::render(
            &scene::tabletop(),
            pose,
            scene::intrinsics(320, 240),
            0.0,
            0,
        ))
        .unwrap();
    }
    b.into_map()
}

/// The object whose centroid is nearest `p` (how the test knows which is which).
fn object_at(map: &ObjectMap, p: [f32; 3]) -> ObjectId {
    map.objects
        .iter()
        .min_by(|a, b| {
            let d = |o: &asp_core::map::Object| {
                (o.point_cloud.centroid().unwrap() - scene::point(p[0], p[1], p[2])).norm()
            };
            d(a).total_cmp(&d(b))
        })
        .unwrap()
        .id
}

fn retriever(
    text: &Arc<dyn TextEmbedder>,
    sim: PerceptionSimulationConfig,
    config: RetrievalConfig,
) -> ObjectRetriever {
    let vlm: Arc<dyn RetrievalVlm> = Arc::new(SimulatedRetrievalVlm::new(Arc::clone(text), sim));
    ObjectRetriever::new(Arc::clone(text), Some(vlm), config).unwrap()
}

#[tokio::test]
async fn retrieval_confirms_only_what_the_query_names() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let map = map(&text);
    let mug = object_at(&map, [0.84, -0.26, 0.8]);
    let bowl = object_at(&map, [0.98, 0.08, 0.76]);
    let r = retriever(
        &text,
        PerceptionSimulationConfig::default(),
        RetrievalConfig::default(),
    );
    let mut reg = ObjectRegistry::new();

    let found = r.retrieve(&map, &mut reg, "red mug").await.unwrap();
    assert_eq!(found.candidates.len(), 3, "top-k candidates");
    assert_eq!(found.candidates[0].id, mug, "{found:?}");
    assert_eq!(found.keys.len(), 1, "{found:?}");
    assert_eq!(found.keys[0].as_str(), "red_mug_0");
    assert_eq!(reg.resolve(&found.keys[0]), Some(mug));

    let again = r.retrieve(&map, &mut reg, "mug").await.unwrap();
    assert_eq!(
        again.keys.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        vec!["red_mug_0"]
    );

    let bowl_found = r.retrieve(&map, &mut reg, "the blue bowl").await.unwrap();
    assert_eq!(bowl_found.keys.len(), 1, "{bowl_found:?}");
    assert_eq!(reg.resolve(&bowl_found.keys[0]), Some(bowl));
    assert_eq!(bowl_found.keys[0].as_str(), "the_blue_bowl_0");

    // nothing in the scene is one: every candidate is rejected
    let none = r
        .retrieve(&map, &mut reg, "a purple elephant")
        .await
        .unwrap();
    assert!(none.keys.is_empty(), "{none:?}");
    assert_eq!(none.candidates.len(), 3);

    // without confirmation the top-k come back as they are
    let unconfirmed = retriever(
        &text,
        PerceptionSimulationConfig::default(),
        RetrievalConfig {
            confirm_with_vlm: false,
            top_k: 2,
            ..Default::default()
        },
    );
    let mut reg2 = ObjectRegistry::new();
    let all = unconfirmed
        .retrieve(&map, &mut reg2, "a purple elephant")
        .await
        .unwrap();
    assert_eq!(all.keys.len(), 2);

    // a VLM that is always wrong confirms the others and rejects the mug
    let liar = |weak_similarity| {
        retriever(
            &text,
            PerceptionSimulationConfig {
                vlm_error_rate: 1.0,
                ..Default::default()
            },
            RetrievalConfig {
                weak_similarity,
                ..Default::default()
            },
        )
    };
    let mut reg3 = ObjectRegistry::new();
    let wrong = liar(0.0)
        .retrieve(&map, &mut reg3, "red mug")
        .await
        .unwrap();
    assert_eq!(wrong.keys.len(), 2, "{wrong:?}");
    assert!(wrong.keys.iter().all(|k| reg3.resolve(k) != Some(mug)));
    // unless they are weak matches with too few views for a majority of its answers
    let gated = liar(0.3)
        .retrieve(&map, &mut reg3, "red mug")
        .await
        .unwrap();
    for c in &gated.candidates[1..] {
        let crops = map.get(c.id).unwrap().crops.len();
        assert!(c.similarity < 0.3, "{c:?}");
        assert_eq!(c.confirmed, crops >= 2, "{crops} crop(s): {gated:?}");
    }
}

#[test]
fn simulated_vlm_rule() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let vlm = SimulatedRetrievalVlm::new(Arc::clone(&text), PerceptionSimulationConfig::default());
    let desc = "a red ceramic mug with a handle";
    assert!(vlm.matches("red mug", "mug", desc).unwrap());
    assert!(vlm.matches("Mugs", "mug", desc).unwrap());
    assert!(!vlm.matches("blue mug", "mug", desc).unwrap());
    assert!(!vlm.matches("kettle", "mug", desc).unwrap());
}

#[test]
fn spatial_tools_on_a_built_map() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let map = map(&text);
    let mug = object_at(&map, [0.84, -0.26, 0.8]);
    let book = object_at(&map, [0.86, 0.33, 0.74]);
    let apple = object_at(&map, [1.13, -0.11, 0.74]);
    // the robot at the origin facing +x (the camera's viewpoint)
    let base = Transform::new("map", "base_link", Isometry3::identity());
    assert!(spatial::left_of(&map, book, mug, &base).unwrap());
    assert!(spatial::right_of(&map, mug, book, &base).unwrap());
    assert!(spatial::right_of(&map, apple, book, &base).unwrap());
    // the mug's visible surface is about 0.85 m ahead and 0.26 m right
    let d = spatial::distance_to(&map, mug, &base).unwrap();
    assert!((d - 0.87).abs() < 0.06, "{d}");
    let between = spatial::distance_between(&map, mug, book).unwrap();
    assert!((between - 0.59).abs() < 0.08, "{between}");
    // the book lies flat: 22 × 15 cm, 4 cm high (only its top and front are seen)
    let s = spatial::size_of(&map, book).unwrap();
    assert!(
        (s.length - 0.22).abs() < 0.03 && (s.width - 0.15).abs() < 0.03,
        "{s:?}"
    );
    assert!(s.height < 0.06, "{s:?}");
}

/// The simulated VLM, wrong on its first answer only.
struct FirstAnswerWrong {
    inner: SimulatedRetrievalVlm,
    calls: std::sync::atomic::AtomicUsize,
}

#[async_trait::async_trait]
impl RetrievalVlm for FirstAnswerWrong {
    async fn confirm(
        &self,
        query: &str,
        views: &[asp_core::models::Observation],
    ) -> Result<bool, asp_core::models::ModelError> {
        let n = self
            .calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let right = self.inner.confirm(query, views).await?;
        Ok(if n == 0 { !right } else { right })
    }
}

#[tokio::test]
async fn a_wrong_answer_about_one_set_of_views_is_outvoted() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    // two keyframes: the mug has two crops, so three distinct sets of views
    let map = map_from(&text, &scene::tabletop_views()[..2]);
    let mug = object_at(&map, [0.84, -0.26, 0.8]);
    assert!(map.get(mug).unwrap().crops.len() >= 2);
    for (votes, found) in [(1, false), (3, true)] {
        let vlm = FirstAnswerWrong {
            inner: SimulatedRetrievalVlm::new(
                Arc::clone(&text),
                PerceptionSimulationConfig::default(),
            ),
            calls: Default::default(),
        };
        let r = ObjectRetriever::new(
            Arc::clone(&text),
            Some(Arc::new(vlm)),
            RetrievalConfig {
                confirm_votes: votes,
                ..Default::default()
            },
        )
        .unwrap();
        let mut reg = ObjectRegistry::new();
        let got = r.retrieve(&map, &mut reg, "red mug").await.unwrap();
        assert_eq!(got.candidates[0].id, mug, "{got:?}");
        assert_eq!(
            got.keys.iter().any(|k| reg.resolve(k) == Some(mug)),
            found,
            "{votes} vote(s): {got:?}"
        );
    }
}

/// A VLM that takes anything for anything (the odd wrong yes, every time).
struct AlwaysYes;

#[async_trait::async_trait]
impl RetrievalVlm for AlwaysYes {
    async fn confirm(
        &self,
        _query: &str,
        _views: &[asp_core::models::Observation],
    ) -> Result<bool, asp_core::models::ModelError> {
        Ok(true)
    }
}

#[tokio::test]
async fn a_weak_match_is_not_confirmed_by_one_answer_about_its_only_view() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let retrieve = |map: ObjectMap, weak_similarity: f32| {
        let text = Arc::clone(&text);
        async move {
            let r = ObjectRetriever::new(
                Arc::clone(&text),
                Some(Arc::new(AlwaysYes)),
                RetrievalConfig {
                    weak_similarity,
                    ..Default::default()
                },
            )
            .unwrap();
            let mut reg = ObjectRegistry::new();
            let got = r.retrieve(&map, &mut reg, "purple unicorn").await.unwrap();
            let top = &got.candidates[0];
            assert!(top.similarity < 0.3, "{got:?}");
            top.confirmed
        }
    };
    // one keyframe: every object has one crop, one set of views, one question
    let one_view = || map_from(&text, &scene::tabletop_views()[..1]);
    assert!(one_view().objects.iter().all(|o| o.crops.len() == 1));
    // as a strong match one yes confirms it; as a weak one it does not
    assert!(retrieve(one_view(), 0.0).await);
    assert!(!retrieve(one_view(), 0.3).await);
    // with views enough for a majority of the questions, a weak match can be confirmed
    let two_views = map_from(&text, &scene::tabletop_views()[..2]);
    let many = two_views
        .objects
        .iter()
        .filter(|o| o.crops.len() >= 2)
        .count();
    assert!(many > 0);
    let r = ObjectRetriever::new(
        Arc::clone(&text),
        Some(Arc::new(AlwaysYes)),
        RetrievalConfig::default(),
    )
    .unwrap();
    let mut reg = ObjectRegistry::new();
    let got = r
        .retrieve(&two_views, &mut reg, "purple unicorn")
        .await
        .unwrap();
    for c in &got.candidates {
        let crops = two_views.get(c.id).unwrap().crops.len();
        assert_eq!(c.confirmed, crops >= 2, "{crops} crop(s): {c:?}");
    }
}

/// A map of one object whose only crop has a bowl in its centre: the segment is either
/// the table around the bowl (`ring`) or the whole crop.
fn map_with_a_crop_around_a_bowl(text: &Arc<dyn TextEmbedder>, ring: bool) -> ObjectMap {
    use asp_core::camera::CameraIntrinsics;
    use asp_core::geometry::{Point3, PointCloud};
    use asp_core::image::{Image, Mask, PixelRect};
    use asp_core::map::{Crop, Object};
    use asp_core::models::{GroundTruth, GtInstance};
    let (w, h) = (96u32, 64u32);
    let bowl = |x: u32, y: u32| {
        let (dx, dy) = (x as f64 - 48.0, y as f64 - 32.0);
        dx * dx + dy * dy < 20.0 * 20.0
    };
    let mut ids = Vec::new();
    let mut rgb = Vec::new();
    let mut mask = Mask::empty(w, h);
    for y in 0..h {
        for x in 0..w {
            let b = bowl(x, y);
            ids.push(if b { 2 } else { 1 });
            rgb.push(if b { [30, 40, 200] } else { [150, 110, 60] });
            mask.set(x, y, !ring || !b);
        }
    }
    let instance = |id: u32, name: &str, description: &str| {
        (
            id,
            GtInstance {
                id,
                name: name.into(),
                description: description.into(),
                fixed: false,
            },
        )
    };
    let gt = GroundTruth {
        instance_ids: Image::from_vec(w, h, ids).unwrap(),
        part_ids: Image::filled(w, h, 0),
        instances: [
            instance(1, "table", "a wooden dining table"),
            instance(2, "bowl", "a blue plastic bowl"),
        ]
        .into(),
        parts: Default::default(),
    };
    let crop = Crop {
        rgb: Image::from_vec(w, h, rgb).unwrap(),
        depth: Image::filled(w, h, 1.0),
        mask,
        source_rect: PixelRect {
            x0: 0,
            y0: 0,
            x1: w,
            y1: h,
        },
        intrinsics: CameraIntrinsics::from_hfov(w, h, 1.0),
        camera_pose: Transform::identity("map"),
        keyframe: 0,
        segment_area: u64::from(w * h),
        touches_border: false,
        ground_truth: Some(gt),
    };
    let mut map = ObjectMap::new("map");
    let id = map.allocate_id();
    map.objects.push(Object {
        id,
        point_cloud: PointCloud::new("map", vec![Point3::origin()]),
        crops: vec![crop],
        // the padded box's embedding looks like the bowl in its middle
        features: text.embed_text("a blue bowl").unwrap(),
        observations: 1,
        affordances: vec![],
    });
    map
}

/// The VLM is told the object is the one in the centre of its view; a table fragment
/// whose padded box has a bowl in the middle is shown from its own interior instead,
/// so it is not taken for the bowl. A segment that holds the bowl still is.
#[tokio::test]
async fn a_segment_around_another_object_is_not_confirmed_as_that_object() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let r = retriever(
        &text,
        PerceptionSimulationConfig::default(),
        RetrievalConfig::default(),
    );
    for (ring, confirmed) in [(true, false), (false, true)] {
        let map = map_with_a_crop_around_a_bowl(&text, ring);
        let mut reg = ObjectRegistry::new();
        let got = r.retrieve(&map, &mut reg, "bowl").await.unwrap();
        assert_eq!(got.candidates.len(), 1);
        assert_eq!(
            got.candidates[0].confirmed, confirmed,
            "ring {ring}: {got:?}"
        );
    }
}

#[tokio::test]
async fn an_object_left_out_of_a_retrieval_gives_its_place_to_the_next() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    let map = map(&text);
    let mug = object_at(&map, [0.84, -0.26, 0.8]);
    let r = retriever(
        &text,
        PerceptionSimulationConfig::default(),
        RetrievalConfig {
            top_k: 2,
            ..Default::default()
        },
    );
    let mut reg = ObjectRegistry::new();
    let all = r.retrieve(&map, &mut reg, "red mug").await.unwrap();
    assert_eq!(all.candidates[0].id, mug, "{all:?}");
    let key = all.keys[0].clone();
    // the mug left out: the top-2 are ranked among the rest, the mug is not asked about
    let without = r
        .retrieve_where(&map, &mut reg, "red mug", |o| o.id != mug)
        .await
        .unwrap();
    assert_eq!(without.candidates.len(), 2, "{without:?}");
    assert!(
        without.candidates.iter().all(|c| c.id != mug),
        "{without:?}"
    );
    assert_eq!(without.candidates[0].id, all.candidates[1].id);
    assert!(
        without.keys.is_empty(),
        "nothing else is a red mug: {without:?}"
    );
    // a forgotten key names nothing and is not given again
    assert_eq!(reg.remove(&key), Some(mug));
    assert_eq!(reg.resolve(&key), None);
    assert_eq!(reg.remove(&key), None);
    let again = r.retrieve(&map, &mut reg, "red mug").await.unwrap();
    assert_eq!(again.keys[0].as_str(), "red_mug_1", "{again:?}");
    // asked about one object directly
    let obj = map.get(mug).unwrap();
    assert!(r.confirm(obj, "red mug").await.unwrap());
    assert!(!r.confirm(obj, "a purple elephant").await.unwrap());
}

/// The simulated VLM, keeping every view it was shown.
struct Recording {
    inner: SimulatedRetrievalVlm,
    shown: std::sync::Mutex<Vec<asp_core::models::Observation>>,
}

#[async_trait::async_trait]
impl RetrievalVlm for Recording {
    async fn confirm(
        &self,
        query: &str,
        views: &[asp_core::models::Observation],
    ) -> Result<bool, asp_core::models::ModelError> {
        self.shown.lock().unwrap().extend_from_slice(views);
        self.inner.confirm(query, views).await
    }
}

#[tokio::test]
async fn a_closer_look_is_judged_by_its_own_views() {
    let text: Arc<dyn TextEmbedder> = Arc::new(support::minilm());
    // keyframe 0 from the middle, keyframe 1 from the right: the mug is in both
    let map = map_from(&text, &scene::tabletop_views()[..2]);
    let mug = object_at(&map, [0.84, -0.26, 0.8]);
    let frames = |id: ObjectId| -> Vec<u32> {
        map.get(id)
            .unwrap()
            .crops
            .iter()
            .map(|c| c.keyframe)
            .collect()
    };
    assert!(
        frames(mug).contains(&0) && frames(mug).contains(&1),
        "{:?}",
        frames(mug)
    );
    let vlm = Arc::new(Recording {
        inner: SimulatedRetrievalVlm::new(Arc::clone(&text), PerceptionSimulationConfig::default()),
        shown: Default::default(),
    });
    let r = ObjectRetriever::new(
        Arc::clone(&text),
        Some(vlm.clone() as Arc<dyn RetrievalVlm>),
        RetrievalConfig {
            top_k: map.len(),
            ..Default::default()
        },
    )
    .unwrap();
    let crops_from = |keyframe: u32| -> Vec<asp_core::models::Observation> {
        map.objects
            .iter()
            .flat_map(|o| o.crops.iter())
            .filter(|c| c.keyframe == keyframe)
            .map(|c| c.centred_observation())
            .collect()
    };
    let (first_view, second_view) = (crops_from(0), crops_from(1));
    let shown = || std::mem::take(&mut *vlm.shown.lock().unwrap());
    let mut reg = ObjectRegistry::new();
    let got = r
        .retrieve_seen_since(&map, &mut reg, "red mug", |_| true, 1)
        .await
        .unwrap();
    assert_eq!(got.candidates[0].id, mug, "{got:?}");
    assert_eq!(got.keys.len(), 1, "{got:?}");
    // only objects the second view saw are candidates, and the VLM saw their crops
    // from it alone
    for c in &got.candidates {
        assert!(frames(c.id).contains(&1), "{c:?}: {:?}", frames(c.id));
    }
    let views = shown();
    assert!(!views.is_empty());
    assert!(views.iter().all(|v| second_view.contains(v)));
    assert!(!views.iter().any(|v| first_view.contains(v)));
    // a plain retrieval shows the first view's crops too
    r.retrieve(&map, &mut reg, "red mug").await.unwrap();
    assert!(shown().iter().any(|v| first_view.contains(v)));
    // nothing seen since a keyframe that does not exist yet
    let none = r
        .retrieve_seen_since(&map, &mut reg, "red mug", |_| true, 2)
        .await
        .unwrap();
    assert!(
        none.candidates.is_empty() && none.keys.is_empty(),
        "{none:?}"
    );
}
