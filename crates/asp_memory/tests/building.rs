//! The building memory over a small two-floor house: rooms and floors come out of the
//! clustering, retrieval finds objects by the instruction, affordance reranking prefers
//! what can be picked, and the database keeps it (or refuses it) as a user expects.
#![allow(clippy::unwrap_used)]

use asp_config::sections::agent::BuildingMemoryConfig;
use asp_core::models::TextEmbedder;
use asp_memory::MemoryError;
use asp_memory::building::{
    Affordance, AffordanceScore, BuildingMemory, ClusterParams, EmbeddingJudge, Hierarchy,
    Instance, KeywordSummariser, MAX_VACATED, PassOver, Query, RecallScope, RetrievalParams,
    RoomNames, RoomParams, RoomScope, Vacated, View, flat_retrieve, recall_in_room, recall_places,
    recall_request, retrieve, room_scope, zone_of,
};
use asp_perception::HashingTextEmbedder;

const DIM: usize = 256;
const FLOOR_HEIGHT: f64 = 3.5;

struct Room {
    floor: usize,
    centre: [f64; 2],
    /// (object description, affordances)
    objects: &'static [(&'static str, &'static [(Affordance, f32)])],
    scenery: &'static str,
}

const PICK: &[(Affordance, f32)] = &[(Affordance::Pick, 0.9)];
const PLACE: &[(Affordance, f32)] = &[(Affordance::Place, 0.9)];
const NOTHING: &[(Affordance, f32)] = &[(Affordance::Pick, 0.05)];

const HOUSE: &[Room] = &[
    Room {
        floor: 0,
        centre: [0.0, 0.0],
        objects: &[
            ("steel kettle", PICK),
            ("white kitchen counter", PLACE),
            ("green apple", PICK),
            ("sink", NOTHING),
        ],
        scenery: "kitchen with tiled floor and cupboards",
    },
    Room {
        floor: 0,
        centre: [12.0, 0.0],
        objects: &[
            ("grey sofa", PLACE),
            ("tv remote", PICK),
            ("wooden coffee table", PLACE),
            ("thermos poster", NOTHING),
        ],
        scenery: "living room with carpet and a large window",
    },
    Room {
        floor: 1,
        centre: [0.0, 0.0],
        objects: &[
            ("double bed", PLACE),
            ("reading lamp", PICK),
            ("nightstand", PLACE),
            ("alarm clock", PICK),
        ],
        scenery: "bedroom with curtains and a wardrobe",
    },
    Room {
        floor: 1,
        centre: [12.0, 0.0],
        objects: &[
            ("blue thermos", PICK),
            ("office desk", PLACE),
            ("desk chair", NOTHING),
            ("laptop", PICK),
        ],
        scenery: "office with bookshelves and a monitor",
    },
];

/// A small deterministic generator (the test needs varied, repeatable poses).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> f64 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Six views per room, each showing two of its objects; the room index of each view.
fn tour(e: &HashingTextEmbedder) -> (Vec<View>, Vec<usize>) {
    let mut rng = Lcg(7);
    let mut views = Vec::new();
    let mut rooms = Vec::new();
    for (r, room) in HOUSE.iter().enumerate() {
        for k in 0..6 {
            let shown = [
                room.objects[k % room.objects.len()],
                room.objects[(k + 1) % room.objects.len()],
            ];
            let description = format!(
                "a {} and a {} in a {}",
                shown[0].0, shown[1].0, room.scenery
            );
            let position = [
                room.centre[0] + (rng.next() - 0.5) * 3.0,
                room.centre[1] + (rng.next() - 0.5) * 3.0,
                room.floor as f64 * FLOOR_HEIGHT + 1.2,
            ];
            let instances = shown
                .iter()
                .map(|(d, affs)| Instance {
                    description: (*d).to_owned(),
                    affordances: affs
                        .iter()
                        .map(|&(affordance, score)| AffordanceScore { affordance, score })
                        .collect(),
                    position: Some([position[0] + 1.0, position[1], position[2] - 0.5]),
                    embedding: e.embed_text(d).unwrap(),
                })
                .collect();
            // the image embedding sees the objects, not the VLM's wording
            let visual = e
                .embed_text(&format!("{} {}", shown[0].0, shown[1].0))
                .unwrap();
            views.push(View {
                source: format!("tour.mcap#{}", views.len()),
                position,
                yaw: k as f64,
                regional: e.embed_text(&description).unwrap(),
                description,
                visual,
                instances,
            });
            rooms.push(r);
        }
    }
    (views, rooms)
}

fn build() -> (Hierarchy, Vec<usize>, HashingTextEmbedder) {
    let e = HashingTextEmbedder::new(DIM);
    let (views, rooms) = tour(&e);
    let h = Hierarchy::build(
        views,
        &ClusterParams::default(),
        &KeywordSummariser::default(),
        &e,
    )
    .unwrap();
    (h, rooms, e)
}

#[test]
fn rooms_and_floors_come_out_of_the_clustering() {
    let (h, rooms, _) = build();
    assert!(h.levels.len() >= 2, "{} levels", h.levels.len());
    // level 4 never mixes rooms
    for c in &h.levels[0] {
        let first = rooms[c.children[0] as usize];
        assert!(
            c.children.iter().all(|&v| rooms[v as usize] == first),
            "a level-4 cluster mixes rooms: {:?}",
            c.children
        );
    }
    // some level holds one cluster per room, another one per floor
    let partition = |level: usize, of: &dyn Fn(usize) -> usize| -> Vec<Vec<usize>> {
        (0..h.levels[level].len())
            .map(|i| {
                let mut keys: Vec<usize> = h
                    .views_under(level, i)
                    .iter()
                    .map(|&v| of(rooms[v as usize]))
                    .collect();
                keys.sort_unstable();
                keys.dedup();
                keys
            })
            .collect()
    };
    let room_level = (0..h.levels.len()).find(|&l| {
        h.levels[l].len() == HOUSE.len() && partition(l, &|r| r).iter().all(|k| k.len() == 1)
    });
    assert!(
        room_level.is_some(),
        "no level has one cluster per room: {:?}",
        h.levels.iter().map(Vec::len).collect::<Vec<_>>()
    );
    let floor_level = (0..h.levels.len()).find(|&l| {
        h.levels[l].len() == 2
            && partition(l, &|r| HOUSE[r].floor)
                .iter()
                .all(|k| k.len() == 1)
    });
    assert!(
        floor_level.is_some(),
        "no level has one cluster per floor: {:?}",
        h.levels.iter().map(Vec::len).collect::<Vec<_>>()
    );
    // summaries name what the rooms hold
    let l = room_level.unwrap();
    assert!(
        h.levels[l]
            .iter()
            .any(|c| c.summary.contains("kitchen") && c.summary.contains("kettle")),
        "{:?}",
        h.levels[l].iter().map(|c| &c.summary).collect::<Vec<_>>()
    );
}

fn query<'a>(
    e: &HashingTextEmbedder,
    text: &'a str,
    affordance: Option<Affordance>,
    store: &'a mut Vec<Vec<f32>>,
) -> Query<'a> {
    store.push(e.embed_text(text).unwrap());
    Query {
        instruction: text,
        text: &store[0],
        visual: &store[0],
        affordance,
        heights: None,
    }
}

#[test]
fn the_target_and_the_receptacle_are_found_in_their_rooms() {
    let (h, rooms, e) = build();
    let params = RetrievalParams::default();
    let mut store = Vec::new();
    let q = query(&e, "the blue thermos", Some(Affordance::Pick), &mut store);
    let found = retrieve(&h, &q, &params, &EmbeddingJudge);
    let best = &found[0];
    assert_eq!(rooms[best.view as usize], 3, "the thermos is in the office");
    let inst = &h.views[best.view as usize].instances[best.instances[0] as usize];
    assert_eq!(inst.description, "blue thermos");
    assert!(inst.position.is_some(), "go_to needs a pose");

    let mut store = Vec::new();
    let q = query(
        &e,
        "the kitchen counter",
        Some(Affordance::Place),
        &mut store,
    );
    let found = retrieve(&h, &q, &params, &EmbeddingJudge);
    let best = &found[0];
    assert_eq!(rooms[best.view as usize], 0);
    let inst = &h.views[best.view as usize].instances[best.instances[0] as usize];
    assert_eq!(inst.description, "white kitchen counter");
}

#[test]
fn reranking_prefers_the_object_that_can_be_picked() {
    let (h, rooms, e) = build();
    let params = RetrievalParams::default();
    // "thermos" names both the office's thermos and the living room's poster
    let mut store = Vec::new();
    let q = query(&e, "thermos", Some(Affordance::Pick), &mut store);
    let found = retrieve(&h, &q, &params, &EmbeddingJudge);
    assert_eq!(rooms[found[0].view as usize], 3);
    let poster_rank = found
        .iter()
        .position(|r| rooms[r.view as usize] == 1)
        .unwrap_or(usize::MAX);
    let thermos_views = found
        .iter()
        .take_while(|r| !r.instances.is_empty())
        .filter(|r| rooms[r.view as usize] == 3)
        .count();
    assert!(thermos_views >= 1 && poster_rank >= thermos_views);
    // a poster is never promoted for picking
    assert!(found.iter().all(|r| {
        r.instances.iter().all(|&i| {
            h.views[r.view as usize].instances[i as usize]
                .score_for(Affordance::Pick)
                .unwrap_or(0.0)
                >= params.min_affordance
        })
    }));
}

#[test]
fn flat_retrieval_scores_every_view_and_the_hierarchy_fewer() {
    let (h, _, e) = build();
    let v = e.embed_text("alarm clock").unwrap();
    let flat = flat_retrieve(&h, &v, 1000);
    assert_eq!(flat.len(), h.views.len());
    assert!(flat.windows(2).all(|w| w[0].score >= w[1].score));
    let params = RetrievalParams {
        k_b: 1,
        top: 1000,
        ..RetrievalParams::default()
    };
    let q = Query {
        instruction: "alarm clock",
        text: &v,
        visual: &v,
        affordance: None,
        heights: None,
    };
    let found = retrieve(&h, &q, &params, &EmbeddingJudge);
    assert!(found.len() < h.views.len() && !found.is_empty());
    assert!(
        h.views[found[0].view as usize]
            .description
            .contains("alarm clock")
    );
}

#[test]
fn the_database_keeps_the_memory_and_refuses_what_is_not_its_own() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("building.redb");
    let e = HashingTextEmbedder::new(DIM);
    let (views, _) = tour(&e);
    let params = ClusterParams::default();
    let summariser = KeywordSummariser::default();
    let (first, rest) = views.split_at(12);
    let built = {
        let mut m = BuildingMemory::open(&path, "house").unwrap();
        m.add_views(first.to_vec(), &params, &summariser, &e)
            .unwrap();
        // a second process (here: a second handle) is told who holds it
        match BuildingMemory::open(&path, "house") {
            Err(MemoryError::Held { holder, .. }) => {
                assert!(holder.contains(&std::process::id().to_string()), "{holder}")
            }
            other => panic!("expected Held, got {other:?}"),
        }
        // incremental: the new views join and the levels are rebuilt over all
        m.add_views(rest.to_vec(), &params, &summariser, &e)
            .unwrap();
        assert_eq!(m.hierarchy().views.len(), views.len());
        // a broken view fails the build and changes nothing
        let mut bad = views[0].clone();
        bad.position[0] = f64::NAN;
        let err = m
            .add_views(vec![bad], &params, &summariser, &e)
            .unwrap_err();
        assert!(err.to_string().contains("not finite"), "{err}");
        m.hierarchy().clone()
    };
    let m = BuildingMemory::open(&path, "house").unwrap();
    // (compared without printing: a hierarchy's embeddings are thousands of numbers)
    assert!(m.hierarchy() == &built, "the reopened memory differs");
    drop(m);
    let err = BuildingMemory::open(&path, "warehouse").unwrap_err();
    assert!(
        matches!(&err, MemoryError::OtherSite { found, expected, .. } if found == "house" && expected == "warehouse"),
        "{err}"
    );
}

#[test]
fn upstairs_is_a_height_band() {
    let (h, rooms, e) = build();
    let params = RetrievalParams::default();
    // "a lamp upstairs": the reading lamp is on the first floor; the ground floor has
    // none, but ask for the ground floor and only its views may answer
    let v = e.embed_text("lamp").unwrap();
    let upstairs = Query {
        instruction: "the lamp upstairs",
        text: &v,
        visual: &v,
        affordance: Some(Affordance::Pick),
        heights: Some([FLOOR_HEIGHT, f64::INFINITY]),
    };
    let found = retrieve(&h, &upstairs, &params, &EmbeddingJudge);
    assert!(!found.is_empty());
    assert!(
        found
            .iter()
            .all(|r| HOUSE[rooms[r.view as usize]].floor == 1)
    );
    assert_eq!(
        rooms[found[0].view as usize], 2,
        "the bedroom's reading lamp"
    );
    let downstairs = Query {
        heights: Some([f64::NEG_INFINITY, FLOOR_HEIGHT - 1.0]),
        ..upstairs
    };
    let found = retrieve(&h, &downstairs, &params, &EmbeddingJudge);
    assert!(!found.is_empty());
    assert!(
        found
            .iter()
            .all(|r| HOUSE[rooms[r.view as usize]].floor == 0)
    );
    // recall keeps its places to the band too: where the objects were, not only the
    // views that saw them
    let recall = |heights| {
        let scope = RecallScope {
            room: None,
            heights: Some(heights),
        };
        recall_request(&h, "lamp", &v, scope, 0.3, PassOver::default(), 10)
    };
    let above = recall([FLOOR_HEIGHT - 0.5, f64::INFINITY]);
    assert!(!above.is_empty());
    assert!(
        above.iter().all(
            |p| p.position[2] >= FLOOR_HEIGHT - 0.5 && HOUSE[rooms[p.view as usize]].floor == 1
        ),
        "{above:?}"
    );
    let below = recall([f64::NEG_INFINITY, FLOOR_HEIGHT - 0.5]);
    assert!(
        below.iter().all(|p| p.position[2] < FLOOR_HEIGHT - 0.5),
        "{below:?}"
    );
    let anywhere = recall_request(
        &h,
        "lamp",
        &v,
        RecallScope::default(),
        0.3,
        PassOver::default(),
        10,
    );
    assert!(
        anywhere.len() > below.len(),
        "{anywhere:?} against {below:?}"
    );
}

/// Recall for `object_retrieval`: places where the asked-for object was seen, best
/// first, one per place, places found empty skipped; nothing for what was never seen.
#[test]
fn recall_finds_the_places_an_object_was_seen_and_skips_stale_ones() {
    let (h, rooms, e) = build();
    let params = RetrievalParams::default();
    let mut store = Vec::new();
    let q = query(&e, "blue thermos", None, &mut store);
    let places = recall_places(&h, &q, &params, 0.6, &[], 3);
    assert!(!places.is_empty() && places.len() <= 3, "{places:?}");
    for p in &places {
        assert_eq!(p.description, "blue thermos");
        assert_eq!(rooms[p.view as usize], 3, "{p:?}");
        let v = &h.views[p.view as usize];
        assert!(
            p.viewpoints
                .contains(&([v.position[0], v.position[1]], v.yaw))
        );
        assert_eq!(Some(p.position), v.instances[p.instance as usize].position);
        // the nearest viewpoint first (those too close last)
        let d = |w: &([f64; 2], f64)| (w.0[0] - p.position[0]).hypot(w.0[1] - p.position[1]);
        for w in p.viewpoints.windows(2) {
            assert!(d(&w[0]) <= d(&w[1]) || d(&w[0]) < 0.7, "{p:?}");
        }
    }
    for w in places.windows(2) {
        let d = (0..3)
            .map(|k| (w[0].position[k] - w[1].position[k]).powi(2))
            .sum::<f64>()
            .sqrt();
        assert!(d >= 0.5, "two places for one: {w:?}");
        assert!(w[0].relevance >= w[1].relevance);
        // equally relevant: the place more views agree on first
        if w[0].relevance == w[1].relevance {
            assert!(w[0].viewpoints.len() >= w[1].viewpoints.len(), "{w:?}");
        }
    }
    // the first place was looked at and found empty: it is not offered again
    let again = recall_places(&h, &q, &params, 0.6, &[places[0].position], 3);
    assert!(again.iter().all(|p| p.position != places[0].position));
    // never seen: nothing to drive to
    let mut store = Vec::new();
    let q = query(&e, "a purple unicorn", None, &mut store);
    assert_eq!(recall_places(&h, &q, &params, 0.6, &[], 3), Vec::new());
}

/// A remembered place found without what a request asked for is kept in the memory:
/// a later process's recall for that request passes over it, while other objects
/// remembered there stay; a newer tour that sees the object there again clears it; the
/// marks are bounded.
#[test]
fn a_place_found_empty_is_remembered_until_a_tour_sees_the_object_there_again() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("building.redb");
    let e = HashingTextEmbedder::new(DIM);
    let (views, _) = tour(&e);
    let (params, summariser) = (ClusterParams::default(), KeywordSummariser::default());
    let recall = |m: &BuildingMemory, what: &str| {
        let text = e.embed_text(what).unwrap();
        let pass_over = PassOver {
            vacated: m.vacated(),
            ..PassOver::default()
        };
        recall_request(
            m.hierarchy(),
            what,
            &text,
            RecallScope::default(),
            0.6,
            pass_over,
            10,
        )
    };
    let gone = {
        let mut m = BuildingMemory::open(&path, "house").unwrap();
        m.add_views(views.clone(), &params, &summariser, &e)
            .unwrap();
        let places = recall(&m, "tv remote");
        assert!(places.len() >= 2, "{places:?}");
        m.mark_vacated(Vacated {
            position: places[0].position,
            request: "the tv remote".into(),
            embedding: e.embed_text("tv remote").unwrap(),
            min_relevance: 0.6,
        })
        .unwrap();
        places[0].clone()
    };
    let near =
        |a: &[f64; 3], b: &[f64; 3]| (0..3).map(|k| (a[k] - b[k]).powi(2)).sum::<f64>() < 0.25;
    // the next process
    let mut m = BuildingMemory::open(&path, "house").unwrap();
    assert_eq!(m.vacated().len(), 1);
    let places = recall(&m, "tv remote");
    assert!(!places.is_empty(), "the other places stay");
    assert!(
        places.iter().all(|p| !near(&p.position, &gone.position)),
        "{places:?}"
    );
    // what else the view saw there is still remembered there
    let view = &m.hierarchy().views[gone.view as usize];
    let other = view
        .instances
        .iter()
        .find(|i| i.description != "tv remote")
        .unwrap()
        .description
        .clone();
    assert!(
        recall(&m, &other)
            .iter()
            .any(|p| near(&p.position, &gone.position)),
        "the {other} there was passed over too"
    );
    // a newer tour sees the remote there again: the mark goes
    let mut again = view.clone();
    again.source = "tour2.mcap#0".into();
    m.add_views(vec![again], &params, &summariser, &e).unwrap();
    assert!(m.vacated().is_empty());
    assert!(
        recall(&m, "tv remote")
            .iter()
            .any(|p| near(&p.position, &gone.position))
    );
    drop(m);
    let mut m = BuildingMemory::open(&path, "house").unwrap();
    assert!(m.vacated().is_empty(), "the cleared mark came back");
    // bounded: the oldest marks go first
    for i in 0..MAX_VACATED + 3 {
        m.mark_vacated(Vacated {
            position: [i as f64, 0.0, 0.0],
            request: format!("thing {i}"),
            embedding: e.embed_text("thing").unwrap(),
            min_relevance: 0.6,
        })
        .unwrap();
    }
    drop(m);
    let m = BuildingMemory::open(&path, "house").unwrap();
    assert_eq!(m.vacated().len(), MAX_VACATED);
    assert_eq!(m.vacated()[0].request, "thing 3");
}

/// The memory says which frame its views are in and refuses views of another; a place
/// moves with the transform from that frame to a storey's map, viewpoints included.
#[test]
fn the_memory_keeps_its_frame_and_places_move_to_a_storeys_map() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("building.redb");
    let e = HashingTextEmbedder::new(DIM);
    let (views, _) = tour(&e);
    let (params, summariser) = (ClusterParams::default(), KeywordSummariser::default());
    {
        let mut m = BuildingMemory::open(&path, "house").unwrap();
        assert_eq!(m.frame().unwrap(), None);
        m.set_frame("building").unwrap();
        m.add_views(views.clone(), &params, &summariser, &e)
            .unwrap();
        m.set_frame("building").unwrap();
        let err = m.set_frame("map").unwrap_err();
        assert!(
            err.to_string().contains("\"building\"") && err.to_string().contains("\"map\""),
            "{err}"
        );
    }
    let m = BuildingMemory::open(&path, "house").unwrap();
    assert_eq!(m.frame().unwrap().as_deref(), Some("building"));
    // a memory of one storey made before frames were kept takes no building's views
    let old = dir.path().join("old.redb");
    let mut o = BuildingMemory::open(&old, "house").unwrap();
    o.add_views(views, &params, &summariser, &e).unwrap();
    assert!(o.set_frame("building").is_err());
    o.set_frame("map").unwrap();

    let text = e.embed_text("reading lamp").unwrap();
    let place = recall_request(
        m.hierarchy(),
        "reading lamp",
        &text,
        RecallScope::default(),
        0.6,
        PassOver::default(),
        1,
    )
    .pop()
    .unwrap();
    // upstairs: the storey's map is 3.5 m up the building's frame, turned a quarter
    let map_in_building = asp_core::Isometry3::new(
        asp_core::Vector3::new(1.0, 0.0, 3.5),
        asp_core::Vector3::new(0.0, 0.0, std::f32::consts::FRAC_PI_2),
    );
    let moved = place.clone().transformed(&map_in_building.inverse());
    let back = |p: [f64; 3]| {
        map_in_building * asp_core::Point3::new(p[0] as f32, p[1] as f32, p[2] as f32)
    };
    let b = back(moved.position);
    for k in 0..3 {
        assert!(
            (f64::from(b[k]) - place.position[k]).abs() < 1e-4,
            "{b:?} vs {place:?}"
        );
    }
    assert!((moved.position[2] - (place.position[2] - 3.5)).abs() < 1e-4);
    let (xy, yaw) = moved.viewpoints[0];
    let vb = back([xy[0], xy[1], moved.position[2]]);
    assert!((f64::from(vb.x) - place.viewpoints[0].0[0]).abs() < 1e-4);
    assert!((yaw - (place.viewpoints[0].1 - std::f64::consts::FRAC_PI_2)).abs() < 1e-5);
}

/// The views under cluster `index` of `levels[level]`.
fn views_under(h: &Hierarchy, level: usize, index: u32) -> Vec<u32> {
    let c = &h.levels[level][index as usize];
    if level == 0 {
        return c.children.clone();
    }
    c.children
        .iter()
        .flat_map(|&k| views_under(h, level - 1, k))
        .collect()
}

/// Summaries that mislead: every cluster but the office's reads exactly as the request,
/// the office's as its opposite. The traversal (one cluster kept per level) goes
/// elsewhere, and recall asks every remembered object instead of finding nothing.
#[test]
fn recall_asks_every_remembered_object_when_the_traversal_leads_elsewhere() {
    let (mut h, rooms, e) = build();
    let text = e.embed_text("blue thermos").unwrap();
    let opposite: Vec<f32> = text.iter().map(|x| -x).collect();
    for level in 0..h.levels.len() {
        for k in 0..h.levels[level].len() {
            let office = views_under(&h, level, k as u32)
                .iter()
                .any(|&v| rooms[v as usize] == 3);
            h.levels[level][k].embedding = if office {
                opposite.clone()
            } else {
                text.clone()
            };
        }
    }
    let narrow = RetrievalParams {
        k_b: 1,
        ..RetrievalParams::default()
    };
    let q = Query {
        instruction: "blue thermos",
        text: &text,
        visual: &text,
        affordance: None,
        heights: None,
    };
    let led = retrieve(&h, &q, &narrow, &EmbeddingJudge);
    assert!(
        led.iter().all(|r| rooms[r.view as usize] != 3),
        "the traversal should miss the office here"
    );
    let places = recall_places(&h, &q, &narrow, 0.6, &[], 3);
    assert!(!places.is_empty());
    assert_eq!(places[0].description, "blue thermos");
    assert_eq!(rooms[places[0].view as usize], 3);
}

/// The zones `room` is taken for in `h`.
fn scope_of(h: &Hierarchy, e: &HashingTextEmbedder, room: &str) -> Option<RoomScope> {
    // the kinds a named room is told apart from: the configuration's default
    let kinds: Vec<Vec<f32>> = BuildingMemoryConfig::default()
        .room_kinds
        .iter()
        .map(|k| e.embed_text(k).unwrap())
        .collect();
    let text = e.embed_text(room).unwrap();
    let names = RoomNames {
        room,
        text: &text,
        kinds: &kinds,
    };
    room_scope(h, &names, &RoomParams::default(), None)
}

/// A room the request names ("the thermos in the living room") is the zones whose
/// objects most suggest it, with the zones that saw the same objects; a place belongs
/// to the zone of the view that saw it from nearest, and recall keeps to the room's
/// places.
#[test]
fn a_named_room_is_the_zones_whose_objects_suggest_it_and_recall_keeps_to_them() {
    let (h, rooms, e) = build();
    let zone_room = |z: u32| rooms[h.levels[0][z as usize].children[0] as usize];
    for (name, room) in [("office", 3), ("kitchen", 0), ("bedroom", 2)] {
        let scope = scope_of(&h, &e, name).unwrap();
        assert!(!scope.zones.is_empty());
        assert!(
            scope.zones.iter().all(|&z| zone_room(z) == room),
            "{name}: {scope:?}"
        );
        assert!(!scope.evidence.is_empty(), "{name}: {scope:?}");
        // every zone of the room is in it: it saw the same objects as the best
        for (z, _) in h.levels[0].iter().enumerate() {
            assert_eq!(
                scope.zones.contains(&(z as u32)),
                zone_room(z as u32) == room,
                "{name}: zone {z} of room {}",
                zone_room(z as u32)
            );
        }
        // every remembered object of the room is in it, none of another room's floor
        for (v, view) in h.views.iter().enumerate() {
            let at = view.instances[0].position.unwrap();
            if rooms[v] == room {
                assert!(scope.contains(&h, at), "{name}: view {v} at {at:?}");
            } else if HOUSE[rooms[v]].floor == HOUSE[room].floor {
                assert!(!scope.contains(&h, at), "{name}: view {v} at {at:?}");
            }
        }
    }
    // nowhere near a view: no zone
    assert_eq!(zone_of(&h, [100.0, 100.0, 1.0]), None);

    // "thermos" alone is most like the office's blue thermos; in the tv room (the
    // living room, whose tv remote says so), the thermos poster is what there is
    let params = RetrievalParams::default();
    let mut store = Vec::new();
    let q = query(&e, "thermos", None, &mut store);
    let anywhere = recall_places(&h, &q, &params, 0.3, &[], 5);
    assert!(
        anywhere.iter().any(|p| p.description == "blue thermos"),
        "{anywhere:?}"
    );
    let living = scope_of(&h, &e, "tv room").unwrap();
    let there = recall_in_room(&h, &q, &params, &living, 0.3, &[], 5);
    assert!(!there.is_empty());
    assert!(
        there
            .iter()
            .all(|p| p.description == "thermos poster" && rooms[p.view as usize] == 1),
        "{there:?}"
    );
}
