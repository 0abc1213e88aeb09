//! The HTTP server: `POST /v1/chat/completions` (and `GET /v1/models`), answering each
//! question with the stand-in models over the images' ground truth.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use asp_core::Box2;
use asp_core::models::{
    AffordanceVlm, Collage, ConceptVlm, MemoryVlm, Observation, OutcomeVlm, RetrievalVlm,
};
use axum::Json;
use axum::Router;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::{get, post};
use serde_json::{Value, json};
use tracing::{debug, warn};

use crate::frames::{Found, FrameLog};
use crate::questions::{Asked, Question, completion, read};

/// The models that answer, each reading the ground truth of the images it is shown.
#[derive(Clone)]
pub struct StandInModels {
    pub retrieval: Arc<dyn RetrievalVlm>,
    pub affordance: Arc<dyn AffordanceVlm>,
    pub outcome: Arc<dyn OutcomeVlm>,
    /// Tour views described for memory construction.
    pub memory: Arc<dyn MemoryVlm>,
    /// Concept questions about collages of web pictures (`None`: refused).
    pub concept: Option<Arc<dyn ConceptVlm>>,
}

impl std::fmt::Debug for StandInModels {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StandInModels").finish_non_exhaustive()
    }
}

/// The model name the stand-in reports.
pub const MODEL: &str = "asp-vlm-standin";

struct Shared {
    frames: Arc<FrameLog>,
    models: StandInModels,
    answered: AtomicUsize,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("frames", &self.frames.len())
            .finish_non_exhaustive()
    }
}

/// A running stand-in; dropping it stops the server.
#[derive(Debug)]
pub struct VlmStandIn {
    addr: SocketAddr,
    shared: Arc<Shared>,
    shutdown: Option<tokio::sync::oneshot::Sender<()>>,
}

impl VlmStandIn {
    /// Serves on `bind` (port 0: a free one), answering about the frames of `frames`.
    pub async fn start(
        bind: SocketAddr,
        frames: Arc<FrameLog>,
        models: StandInModels,
    ) -> std::io::Result<Self> {
        let listener = tokio::net::TcpListener::bind(bind).await?;
        let addr = listener.local_addr()?;
        let shared = Arc::new(Shared {
            frames,
            models,
            answered: AtomicUsize::new(0),
        });
        let app = Router::new()
            .route("/v1/chat/completions", post(chat))
            .route("/v1/models", get(models_list))
            .with_state(Arc::clone(&shared));
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(async move {
            let served = axum::serve(listener, app)
                .with_graceful_shutdown(async {
                    let _ = rx.await;
                })
                .await;
            if let Err(e) = served {
                warn!(error = %e, "the VLM stand-in stopped");
            }
        });
        Ok(Self {
            addr,
            shared,
            shutdown: Some(tx),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR/v1`, what clients are configured with.
    pub fn base_url(&self) -> String {
        format!("http://{}/v1", self.addr)
    }

    pub fn frames(&self) -> &Arc<FrameLog> {
        &self.shared.frames
    }

    /// Questions answered so far.
    pub fn answered(&self) -> usize {
        self.shared.answered.load(Ordering::Relaxed)
    }
}

impl Drop for VlmStandIn {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
    }
}

async fn models_list() -> Json<Value> {
    Json(json!({"object": "list", "data": [{"id": MODEL, "object": "model"}]}))
}

fn error(status: StatusCode, message: String) -> (StatusCode, Json<Value>) {
    debug!(%message, "VLM stand-in refuses a request");
    (
        status,
        Json(json!({"error": {"message": message, "type": "invalid_request_error"}})),
    )
}

/// `b` (pixels of a `w × h` image) as the question asks for it: `[x0, y0, x1, y1]` in
/// pixels, or `[ymin, xmin, ymax, xmax]` in thousandths of the height and width.
fn box_as_asked(b: &Box2, w: f32, h: f32, normalized_yx: bool) -> [f32; 4] {
    if normalized_yx {
        [
            b.y0 / h * 1000.0,
            b.x0 / w * 1000.0,
            b.y1 / h * 1000.0,
            b.x1 / w * 1000.0,
        ]
    } else {
        [b.x0, b.y0, b.x1, b.y1]
    }
}

/// The frame each image was cut from. With two images (before, after), the before is
/// looked for among frames older than the after's: the same pixels rendered before and
/// after a step that shows nothing are two frames, not one.
fn observations(frames: &FrameLog, urls: &[String]) -> Result<Vec<Observation>, String> {
    let mut images = Vec::with_capacity(urls.len());
    for (i, url) in urls.iter().enumerate() {
        images.push(
            asp_llm::image::decode_png_data_url(url)
                .map_err(|e| format!("image {}: {e}", i + 1))?,
        );
    }
    let not_seen = |i: usize| {
        format!(
            "image {} ({}×{}) is not part of any of the last {} rendered frames: the stand-in \
             answers about simulator images only",
            i + 1,
            images[i].width(),
            images[i].height(),
            frames.len()
        )
    };
    if images.len() == 2 {
        let after: Found = frames.find(&images[1], None).ok_or_else(|| not_seen(1))?;
        let before = frames
            .find(&images[0], Some(after.seq))
            .or_else(|| frames.find(&images[0], None))
            .ok_or_else(|| not_seen(0))?;
        return Ok(vec![before.observation, after.observation]);
    }
    images
        .iter()
        .enumerate()
        .map(|(i, img)| {
            frames
                .find(img, None)
                .map(|f| f.observation)
                .ok_or_else(|| not_seen(i))
        })
        .collect()
}

async fn chat(
    State(shared): State<Arc<Shared>>,
    Json(request): Json<Value>,
) -> Result<Json<Value>, (StatusCode, Json<Value>)> {
    let bad = |m: String| error(StatusCode::BAD_REQUEST, m);
    let asked = read(&request).map_err(bad)?;
    if matches!(
        asked.question,
        Question::Keywords { .. } | Question::Replacement { .. }
    ) {
        // a collage of web pictures, not a crop of a rendered frame
        let answer = concept_answer(&shared, &asked).await?;
        shared.answered.fetch_add(1, Ordering::Relaxed);
        return Ok(Json(completion(MODEL, &answer)));
    }
    let views = observations(&shared.frames, &asked.images)
        .map_err(|m| error(StatusCode::UNPROCESSABLE_ENTITY, m))?;
    let failed =
        |e: asp_core::models::ModelError| error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string());
    let m = &shared.models;
    let answer = match &asked.question {
        Question::Confirm { query } => {
            let matches = m.retrieval.confirm(query, &views).await.map_err(failed)?;
            json!({"matches": matches, "reason": "judged from the simulator's labels"})
        }
        Question::Propose { action } => {
            let pairs = m.affordance.propose(action, &views).await.map_err(failed)?;
            json!({"pairs": pairs.iter().map(|p| json!({"skill": p.skill.name(), "part": p.part}))
                .collect::<Vec<_>>()})
        }
        Question::Locate {
            part,
            normalized_yx,
        } => {
            let view = views
                .first()
                .ok_or_else(|| bad("a part is looked for in one image; none came".into()))?;
            match m.affordance.locate_part(part, view).await.map_err(failed)? {
                None => json!({"visible": false, "bbox": null, "confidence": 0}),
                Some(loc) => {
                    let (w, h) = (view.width() as f32, view.height() as f32);
                    let bbox = box_as_asked(&loc.bbox, w, h, *normalized_yx);
                    json!({"visible": true, "bbox": bbox, "confidence": loc.confidence})
                }
            }
        }
        Question::YesNo { question } => {
            let [before, after] = views.as_slice() else {
                return Err(bad(format!(
                    "a before/after question takes two images, not {}",
                    views.len()
                )));
            };
            let yes = m
                .outcome
                .yes_no(question, before, after)
                .await
                .map_err(failed)?;
            json!({"answer": if yes { "yes" } else { "no" }, "reason": "judged from the simulator's labels"})
        }
        Question::Keywords { .. } | Question::Replacement { .. } => {
            return Err(bad("a concept question reached the frame questions".into()));
        }
        Question::Describe { normalized_yx } => {
            let view = views
                .first()
                .ok_or_else(|| bad("a view is described from one image; none came".into()))?;
            let d = m.memory.describe_view(view).await.map_err(failed)?;
            let (w, h) = (view.width() as f32, view.height() as f32);
            let objects: Vec<Value> = d
                .objects
                .iter()
                .map(|o| {
                    json!({
                        "description": o.description,
                        "bbox": box_as_asked(&o.bbox, w, h, *normalized_yx),
                        "affordances": o.affordances.iter()
                            .map(|a| json!({"affordance": a.affordance.name(), "score": a.score}))
                            .collect::<Vec<_>>(),
                    })
                })
                .collect();
            json!({"scene": d.description, "objects": objects})
        }
    };
    shared.answered.fetch_add(1, Ordering::Relaxed);
    Ok(Json(completion(MODEL, &answer)))
}

/// Answers a concept question about the collage the request carries.
async fn concept_answer(
    shared: &Shared,
    asked: &Asked,
) -> Result<Value, (StatusCode, Json<Value>)> {
    let unprocessable = |m: String| error(StatusCode::UNPROCESSABLE_ENTITY, m);
    let model = shared.models.concept.as_ref().ok_or_else(|| {
        error(
            StatusCode::BAD_REQUEST,
            "this stand-in has no concept model: it answers no question about web pictures".into(),
        )
    })?;
    let [url] = asked.images.as_slice() else {
        return Err(unprocessable(format!(
            "a concept question takes one collage, not {} images",
            asked.images.len()
        )));
    };
    let rgb = asp_llm::image::decode_png_data_url(url).map_err(unprocessable)?;
    let (word, pictures, columns) = match &asked.question {
        Question::Keywords {
            word,
            pictures,
            columns,
        }
        | Question::Replacement {
            word,
            pictures,
            columns,
            ..
        } => (word, *pictures, *columns),
        _ => return Err(unprocessable("not a concept question".into())),
    };
    let rows = pictures.div_ceil(columns.max(1));
    let collage = Collage {
        cell: (rgb.width() / columns.max(1), rgb.height() / rows.max(1)),
        image: Observation {
            rgb,
            depth: None,
            ground_truth: None,
        },
        columns,
        pictures,
    };
    let failed = |e: asp_core::models::ModelError| unprocessable(e.to_string());
    Ok(match &asked.question {
        Question::Replacement { known, .. } => {
            // the keywords are the stand-in's own reading of the same collage
            let keywords = model.keywords(word, &collage).await.map_err(failed)?;
            let r = model
                .replacement(word, &collage, &keywords, &[], known)
                .await
                .map_err(failed)?;
            json!({"replacement": r, "reason": "judged from the corpus's truth"})
        }
        _ => {
            let k = model.keywords(word, &collage).await.map_err(failed)?;
            json!({"colour": k.colour, "shape": k.shape, "material": k.material, "size": k.size, "function": k.function})
        }
    })
}
