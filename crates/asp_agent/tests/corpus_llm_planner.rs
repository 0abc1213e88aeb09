//! The goal corpus drives the LLM planner too (issue 15): for every goal with a plan,
//! a scripted OpenAI-compatible server answers the planner request with the corpus's
//! plan as the model would write it (explicit steps only); the LLM path must accept it
//! at once and, after adding its implied steps, arrive at the steps the offline grammar
//! derives from the same plan. One notion of a valid plan for both backends.
#![allow(clippy::unwrap_used)]

mod common;

use std::path::Path;

use asp_agent::planner::corpus::load_corpus;
use asp_agent::planner::llm::plan_with_llm;
use asp_agent::planner::understand::GoalGrammar;
use asp_agent::planner::understand::subtasks::subtasks;
use asp_agent::{PlanSource, Subtask};
use asp_llm::LlmClient;
use asp_llm_testkit::{Reply, ScriptedServer, Step};
use serde_json::json;

fn as_model_writes_it(steps: &[Subtask]) -> String {
    let explicit: Vec<_> = steps
        .iter()
        .filter(|s| !s.implied)
        .map(|s| {
            json!({
                "verb": s.verb.as_str(),
                "object": s.object,
                "part": s.part,
                "location": s.location,
                "location_part": s.location_part,
                "room": s.room,
                "location_room": s.location_room,
                "preposition": s.preposition.map(|p| match p {
                    asp_agent::Preposition::In => "in",
                    asp_agent::Preposition::On => "on",
                }),
                "action": s.action,
                "not": s.excluded,
            })
        })
        .collect();
    json!({ "subtasks": explicit }).to_string()
}

#[tokio::test]
async fn every_corpus_plan_is_a_valid_llm_plan_with_the_same_steps() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/goals");
    let splits = load_corpus(&dir).unwrap();
    let mut cases = Vec::new();
    for split in &splits {
        for g in &split.goals {
            if let Some(plan) = &g.plan {
                let (steps, _) = subtasks(plan).unwrap();
                cases.push((g.id.clone(), g.goal.clone(), steps));
            }
        }
    }
    assert!(cases.len() >= 350, "{} planned goals", cases.len());
    let server = ScriptedServer::start(
        cases
            .iter()
            .map(|(_, goal, steps)| {
                Step::reply(Reply::text(&as_model_writes_it(steps)))
                    .expect_message_contains(&format!("Instruction: {goal}"))
            })
            .collect::<Vec<_>>(),
    )
    .await
    .unwrap();
    let client = LlmClient::new(common::client_settings(&server), None).unwrap();
    let grammar = GoalGrammar::lexical();
    let mut differ = Vec::new();
    for (id, goal, steps) in &cases {
        let out = plan_with_llm(&client, goal, 0, &grammar).await;
        let plan = out.plan.unwrap_or_else(|e| panic!("{id}: {e}"));
        assert_eq!(
            plan.source,
            PlanSource::Llm { regenerations: 0 },
            "{id}: {:?}",
            out.attempts.last().and_then(|a| a.problem.clone())
        );
        if &plan.subtasks != steps {
            differ.push(format!(
                "{id}: llm {:?}\n   grammar {:?}",
                plan.subtasks
                    .iter()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>(),
                steps.iter().map(ToString::to_string).collect::<Vec<_>>()
            ));
        }
    }
    server.verify().unwrap();
    assert!(
        differ.is_empty(),
        "{} differ:\n{}",
        differ.len(),
        differ.join("\n")
    );
}
