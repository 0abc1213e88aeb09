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
use asp_core::models::{AffordanceVlm, ModelError, OutcomeVlm, RetrievalVlm};
use asp_core::{Box2, PixelRect};
use asp_llm::{ClientSettings, LlmClient, OpenAiVlm, VlmSettings};
use asp_perception::HashingTextEmbedder;
use asp_perception::simulated::{SimulatedOutcomeVlm, SimulatedRetrievalVlm};
use asp_vlm_standin::{FrameLog, StandInModels, VlmStandIn};

struct Models {
    retrieval: Arc<SimulatedRetrievalVlm>,
    affordance: Arc<SimulatedAffordanceVlm>,
    outcome: Arc<SimulatedOutcomeVlm>,
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
            }
        }
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
