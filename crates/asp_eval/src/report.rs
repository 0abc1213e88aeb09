//! Self-contained HTML episode reports: one file, images inline as base64 PNG, no
//! scripts. Sections: the outcome at a glance; camera frames at the start and the end;
//! the detected affordances projected into the views they were found in and into the
//! start frame; the segmented objects of the map (best crop with its mask); the tool-call
//! timeline with every verifier verdict; and the final state of the agent and the world.
//!
//! Element classes tests (and scripts) can rely on: every tool call is a
//! `<section class="call" data-index="N" data-tool="…">`, every verdict an
//! `<li class="verdict pass|fail" data-stage="…">`, every image an `<img src="data:image/png;base64,…">`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use asp_agent::{AgentEvent, GoalStatus, Verdict, args_text};
use asp_core::{ObjectId, ObjectKey, Pose2D, RgbImage};
use asp_sim::SimRobot;
use asp_sim::scenario::Scenario;
use asp_system::JournalEntry;
use asp_system::ports::MapSnapshot;
use serde::{Deserialize, Serialize};

use crate::episode::{Classification, Counts, EpisodeResult, Trace, WallTimes};
use crate::error::EvalError;
use crate::image::{
    draw_bounds, draw_points, mask_overlay, palette, png_data_url, project, upscale,
};
use crate::runner::render_cameras;

/// One partial-credit level of a scenario and whether it held at the end.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PartialLevel {
    pub score: f64,
    /// The predicate as JSON.
    pub predicate: String,
    pub holds: bool,
}

/// How a scenario judged the episode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Judgement {
    pub success: bool,
    pub progress: f64,
    pub verified: bool,
    pub success_predicate: String,
    pub partials: Vec<PartialLevel>,
    pub failure: Option<Classification>,
    pub counts: Counts,
    pub wall: WallTimes,
}

impl Judgement {
    /// The judgement of `result` with the scenario's predicates evaluated on `sim` now.
    pub fn of(scenario: &Scenario, sim: &SimRobot, result: &EpisodeResult) -> Judgement {
        Judgement {
            success: result.success,
            progress: result.progress,
            verified: result.verified,
            success_predicate: json(&scenario.spec.success),
            partials: scenario
                .spec
                .partial
                .iter()
                .map(|p| PartialLevel {
                    score: f64::from(p.score),
                    predicate: json(&p.when),
                    holds: sim.holds(&p.when),
                })
                .collect(),
            failure: result.failure.clone(),
            counts: result.counts.clone(),
            wall: result.wall,
        }
    }
}

fn json<T: Serialize>(v: &T) -> String {
    serde_json::to_string(v).unwrap_or_else(|e| format!("({e})"))
}

/// A segmented object of the map, as the report shows it.
#[derive(Debug, Clone)]
pub struct ObjectView {
    pub id: ObjectId,
    pub key: Option<ObjectKey>,
    pub points: usize,
    pub observations: u32,
    pub crops: usize,
    /// The best crop with its mask outlined.
    pub image: Option<RgbImage>,
}

/// A detected affordance drawn where it was found.
#[derive(Debug, Clone)]
pub struct AffordanceView {
    pub call: u32,
    pub object: ObjectKey,
    pub action: String,
    pub part: String,
    pub skill: String,
    pub committed: bool,
    pub v: f64,
    pub points: usize,
    /// The object's crop of a keyframe the affordance was seen in, with the affordance's
    /// points projected into it.
    pub image: Option<RgbImage>,
}

/// The world at the start and the end of the episode.
#[derive(Debug, Clone, Default)]
pub struct WorldSummary {
    pub base_start: Option<Pose2D>,
    pub base_end: Option<Pose2D>,
    pub held: Option<String>,
    pub sim_time_s: f64,
    /// Objects whose centre moved more than 1 cm: name, metres.
    pub moved: Vec<(String, f32)>,
    /// Articulated links that moved: object, link, start, end (joint units).
    pub links: Vec<(String, String, f32, f32)>,
    /// Parts pressed at least once: object, part, presses.
    pub pressed: Vec<(String, String, u32)>,
    /// Text typed on objects.
    pub typed: Vec<(String, String)>,
}

impl WorldSummary {
    /// Compares `start` (the episode's initial state) with `end`.
    pub fn compare(start: Option<&SimRobot>, end: &SimRobot) -> WorldSummary {
        let start_state = start.map(|s| {
            s.with_state(|st| {
                let links: BTreeMap<(String, String), f32> = st
                    .world
                    .objects
                    .iter()
                    .flat_map(|o| {
                        o.links
                            .iter()
                            .map(|l| ((o.name.clone(), l.name.clone()), l.position))
                    })
                    .collect();
                (st.robot.base, links)
            })
        });
        end.with_state(|st| {
            let mut w = WorldSummary {
                base_start: start_state.as_ref().map(|s| s.0),
                base_end: Some(st.robot.base),
                held: st
                    .held()
                    .and_then(|i| st.world.objects.get(i))
                    .map(|o| o.name.clone()),
                sim_time_s: st.time,
                ..WorldSummary::default()
            };
            for (i, o) in st.world.objects.iter().enumerate() {
                if let Some(c0) = st.start_centres.get(i) {
                    let d = (o.centroid() - c0).norm();
                    if d > 0.01 {
                        w.moved.push((o.name.clone(), d));
                    }
                }
                for l in &o.links {
                    let before = start_state
                        .as_ref()
                        .and_then(|s| s.1.get(&(o.name.clone(), l.name.clone())).copied());
                    if before.is_some_and(|b| (b - l.position).abs() > 1e-4) {
                        w.links.push((
                            o.name.clone(),
                            l.name.clone(),
                            before.unwrap_or(l.position),
                            l.position,
                        ));
                    }
                }
                for p in &o.parts {
                    if p.presses > 0 {
                        w.pressed.push((o.name.clone(), p.name.clone(), p.presses));
                    }
                }
                if !o.typed.is_empty() {
                    w.typed.push((o.name.clone(), o.typed.clone()));
                }
            }
            w
        })
    }
}

/// Everything a report shows, images already drawn.
#[derive(Debug, Clone)]
pub struct EpisodeView {
    pub title: String,
    pub start_frames: Vec<(String, RgbImage)>,
    pub end_frames: Vec<(String, RgbImage)>,
    /// The first start frame with every affordance projected into it.
    pub affordances_in_start: Option<(String, RgbImage)>,
    pub objects: Vec<ObjectView>,
    pub affordances: Vec<AffordanceView>,
    pub trace: Trace,
    pub judgement: Option<Judgement>,
    pub world: WorldSummary,
}

const COMMITTED: [u8; 3] = [40, 220, 90];
const UNCOMMITTED: [u8; 3] = [255, 150, 0];

impl EpisodeView {
    /// Captures a report's material: frames of every camera of `start` (a twin of the
    /// episode's simulation in its initial state; `None`: no start frames) and of `end`
    /// now, the map's objects and the trace's affordances.
    pub async fn capture(
        title: String,
        start: Option<&SimRobot>,
        end: &SimRobot,
        map: MapSnapshot,
        trace: &Trace,
        judgement: Option<Judgement>,
    ) -> EpisodeView {
        let start_frames_full = start.map(render_cameras).unwrap_or_default();
        let end_frames_full = render_cameras(end);
        let key_of: BTreeMap<ObjectId, ObjectKey> =
            map.keys.iter().map(|(k, id)| (*id, k.clone())).collect();
        let mut objects: Vec<ObjectView> = map
            .map
            .objects
            .iter()
            .map(|o| ObjectView {
                id: o.id,
                key: key_of.get(&o.id).cloned(),
                points: o.point_cloud.len(),
                observations: o.observations,
                crops: o.crops.len(),
                image: o
                    .crops
                    .first()
                    .map(|c| upscale(&mask_overlay(c, [255, 230, 0]), 96, 4)),
            })
            .collect();
        // keyed objects (the ones the agent used) first
        objects.sort_by_key(|o| (o.key.is_none(), o.id.0));

        let mut affordances = Vec::new();
        let mut start_overlay = start_frames_full.first().map(|(name, f)| {
            (
                name.clone(),
                f.rgb.clone(),
                f.camera_pose.clone(),
                f.intrinsics,
            )
        });
        for e in &trace.journal {
            let JournalEntry::Affordances {
                call_index,
                object,
                action,
                report,
            } = e
            else {
                continue;
            };
            let map_object = map.keys.get(object).and_then(|id| map.map.get(*id));
            for a in &report.affordances {
                let color = if a.committed { COMMITTED } else { UNCOMMITTED };
                let points = a.affordance.point_cloud.points();
                let image = map_object.and_then(|o| {
                    let crop = o
                        .crops
                        .iter()
                        .find(|c| a.affordance.provenance.keyframes.contains(&c.keyframe))
                        .or_else(|| o.crops.first())?;
                    let mut img = mask_overlay(crop, [255, 230, 0]);
                    let px = project(points, &crop.camera_pose, &crop.intrinsics);
                    let f = upscale(&img, 128, 4).width() / img.width().max(1);
                    img = upscale(&img, 128, 4);
                    let scaled: Vec<(f32, f32)> = px
                        .iter()
                        .map(|(u, v)| (u * f as f32, v * f as f32))
                        .collect();
                    draw_points(&mut img, &scaled, color, i64::from(f.max(1)));
                    Some(img)
                });
                if let Some((_, img, pose, k)) = start_overlay.as_mut() {
                    let px = project(points, pose, k);
                    draw_points(img, &px, palette(affordances.len()), 2);
                    draw_bounds(img, &px, palette(affordances.len()));
                }
                affordances.push(AffordanceView {
                    call: *call_index,
                    object: object.clone(),
                    action: action.clone(),
                    part: a.affordance.part.clone(),
                    skill: a.affordance.skill.to_string(),
                    committed: a.committed,
                    v: a.summary.v,
                    points: points.len(),
                    image,
                });
            }
        }
        EpisodeView {
            title,
            start_frames: start_frames_full
                .into_iter()
                .map(|(n, f)| (n, f.rgb))
                .collect(),
            end_frames: end_frames_full
                .into_iter()
                .map(|(n, f)| (n, f.rgb))
                .collect(),
            affordances_in_start: start_overlay
                .filter(|_| !affordances.is_empty())
                .map(|(n, img, _, _)| (n, img)),
            objects,
            affordances,
            trace: trace.clone(),
            judgement,
            world: WorldSummary::compare(start, end),
        }
    }
}

/// Writes `view` as one HTML file.
pub fn write_report(path: &Path, view: &EpisodeView) -> Result<(), EvalError> {
    let html = render_html(view)?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| EvalError::Io {
            file: dir.to_path_buf(),
            message: e.to_string(),
        })?;
    }
    std::fs::write(path, html).map_err(|e| EvalError::Io {
        file: path.to_path_buf(),
        message: e.to_string(),
    })
}

/// HTML-escapes text.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = r#"
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;background:#f4f5f7;color:#1d1f23}
header{background:#1d1f23;color:#fff;padding:16px 24px}
header h1{margin:0 0 4px;font-size:20px}
header .goal{font-size:16px;opacity:.9}
main{padding:16px 24px;max-width:1400px}
section.card{background:#fff;border-radius:8px;box-shadow:0 1px 3px rgba(0,0,0,.1);padding:12px 16px;margin:0 0 16px}
h2{font-size:16px;margin:0 0 8px}
.badge{display:inline-block;padding:2px 10px;border-radius:12px;font-weight:600;color:#fff}
.ok{background:#1f9d55}.bad{background:#cc1f1a}.warn{background:#d97706}.muted{color:#6b7280}
.grid{display:flex;flex-wrap:wrap;gap:12px}
figure{margin:0;background:#fafafa;border:1px solid #e5e7eb;border-radius:6px;padding:6px}
figure img{display:block;max-width:100%;image-rendering:pixelated}
figcaption{font-size:12px;color:#374151;margin-top:4px;max-width:320px}
table{border-collapse:collapse}td,th{padding:3px 10px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
section.call{border-left:4px solid #9ca3af;padding:6px 10px;margin:8px 0;background:#fbfbfc}
section.call.failed{border-left-color:#cc1f1a}section.call.succeeded{border-left-color:#1f9d55}
section.call .head{font-family:ui-monospace,monospace}
ul.verdicts{margin:4px 0 0;padding-left:18px}
li.verdict.pass::marker{content:"✔ ";color:#1f9d55}li.verdict.fail::marker{content:"✘ ";color:#cc1f1a}
.detail{font-size:12px;color:#4b5563}
pre{background:#f3f4f6;padding:6px;border-radius:4px;white-space:pre-wrap;margin:4px 0}
"#;

/// `html` without its tags, for alt text.
fn plain(html: &str) -> String {
    let mut out = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => in_tag = false,
            c if !in_tag => out.push(c),
            _ => {}
        }
    }
    out.replace("&lt;", "<")
        .replace("&gt;", ">")
        .replace("&quot;", "\"")
        .replace("&#39;", "'")
        .replace("&amp;", "&")
}

fn img_tag(img: &RgbImage, alt: &str, max_width: u32) -> Result<String, EvalError> {
    let alt = plain(alt);
    Ok(format!(
        r#"<img src="{}" alt="{}" width="{}" height="{}" style="max-width:{}px">"#,
        png_data_url(img)?,
        esc(&alt),
        img.width(),
        img.height(),
        max_width
    ))
}

fn figure(img: &RgbImage, caption: &str, max_width: u32) -> Result<String, EvalError> {
    Ok(format!(
        "<figure>{}<figcaption>{}</figcaption></figure>",
        img_tag(img, caption, max_width)?,
        caption
    ))
}

fn pose_text(p: &Pose2D) -> String {
    format!("({:.2}, {:.2}) m, {:.0}°", p.x, p.y, p.theta.to_degrees())
}

fn verdict_html(v: &Verdict) -> String {
    format!(
        r#"<li class="verdict {}" data-stage="{}"><b>{} {}</b>: {}{}{}</li>"#,
        if v.passed { "pass" } else { "fail" },
        esc(&v.stage),
        esc(&v.stage),
        if v.passed { "PASS" } else { "FAIL" },
        esc(&v.check),
        v.score
            .map(|s| format!(" <span class=\"muted\">(score {s:.2})</span>"))
            .unwrap_or_default(),
        if v.detail.is_empty() {
            String::new()
        } else {
            format!(" <span class=\"detail\">— {}</span>", esc(&v.detail))
        }
    )
}

/// What the journal found for call `index`, as HTML lines.
fn journal_html(journal: &[JournalEntry], index: u32) -> String {
    let mut out = String::new();
    for e in journal {
        let line = match e {
            JournalEntry::Retrieval {
                call_index,
                retrieval,
            } if *call_index == index => format!(
                "retrieval of {:?}: {} candidate(s), confirmed [{}]",
                retrieval.query,
                retrieval.candidates.len(),
                retrieval
                    .candidates
                    .iter()
                    .map(|c| format!(
                        "object {} sim {:.2}{}",
                        c.id,
                        c.similarity,
                        match (&c.key, c.confirmed) {
                            (Some(k), true) => format!(" → {k}"),
                            (_, true) => " confirmed".to_owned(),
                            (_, false) => " rejected".to_owned(),
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
            JournalEntry::Affordances {
                call_index,
                object,
                action,
                report,
            } if *call_index == index => format!(
                "affordance detection on {object} for {action:?}: proposals [{}]; grounded [{}]",
                report
                    .proposals
                    .iter()
                    .map(|p| format!("{} {}", p.skill, p.part))
                    .collect::<Vec<_>>()
                    .join(", "),
                report
                    .affordances
                    .iter()
                    .map(|a| format!(
                        "{} ({}) v {:.2}{}",
                        a.affordance.part,
                        a.affordance.skill,
                        a.summary.v,
                        if a.committed {
                            " committed"
                        } else {
                            " not committed"
                        }
                    ))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            JournalEntry::Skill {
                call_index,
                request,
                reply,
            } if *call_index == index => format!(
                "skill executor: {} on {} ({} object points{}) → {}; commit {}; outcome {}; {} planner call(s), {} attempt(s){}",
                request.skill,
                request.object,
                request.object_cloud.len(),
                request
                    .affordance
                    .as_ref()
                    .map(|a| format!(", part {:?}", a.part))
                    .unwrap_or_default(),
                if reply.succeeded {
                    "succeeded"
                } else {
                    "failed"
                },
                reply
                    .report
                    .commit
                    .as_ref()
                    .map_or("not asked".to_owned(), |c| if c.accepted {
                        "accepted".to_owned()
                    } else {
                        format!("REJECTED ({})", c.message)
                    }),
                reply
                    .report
                    .outcome
                    .as_ref()
                    .map_or("not checked".to_owned(), |o| format!(
                        "{:?} to {:?}",
                        o.answer, o.question
                    )),
                reply.report.stats.planner_calls,
                reply.report.attempts.len(),
                reply
                    .report
                    .attempts
                    .iter()
                    .filter_map(|a| a.failed.as_ref().map(|f| format!("{}: {f}", a.label)))
                    .map(|s| format!("<br>attempt {s}"))
                    .collect::<String>()
            ),
            JournalEntry::GoTo {
                call_index,
                goal,
                reply,
            } if *call_index == index => format!(
                "go_to {} for {:?}: {}{}{}",
                goal.key,
                goal.action,
                if reply.arrived {
                    "arrived"
                } else {
                    "did not arrive"
                },
                reply
                    .final_pose
                    .as_ref()
                    .map(|p| format!(", base at {}", pose_text(p)))
                    .unwrap_or_default(),
                reply
                    .affordance_part
                    .as_ref()
                    .map(|p| format!(", facing the {p}"))
                    .unwrap_or_default()
            ),
            JournalEntry::Remap {
                call_index,
                summary,
            } if *call_index == index => format!(
                "map rebuilt: {} objects from {} keyframes, kept [{}]",
                summary.objects,
                summary.keyframes,
                summary
                    .kept_keys
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            _ => continue,
        };
        // the lines are built from our own values; escape all but the <br> separators
        let safe = esc(&line).replace("&lt;br&gt;", "<br>");
        let _ = write!(out, r#"<div class="detail">{safe}</div>"#);
    }
    out
}

/// The report as one HTML document.
pub fn render_html(view: &EpisodeView) -> Result<String, EvalError> {
    let report = &view.trace.report;
    let mut h = String::with_capacity(1 << 20);
    let _ = write!(
        h,
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ASP episode: {}</title><style>{STYLE}</style></head><body>",
        esc(&view.title)
    );
    let _ = write!(
        h,
        "<header><h1>ASP episode — {}</h1><div class=\"goal\">goal: “{}” · agent: {:?}</div></header><main>",
        esc(&view.title),
        esc(&report.goal),
        report.agent
    );

    // outcome at a glance
    let status_text = match &report.status {
        GoalStatus::Completed => "completed".to_owned(),
        GoalStatus::Failed { error } => format!("failed ({:?}): {}", error.code, error.message),
        GoalStatus::Cancelled => "cancelled".to_owned(),
    };
    h.push_str(r#"<section class="card" id="outcome"><h2>Outcome</h2><table>"#);
    if let Some(j) = &view.judgement {
        let _ = write!(
            h,
            "<tr><th>success (scenario predicate)</th><td><span class=\"badge {}\">{}</span> <span class=\"muted\">{}</span></td></tr>\
             <tr><th>progress (partial credit)</th><td>{:.2}</td></tr>",
            if j.success { "ok" } else { "bad" },
            if j.success { "SUCCESS" } else { "FAILURE" },
            esc(&j.success_predicate),
            j.progress
        );
        if let Some(f) = &j.failure {
            let _ = write!(
                h,
                "<tr><th>failure class</th><td><span class=\"badge warn\">{}</span> {}</td></tr>",
                f.class,
                esc(&f.reason)
            );
        }
    }
    let _ = write!(
        h,
        "<tr><th>agent's end</th><td>{}</td></tr><tr><th>verified by the verifier</th><td>{}</td></tr><tr><th>summary</th><td>{}</td></tr>",
        esc(&status_text),
        if asp_system::verified_success(report) {
            "yes"
        } else {
            "no"
        },
        esc(&report.summary)
    );
    let counts = view
        .judgement
        .as_ref()
        .map(|j| j.counts.clone())
        .unwrap_or_else(|| Counts::of(&view.trace));
    let _ = write!(
        h,
        "<tr><th>tool calls</th><td>{} ({} refused by a guard)</td></tr>\
         <tr><th>LLM calls / tokens / cost</th><td>{} / {} + {} / ${:.4}</td></tr>\
         <tr><th>skill calls / affordance detections</th><td>{} / {}</td></tr>\
         <tr><th>verifier rejections</th><td>{}{}</td></tr>\
         <tr><th>wall time</th><td>goal {:.2} s{}</td></tr>",
        counts.tool_calls,
        counts.guard_refusals,
        counts.llm_calls,
        counts.prompt_tokens,
        counts.completion_tokens,
        counts.cost_usd,
        counts.skill_calls,
        counts.affordance_calls,
        counts.verifier_rejections,
        if counts.rejections_by_stage.is_empty() {
            String::new()
        } else {
            format!(
                " ({})",
                counts
                    .rejections_by_stage
                    .iter()
                    .map(|(s, n)| format!("{s}: {n}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        },
        report.duration_ms / 1e3,
        view.judgement
            .as_ref()
            .map(|j| format!(
                ", episode {:.2} s (system start and map {:.2} s)",
                j.wall.total_ms / 1e3,
                j.wall.setup_ms / 1e3
            ))
            .unwrap_or_default()
    );
    h.push_str("</table></section>");

    // frames
    h.push_str(r#"<section class="card" id="frames"><h2>Camera frames</h2><div class="grid">"#);
    for (phase, frames) in [("start", &view.start_frames), ("end", &view.end_frames)] {
        for (camera, img) in frames.iter() {
            h.push_str(&figure(
                img,
                &format!("{camera} camera at the {phase}"),
                480,
            )?);
        }
    }
    h.push_str("</div></section>");

    // affordances
    h.push_str(r#"<section class="card" id="affordances"><h2>Detected affordances</h2>"#);
    if view.affordances.is_empty() {
        h.push_str("<p class=\"muted\">No affordance was detected in this episode.</p>");
    } else {
        h.push_str("<p class=\"muted\">Affordance points projected into the object's view they were found in (green: committed by the verifier, orange: not committed), and all of them into the start frame (a box marks each, also where the arm hides it).</p><div class=\"grid\">");
        if let Some((camera, img)) = &view.affordances_in_start {
            h.push_str(&figure(
                img,
                &format!("all affordances in the {camera} camera at the start"),
                480,
            )?);
        }
        for a in &view.affordances {
            let caption = format!(
                "[{}] {} of {} for {} — {} points, v {:.2}, {}<br><span class=\"muted\">{}</span>",
                a.call,
                esc(&a.part),
                esc(a.object.as_str()),
                esc(&a.skill),
                a.points,
                a.v,
                if a.committed {
                    "committed"
                } else {
                    "not committed"
                },
                esc(&a.action)
            );
            match &a.image {
                Some(img) => h.push_str(&figure(img, &caption, 320)?),
                None => {
                    let _ = write!(
                        h,
                        "<figure><figcaption>{caption} (the object is no longer in the map)</figcaption></figure>"
                    );
                }
            }
        }
        h.push_str("</div>");
    }
    h.push_str("</section>");

    // map objects
    let _ = write!(
        h,
        r#"<section class="card" id="objects"><h2>Object map: {} segmented objects</h2><p class="muted">Best crop of each object with its mask outlined (dimmed: outside the mask). Objects the agent retrieved carry their key.</p><div class="grid">"#,
        view.objects.len()
    );
    for o in &view.objects {
        let caption = format!(
            "{} — object {}, {} points, {} observations, {} crops",
            o.key
                .as_ref()
                .map_or("(not retrieved)".to_owned(), |k| format!(
                    "<b>{}</b>",
                    esc(k.as_str())
                )),
            o.id,
            o.points,
            o.observations,
            o.crops
        );
        match &o.image {
            Some(img) => h.push_str(&figure(img, &caption, 240)?),
            None => {
                let _ = write!(
                    h,
                    "<figure><figcaption>{caption} (no crop)</figcaption></figure>"
                );
            }
        }
    }
    h.push_str("</div></section>");

    // timeline
    h.push_str(r#"<section class="card" id="timeline"><h2>Timeline</h2>"#);
    let mut called: BTreeMap<u32, &serde_json::Value> = BTreeMap::new();
    for e in &report.events {
        match e {
            AgentEvent::Planned { plan, .. } => {
                let _ = write!(
                    h,
                    "<div><b>plan</b><pre>{}</pre></div>",
                    esc(&plan.numbered())
                );
            }
            AgentEvent::ModelReply {
                turn,
                usage,
                text,
                tool_calls,
                finish_reason,
                ..
            } => {
                let _ = write!(
                    h,
                    "<div class=\"detail\">model reply {turn}: {} {}{}{}</div>",
                    esc(finish_reason),
                    if tool_calls.is_empty() {
                        String::new()
                    } else {
                        format!("calls [{}]", esc(&tool_calls.join(", ")))
                    },
                    usage
                        .map(|u| format!(" ({} + {} tokens)", u.prompt_tokens, u.completion_tokens))
                        .unwrap_or_default(),
                    text.as_deref()
                        .map(|t| format!("<pre>{}</pre>", esc(t)))
                        .unwrap_or_default()
                );
            }
            AgentEvent::ModelOutputProblem {
                problem, remedy, ..
            } => {
                let _ = write!(
                    h,
                    "<div class=\"detail\">model output problem: {} ({remedy:?})</div>",
                    esc(problem)
                );
            }
            AgentEvent::ToolCalled { index, args, .. } => {
                called.insert(*index, args);
            }
            AgentEvent::ToolFinished {
                index,
                tool,
                output,
                guard,
                verdicts,
                duration_ms,
                state,
                ..
            } => {
                let args = called.get(index).map(|a| args_text(a)).unwrap_or_default();
                let _ = write!(
                    h,
                    r#"<section class="call {}" id="call-{index}" data-index="{index}" data-tool="{}"><div class="head">[{index}] <b>{}</b>({}) — {} <span class="muted">({duration_ms:.0} ms)</span></div><div>{}</div>"#,
                    if output.success {
                        "succeeded"
                    } else {
                        "failed"
                    },
                    esc(tool),
                    esc(tool),
                    esc(&args),
                    if output.success {
                        "<span class=\"badge ok\">ok</span>"
                    } else {
                        "<span class=\"badge bad\">failed</span>"
                    },
                    esc(&output.feedback_msg)
                );
                if let Some(g) = guard {
                    let _ = write!(
                        h,
                        "<div class=\"detail\">refused by the guard: {g:?} (the robot never saw this call)</div>"
                    );
                }
                h.push_str(&journal_html(&view.trace.journal, *index));
                if !verdicts.is_empty() {
                    h.push_str("<ul class=\"verdicts\">");
                    for v in verdicts {
                        h.push_str(&verdict_html(v));
                    }
                    h.push_str("</ul>");
                }
                let _ = write!(
                    h,
                    "<div class=\"detail\">state: held {}, inventory [{}]</div></section>",
                    state
                        .held_object
                        .as_ref()
                        .map_or("nothing".to_owned(), |k| esc(k.as_str())),
                    esc(&state
                        .inventory
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", "))
                );
            }
            AgentEvent::Remap { phase, reason, .. } => {
                let _ = write!(
                    h,
                    "<div class=\"detail\">remap ({phase:?}): {}</div>",
                    esc(reason)
                );
            }
            AgentEvent::Unconfirmed { reason, .. } => {
                let _ = write!(
                    h,
                    "<div class=\"detail\"><span class=\"badge bad\">unconfirmed</span> {}</div>",
                    esc(reason)
                );
            }
            AgentEvent::GoalStarted { .. } | AgentEvent::GoalFinished { .. } => {}
        }
    }
    h.push_str("</section>");

    // final state
    h.push_str(r#"<section class="card" id="final"><h2>Final state</h2><table>"#);
    let s = &report.final_state;
    let _ = write!(
        h,
        "<tr><th>agent: held</th><td>{}</td></tr><tr><th>agent: inventory</th><td>{}</td></tr>",
        s.held_object
            .as_ref()
            .map_or("nothing".to_owned(), |k| esc(k.as_str())),
        esc(&s
            .inventory
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(", "))
    );
    let w = &view.world;
    let _ = write!(
        h,
        "<tr><th>world: in the gripper</th><td>{}</td></tr><tr><th>world: base</th><td>{}{}</td></tr><tr><th>simulated time</th><td>{:.1} s</td></tr>",
        w.held.as_deref().map_or("nothing".to_owned(), esc),
        w.base_start
            .as_ref()
            .map(|p| format!("{} → ", pose_text(p)))
            .unwrap_or_default(),
        w.base_end.as_ref().map(pose_text).unwrap_or_default(),
        w.sim_time_s
    );
    let list = |items: Vec<String>| {
        if items.is_empty() {
            "none".to_owned()
        } else {
            esc(&items.join(", "))
        }
    };
    let _ = write!(
        h,
        "<tr><th>objects moved</th><td>{}</td></tr><tr><th>joints moved</th><td>{}</td></tr><tr><th>parts pressed</th><td>{}</td></tr><tr><th>typed</th><td>{}</td></tr>",
        list(
            w.moved
                .iter()
                .map(|(n, d)| format!("{n} by {:.2} m", d))
                .collect()
        ),
        list(
            w.links
                .iter()
                .map(|(o, l, a, b)| format!("{o}.{l} {a:.2} → {b:.2}"))
                .collect()
        ),
        list(
            w.pressed
                .iter()
                .map(|(o, p, n)| format!("{o}.{p} ×{n}"))
                .collect()
        ),
        list(w.typed.iter().map(|(o, t)| format!("{o}: {t:?}")).collect())
    );
    h.push_str("</table>");
    if let Some(j) = &view.judgement
        && !j.partials.is_empty()
    {
        h.push_str("<h2>Partial credit levels</h2><table><tr><th>score</th><th>predicate</th><th>holds at the end</th></tr>");
        for p in &j.partials {
            let _ = write!(
                h,
                "<tr><td>{:.2}</td><td><code>{}</code></td><td>{}</td></tr>",
                p.score,
                esc(&p.predicate),
                if p.holds { "yes" } else { "no" }
            );
        }
        h.push_str("</table>");
    }
    h.push_str("</section></main></body></html>\n");
    Ok(h)
}
