//! Transport figures: topic round trip, service and action round trips, and image
//! throughput, over the in-process backend and over DDS between two participants of
//! one process (loopback). Prints a table; `ASP_BENCH_QUICK=1` runs fewer rounds.
#![allow(clippy::unwrap_used, clippy::print_stdout)]

use std::time::{Duration, Instant};

use asp_ros::action::{ActionServerOptions, GoalOutcome, goal_fn};
use asp_ros::msg::asp_interfaces::{
    ExecuteGoal, ExecuteGoalAction, ExecuteGoalActionGoal, ExecuteGoalActionResult,
    ExecuteGoalRequest, ExecuteGoalResponse,
};
use asp_ros::msg::sensor_msgs::Image;
use asp_ros::msg::std_msgs;
use asp_ros::transport::ServiceMapping;
use asp_ros::{Node, Qos, Transport, TransportSettings};

struct Stats {
    samples: Vec<Duration>,
}

impl Stats {
    fn ms(&self, q: f64) -> f64 {
        let mut s = self.samples.clone();
        s.sort();
        let i = ((s.len() as f64 - 1.0) * q).round() as usize;
        s[i].as_secs_f64() * 1e3
    }
}

fn settings(domain: u16) -> TransportSettings {
    TransportSettings {
        domain_id: domain,
        service_mapping: ServiceMapping::FastDds,
        discovery_timeout: Duration::from_secs(20),
        call_timeout: Duration::from_secs(30),
    }
}

fn pair(backend: &str, domain: u16) -> (Node, Node) {
    if backend == "dds" {
        let t = Transport::dds(settings(domain)).unwrap();
        (t.node("bench_a").unwrap(), t.node("bench_b").unwrap())
    } else {
        let t = Transport::in_process_with(settings(0));
        (t.node("bench_a").unwrap(), t.node("bench_b").unwrap())
    }
}

async fn topic_round_trip(a: &Node, b: &Node, rounds: usize) -> Stats {
    let ping = a
        .publisher::<std_msgs::String>("/bench/ping", Qos::default_reliable())
        .unwrap();
    let mut pong_in = a
        .subscribe::<std_msgs::String>("/bench/pong", Qos::default_reliable())
        .unwrap();
    let mut ping_in = b
        .subscribe::<std_msgs::String>("/bench/ping", Qos::default_reliable())
        .unwrap();
    let pong = b
        .publisher::<std_msgs::String>("/bench/pong", Qos::default_reliable())
        .unwrap();
    ping.wait_for_subscribers().await.unwrap();
    pong.wait_for_subscribers().await.unwrap();
    let echo = tokio::spawn(async move {
        while let Some(m) = ping_in.recv().await {
            pong.publish(m).unwrap();
        }
    });
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        ping.publish(std_msgs::String {
            data: i.to_string(),
        })
        .unwrap();
        let back = pong_in.recv_timeout(Duration::from_secs(5)).await.unwrap();
        samples.push(t.elapsed());
        assert_eq!(back.data, i.to_string());
    }
    echo.abort();
    Stats { samples }
}

async fn service_round_trip(a: &Node, b: &Node, rounds: usize) -> Stats {
    let _server = a
        .serve::<ExecuteGoal, _, _>("/bench/svc", |r: ExecuteGoalRequest| async move {
            ExecuteGoalResponse {
                success: true,
                summary: r.goal,
                ..Default::default()
            }
        })
        .unwrap();
    let client = b.client::<ExecuteGoal>("/bench/svc").unwrap();
    client.wait_for_service().await.unwrap();
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        let r = client
            .call(ExecuteGoalRequest {
                goal: i.to_string(),
            })
            .await
            .unwrap();
        samples.push(t.elapsed());
        assert_eq!(r.summary, i.to_string());
    }
    Stats { samples }
}

async fn action_round_trip(a: &Node, b: &Node, rounds: usize) -> Stats {
    let handler = goal_fn::<ExecuteGoalAction, _, _>(|g: ExecuteGoalActionGoal, _ctx| async move {
        GoalOutcome::Succeeded(ExecuteGoalActionResult {
            success: true,
            summary: g.goal,
            ..Default::default()
        })
    });
    let _server = a
        .action_server::<ExecuteGoalAction, _>(
            "/bench/action",
            ActionServerOptions::default(),
            handler,
        )
        .unwrap();
    let client = b
        .action_client::<ExecuteGoalAction>("/bench/action")
        .unwrap();
    client.wait_for_server().await.unwrap();
    let mut samples = Vec::with_capacity(rounds);
    for i in 0..rounds {
        let t = Instant::now();
        let r = client
            .send_goal(ExecuteGoalActionGoal {
                goal: i.to_string(),
            })
            .await
            .unwrap()
            .result()
            .await
            .unwrap();
        samples.push(t.elapsed());
        assert_eq!(r.result.summary, i.to_string());
    }
    Stats { samples }
}

/// 640×480 rgb8 images, reliable, as fast as the reader keeps up (one in flight at a
/// time per `window`): messages and megabytes per second received.
async fn image_throughput(a: &Node, b: &Node, count: usize) -> (f64, f64) {
    let qos = Qos::default_reliable().with_depth(count);
    let p = a.publisher::<Image>("/bench/image", qos).unwrap();
    let mut s = b.subscribe::<Image>("/bench/image", qos).unwrap();
    p.wait_for_subscribers().await.unwrap();
    let img = Image {
        height: 480,
        width: 640,
        encoding: "rgb8".into(),
        step: 640 * 3,
        data: (0..640 * 480 * 3).map(|i| (i % 251) as u8).collect(),
        ..Image::default()
    };
    let bytes = img.data.len();
    let t = Instant::now();
    let mut received = 0;
    for _ in 0..count {
        p.publish(img.clone()).unwrap();
        // keep the pipe full but bounded: wait for each message before the next
        if s.recv_timeout(Duration::from_secs(10)).await.is_ok() {
            received += 1;
        }
    }
    let secs = t.elapsed().as_secs_f64();
    let rate = received as f64 / secs;
    (rate, rate * bytes as f64 / 1e6)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let quick = std::env::var("ASP_BENCH_QUICK").is_ok();
    let rounds = if quick { 50 } else { 500 };
    let images = if quick { 10 } else { 60 };
    let domain = 200 + (std::process::id() % 30) as u16;
    println!("asp_ros transport ({rounds} round trips, {images} images of 640×480 rgb8)");
    println!(
        "{:<11} {:<28} {:>9} {:>9} {:>9}",
        "backend", "measure", "p50 ms", "p95 ms", "max ms"
    );
    for backend in ["in_process", "dds"] {
        let (a, b) = pair(backend, domain);
        let rows = [
            (
                "topic round trip (String)",
                topic_round_trip(&a, &b, rounds).await,
            ),
            (
                "service call (ExecuteGoal)",
                service_round_trip(&a, &b, rounds).await,
            ),
            (
                "action goal → result",
                action_round_trip(&a, &b, rounds / 5).await,
            ),
        ];
        for (what, st) in rows {
            println!(
                "{:<11} {:<28} {:>9.3} {:>9.3} {:>9.3}",
                backend,
                what,
                st.ms(0.5),
                st.ms(0.95),
                st.ms(1.0)
            );
        }
        let (rate, mbps) = image_throughput(&a, &b, images).await;
        println!(
            "{:<11} {:<28} {:>9.1} msg/s {:>7.1} MB/s",
            backend, "image stream (900 KB each)", rate, mbps
        );
    }
}
