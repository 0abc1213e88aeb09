//! The product's own VLM client (`asp_llm::OpenAiVlm`, real HTTP on loopback) asks the
//! stand-in server, and gets what the stand-in models answer when called directly: the
//! question, its argument and the images' ground truth all survive the trip.

use std::net::SocketAddr;
use std::sync::Arc;

use asp_affordance::SimulatedAffordanceVlm;
use asp_affordance::synthetic::{GroundingSample, dataset};
use asp_config::sections::affordance::SimulatedModelsConfig;
use asp_config::sections::agent::{BboxFormat, JsonResponseFormat, LlmConfig};
use asp_config::sections::perception::PerceptionSimulationConfig;
use asp_core::models::{
    AffordanceVlm, GroundTruth, MemoryVlm, ModelError, Observation, OutcomeVlm, RetrievalVlm,
    ViewAffordance, ViewDescription,
};
use asp_core::{Box2, PixelRect};
use asp_llm::{ClientSettings, LlmClient, OpenAiVlm, VlmSettings};
use asp_perception::HashingTextEmbedder;
use asp_perception::simulated::{
    SimulatedMemoryParams, SimulatedMemoryVlm, SimulatedOutcomeVlm, SimulatedRetrievalVlm,
};
use asp_vlm_standin::{FrameLog, StandInModels, VlmStandIn};
use asp_web_standin::{ConceptErrors, Corpus, CorpusVlm};

fn corpus() -> Corpus {
    Corpus::load(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/concepts/corpus.yaml"),
    )
    .expect("the shipped corpus")
}

struct Models {
    retrieval: Arc<SimulatedRetrievalVlm>,
    affordance: Arc<SimulatedAffordanceVlm>,
    outcome: Arc<SimulatedOutcomeVlm>,
    memory: Arc<SimulatedMemoryVlm>,
    concept: Arc<CorpusVlm>,
}

/// Stand-ins with errors on, so a lost argument or a wrong ground truth shows.
fn models() -> Models {
    Models {
        retrieval: Arc::new(SimulatedRetrievalVlm::new(
            Arc::new(HashingTextEmbedder::new(384)),
            PerceptionSimulationConfig {
                vlm_error_rate: 0.2,
                ..PerceptionSimulationConfig::default()
            },
        )),
        affordance: Arc::new(SimulatedAffordanceVlm::new(SimulatedModelsConfig {
            wrong_part_rate: 0.2,
            miss_rate: 0.1,
            ..SimulatedModelsConfig::default()
        })),
        outcome: Arc::new(SimulatedOutcomeVlm::new(0.2, 5)),
        memory: Arc::new(SimulatedMemoryVlm::new(SimulatedMemoryParams {
            seed: 9,
            ..SimulatedMemoryParams::default()
        })),
        concept: Arc::new(CorpusVlm::new(
            Arc::new(corpus()),
            ConceptErrors {
                keyword: 0.3,
                replacement: 0.3,
                seed: 4,
            },
        )),
    }
}

async fn serve(m: &Models, frames: &Arc<FrameLog>) -> VlmStandIn {
    let bind: SocketAddr = "127.0.0.1:0".parse().expect("address");
    VlmStandIn::start(
        bind,
        Arc::clone(frames),
        StandInModels {
            retrieval: m.retrieval.clone(),
            affordance: m.affordance.clone(),
            outcome: m.outcome.clone(),
            memory: m.memory.clone(),
            concept: Some(m.concept.clone()),
        },
    )
    .await
    .expect("stand-in starts")
}

fn client(base_url: &str, format: JsonResponseFormat, bbox: BboxFormat) -> OpenAiVlm {
    let llm = LlmConfig {
        base_url: base_url.into(),
        api_key_env: String::new(),
        max_retries: 0,
        ..LlmConfig::default()
    };
    let client = LlmClient::new(ClientSettings::from_config(&llm), None).expect("client");
    OpenAiVlm::new(
        Arc::new(client),
        VlmSettings {
            model: None,
            response_format: format,
            bbox_format: bbox,
            max_repairs: 0,
            max_image_side: 1024,
        },
    )
}

/// Stand-in models, an empty frame log, the server over them, and a client of it.
async fn standin() -> (Models, Arc<FrameLog>, VlmStandIn, OpenAiVlm) {
    let m = models();
    let frames = Arc::new(FrameLog::new(8));
    let server = serve(&m, &frames).await;
    let vlm = client(
        &server.base_url(),
        JsonResponseFormat::JsonSchema,
        BboxFormat::Pixels,
    );
    (m, frames, server, vlm)
}

fn samples() -> Vec<GroundingSample> {
    dataset(2, 11)
}

/// Two descriptions alike up to `tol` pixels per box edge and 1e-3 per score.
fn same_description(a: &ViewDescription, b: &ViewDescription, tol: f32) -> Result<(), String> {
    let why = || format!("{a:?}\nvs\n{b:?}");
    if a.description != b.description || a.objects.len() != b.objects.len() {
        return Err(why());
    }
    for (x, y) in a.objects.iter().zip(&b.objects) {
        let scores_alike = x.affordances.len() == y.affordances.len()
            && x.affordances
                .iter()
                .zip(&y.affordances)
                .all(|(p, q)| p.affordance == q.affordance && (p.score - q.score).abs() < 1e-3);
        if x.description != y.description || !close(&x.bbox, &y.bbox, tol) || !scores_alike {
            return Err(why());
        }
    }
    Ok(())
}

fn close(a: &Box2, b: &Box2, tol: f32) -> bool {
    [(a.x0, b.x0), (a.y0, b.y0), (a.x1, b.x1), (a.y1, b.y1)]
        .iter()
        .all(|(p, q)| (p - q).abs() <= tol)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_question_comes_back_as_the_stand_in_answers_it() {
    let m = models();
    let frames = Arc::new(FrameLog::new(64));
    let server = serve(&m, &frames).await;
    let samples = samples();
    for s in &samples {
        let gt = s
            .view
            .ground_truth
            .as_ref()
            .expect("synthetic views carry truth");
        frames.record(&s.view.rgb, gt);
    }
    for (format, bbox) in [
        (JsonResponseFormat::JsonSchema, BboxFormat::Pixels),
        (JsonResponseFormat::JsonObject, BboxFormat::Normalized1000Yx),
    ] {
        let vlm = client(&server.base_url(), format, bbox);
        let mut described = 0;
        for s in &samples {
            // a crop of the frame, as the product sends an object's or a part's view
            let (w, h) = (s.view.width(), s.view.height());
            let inner = s.view.crop(&PixelRect {
                x0: 2,
                y0: 1,
                x1: w - 1,
                y1: h - 2,
            });
            for view in [&s.view, &inner] {
                let views = std::slice::from_ref(view);
                for query in [s.object_name.as_str(), "a green watering can"] {
                    assert_eq!(
                        vlm.confirm(query, views).await.expect("confirm"),
                        m.retrieval.confirm(query, views).await.expect("direct"),
                        "{} / {query}",
                        s.id
                    );
                }
                assert_eq!(
                    vlm.propose(&s.action, views).await.expect("propose"),
                    m.affordance
                        .propose(&s.action, views)
                        .await
                        .expect("direct"),
                    "{}",
                    s.id
                );
                let got = vlm.locate_part(&s.part_name, view).await.expect("locate");
                let want = m
                    .affordance
                    .locate_part(&s.part_name, view)
                    .await
                    .expect("direct");
                match (&got, &want) {
                    (None, None) => {}
                    (Some(g), Some(w)) => {
                        // the 0-1000 format rounds to a thousandth of the image
                        assert!(close(&g.bbox, &w.bbox, 1.0), "{}: {g:?} vs {w:?}", s.id);
                        assert!((g.confidence - w.confidence).abs() < 1e-3);
                    }
                    _ => panic!("{}: {got:?} vs {want:?}", s.id),
                }
                let got = vlm.describe_view(view).await.expect("describe");
                let want = m.memory.describe_view(view).await.expect("direct");
                described += want.objects.len();
                if let Err(e) = same_description(&got, &want, 1.0) {
                    panic!("{}: {e}", s.id);
                }
            }
        }
        assert!(described > samples.len(), "objects came back: {described}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_press_that_shows_nothing_is_judged_on_the_frames_before_and_after() {
    let (m, frames, _server, vlm) = standin().await;
    let s = samples()
        .into_iter()
        .find(|s| s.action.contains("press") || s.action.contains("push"))
        .expect("a sample with a key or button");
    let before = s.view.ground_truth.clone().expect("truth");
    let mut after = before.clone();
    let part = after
        .parts
        .values_mut()
        .find(|p| p.name == s.part_name)
        .expect("the sample's part");
    part.presses += 1;
    // the same pixels twice: before the press, then after it
    frames.record(&s.view.rgb, &before);
    frames.record(&s.view.rgb, &after);
    let question = format!("Has the {} been pressed?", s.part_name);
    assert!(
        SimulatedOutcomeVlm::pressed(&question, &before, &after),
        "the noiseless answer is yes"
    );
    let mut b = s.view.clone();
    b.ground_truth = Some(before);
    let mut a = s.view.clone();
    a.ground_truth = Some(after);
    let direct = m.outcome.yes_no(&question, &b, &a).await.expect("direct");
    assert_eq!(
        vlm.yes_no(&question, &s.view, &s.view)
            .await
            .expect("yes/no"),
        direct
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_image_the_simulator_never_rendered_is_refused() {
    let (_m, _frames, _server, vlm) = standin().await;
    let s = &samples()[0];
    let err = vlm
        .confirm(&s.object_name, std::slice::from_ref(&s.view))
        .await
        .expect_err("no frame holds it");
    match err {
        ModelError::Backend { message, .. } => {
            assert!(message.contains("not part of any"), "{message}")
        }
        other => panic!("expected a backend error, got {other:?}"),
    }
}

/// Two views side by side as one frame, as a wider camera would see both objects: `b`'s
/// instance ids +10, its part ids +1000, its object a fixture when `b_fixed`.
fn side_by_side(a: &Observation, b: &Observation, b_fixed: bool) -> Observation {
    let (ga, gb) = (
        a.ground_truth.as_ref().expect("truth"),
        b.ground_truth.as_ref().expect("truth"),
    );
    let (w, h) = (a.width() + b.width(), a.height().max(b.height()));
    let n = (w * h) as usize;
    let (mut rgb, mut inst, mut part) = (vec![[100u8; 3]; n], vec![0u32; n], vec![0u32; n]);
    for (view, gt, dx, di, dp) in [(a, ga, 0, 0, 0), (b, gb, a.width(), 10, 1000)] {
        for (x, y, px) in view.rgb.enumerate() {
            let k = (y * w + x + dx) as usize;
            rgb[k] = *px;
            let (i, p) = (gt.instance_ids.pixels(), gt.part_ids.pixels());
            let j = (y * view.width() + x) as usize;
            inst[k] = if i[j] == 0 { 0 } else { i[j] + di };
            part[k] = if p[j] == 0 { 0 } else { p[j] + dp };
        }
    }
    let mut instances = ga.instances.clone();
    for (id, i) in &gb.instances {
        let mut i = i.clone();
        i.id = id + 10;
        i.fixed = b_fixed;
        instances.insert(id + 10, i);
    }
    let mut parts = ga.parts.clone();
    for (id, p) in &gb.parts {
        let mut p = p.clone();
        p.id = id + 1000;
        p.instance += 10;
        parts.insert(id + 1000, p);
    }
    Observation {
        rgb: asp_core::RgbImage::from_vec(w, h, rgb).expect("rgb"),
        depth: None,
        ground_truth: Some(GroundTruth {
            instance_ids: asp_core::LabelImage::from_vec(w, h, inst).expect("instances"),
            part_ids: asp_core::LabelImage::from_vec(w, h, part).expect("parts"),
            instances,
            parts,
        }),
    }
}

/// `gt`'s instances of `min_pixels` pixels or more, largest first: (id, mask box, pixels).
fn visible_instances(gt: &GroundTruth, min_pixels: u64) -> Vec<(u32, Box2, u64)> {
    let mut out: Vec<(u32, Box2, u64)> = gt
        .instances
        .keys()
        .filter_map(|&id| {
            let mask = gt.instance_mask(id);
            let rect = mask.bounding_rect()?;
            (mask.area() >= min_pixels).then(|| (id, rect.to_box(), mask.area()))
        })
        .collect();
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_described_with_the_visible_objects_their_boxes_and_affordances() {
    let mut m = models();
    m.memory = Arc::new(SimulatedMemoryVlm::new(SimulatedMemoryParams::noiseless(3)));
    let frames = Arc::new(FrameLog::new(64));
    let server = serve(&m, &frames).await;
    // frames of two objects each, the second a fixture (furniture: placed on, not picked)
    // every other time; each frame and a crop of it are described
    let samples = samples();
    let mut views: Vec<(String, Observation)> = Vec::new();
    for (i, pair) in samples.chunks_exact(2).enumerate() {
        let frame = side_by_side(&pair[0].view, &pair[1].view, i % 2 == 0);
        frames.record(&frame.rgb, frame.ground_truth.as_ref().expect("truth"));
        let (w, h) = (frame.width(), frame.height());
        let inner = frame.crop(&PixelRect {
            x0: 3,
            y0: 2,
            x1: w - 2,
            y1: h - 1,
        });
        let id = format!("{} + {}", pair[0].id, pair[1].id);
        views.push((format!("{id} (crop)"), inner));
        views.push((id, frame));
    }
    let pixels = client(
        &server.base_url(),
        JsonResponseFormat::JsonSchema,
        BboxFormat::Pixels,
    );
    let yx = client(
        &server.base_url(),
        JsonResponseFormat::JsonObject,
        BboxFormat::Normalized1000Yx,
    );
    let (mut picked, mut placed, mut opened) = (0, 0, 0);
    let min = u64::from(SimulatedMemoryParams::default().min_pixels);
    for (id, view) in &views {
        let gt = view.ground_truth.as_ref().expect("truth");
        let want = visible_instances(gt, min);
        assert_eq!(want.len(), 2, "{id}: both objects are in view");
        let d = pixels.describe_view(view).await.expect("describe");
        assert_eq!(d.objects.len(), want.len(), "{id}: {d:?}");
        assert!(d.description.starts_with("a view of "), "{id}: {d:?}");
        for (o, (instance, mask_box, _)) in d.objects.iter().zip(&want) {
            let truth = &gt.instances[instance];
            // the ground truth's description without its article
            assert_eq!(
                truth.description.strip_prefix("a "),
                Some(o.description.as_str()),
                "{id}: {o:?} vs {truth:?}"
            );
            assert!(close(&o.bbox, mask_box, 0.5), "{id}: {o:?} vs {mask_box:?}");
            let kinds: Vec<ViewAffordance> = o.affordances.iter().map(|a| a.affordance).collect();
            if truth.fixed {
                assert_eq!(kinds.first(), Some(&ViewAffordance::Place), "{id}: {o:?}");
                placed += 1;
            } else {
                assert_eq!(kinds.first(), Some(&ViewAffordance::Pick), "{id}: {o:?}");
                picked += 1;
            }
            let drawer = gt
                .parts
                .values()
                .any(|p| p.instance == *instance && p.skills.contains(&asp_core::Skill::HookPull));
            let opens =
                kinds.contains(&ViewAffordance::Open) && kinds.contains(&ViewAffordance::Close);
            assert_eq!(opens, drawer, "{id}: {o:?}");
            opened += usize::from(opens);
            assert!(o.affordances.iter().all(|a| (0.0..=1.0).contains(&a.score)));
        }
        // the same question with Gemini-style boxes: the same boxes, to a pixel or two
        let g = yx.describe_view(view).await.expect("describe, 0-1000 y-x");
        if let Err(e) = same_description(&g, &d, 2.0) {
            panic!("{id}: {e}");
        }
    }
    assert!(
        picked > 0 && placed > 0 && opened > 0,
        "{picked} {placed} {opened}"
    );
    // an image the simulator never rendered is refused
    let mut other = views[0].1.clone();
    other.rgb = asp_core::RgbImage::filled(other.width(), other.height(), [1, 2, 3]);
    match pixels
        .describe_view(&other)
        .await
        .expect_err("never rendered")
    {
        ModelError::Backend { message, .. } => {
            assert!(message.contains("not part of any"), "{message}")
        }
        e => panic!("expected a backend error, got {e:?}"),
    }
}

#[tokio::test]
async fn concept_questions_about_a_collage_survive_the_trip() {
    use asp_core::models::{Collage, ConceptVlm};
    let (m, _frames, _server, vlm) = standin().await;
    let corpus = corpus();
    let known: Vec<String> = corpus
        .concepts()
        .iter()
        .map(|c| c.replacement.clone())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    for c in corpus.concepts().iter().step_by(7) {
        let pictures: Vec<_> = (0..3)
            .map(|n| asp_web_standin::render::picture(c, n).expect("renders"))
            .collect();
        let cell = (
            asp_web_standin::render::WIDTH,
            asp_web_standin::render::HEIGHT,
        );
        let collage = Collage::grid(&pictures, 2, cell).expect("collage");
        // over HTTP and directly: the same answer (errors on, so a lost argument shows)
        let over_http = vlm.keywords(&c.name, &collage).await.expect("keywords");
        let direct = m.concept.keywords(&c.name, &collage).await.expect("direct");
        assert_eq!(over_http, direct, "{}", c.name);
        let over_http = vlm
            .replacement(&c.name, &collage, &direct, &[], &known)
            .await
            .expect("replacement");
        let direct = m
            .concept
            .replacement(&c.name, &collage, &direct, &[], &known)
            .await
            .expect("direct");
        assert_eq!(over_http, direct, "{}", c.name);
    }
}
