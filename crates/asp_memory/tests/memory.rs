//! Behaviour of the two-tier memory: seeding, capacities, eviction into capsules,
//! retrieval order, write-back only with an acceptance, restarts and a killed writer.
#![allow(clippy::unwrap_used)]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use asp_config::sections::affordance::MemoryConfig;
use asp_core::Box2;
use asp_memory::testkit::{acceptance_for, clean_evidence, draft};
use asp_memory::{AffordanceMemory, CommonSensePrior, MemoryError, Recalled, SeedFile};

fn seed() -> Vec<CommonSensePrior> {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../config/memory/common_sense_priors.yaml");
    SeedFile::load(&path).unwrap().priors
}

fn cfg(episodic: usize) -> MemoryConfig {
    MemoryConfig {
        episodic_capacity: episodic,
        ..MemoryConfig::default()
    }
}

fn db(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("var/affordance_memory.redb")
}

#[test]
fn shipped_seed_covers_the_study_categories_and_loads_once() {
    let dir = tempfile::tempdir().unwrap();
    let priors = seed();
    for (cat, part) in [
        ("mug", "handle"),
        ("kettle", "button"),
        ("power adapter", "plug"),
        ("corkboard", "thumbtack"),
        ("drawer", "handle"),
        ("cabinet", "door handle"),
        ("keypad", "key"),
        ("desk bell", "plunger"),
    ] {
        assert!(
            priors.iter().any(|p| p.category == cat && p.part == part),
            "{cat}/{part} missing"
        );
    }
    let m = AffordanceMemory::open(db(&dir), &cfg(80), &priors).unwrap();
    assert_eq!(m.stats().unwrap().priors, priors.len());
    drop(m);
    // a second open does not seed again, even with a different seed
    let m = AffordanceMemory::open(db(&dir), &cfg(80), &priors[..2]).unwrap();
    assert_eq!(m.priors().unwrap(), priors);
}

#[test]
fn prior_matching_is_by_category_and_part_words() {
    let dir = tempfile::tempdir().unwrap();
    let m = AffordanceMemory::open(db(&dir), &cfg(80), &seed()).unwrap();
    let hit = |o: &str, p: &str| m.prior_for(o, p).unwrap().map(|p| (p.category, p.part));
    assert_eq!(
        hit("the red mug", "mug handle"),
        Some(("mug".into(), "handle".into()))
    );
    assert_eq!(
        hit("drawer", "handle of the drawer"),
        Some(("drawer".into(), "handle".into()))
    );
    assert_eq!(
        hit("white cabinet", "door handle"),
        Some(("cabinet".into(), "door handle".into()))
    );
    assert_eq!(
        hit("power strip", "plug"),
        Some(("power strip".into(), "plug".into()))
    );
    assert_eq!(
        hit("power adapter", "power adapter plug"),
        Some(("power adapter".into(), "plug".into()))
    );
    assert_eq!(hit("laptop", "lid"), None, "unfamiliar category");
    assert_eq!(hit("mug", "rim"), None, "familiar category, unknown part");
}

#[test]
fn common_sense_bank_refuses_priors_beyond_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let small = MemoryConfig {
        common_sense_capacity: 3,
        ..MemoryConfig::default()
    };
    let priors = seed();
    let err = AffordanceMemory::open(db(&dir), &small, &priors).unwrap_err();
    assert!(
        matches!(err, MemoryError::CommonSenseFull { capacity: 3, .. }),
        "{err}"
    );
    let m = AffordanceMemory::open(db(&dir), &small, &priors[..2]).unwrap();
    m.add_prior(priors[2].clone()).unwrap();
    let err = m.add_prior(priors[3].clone()).unwrap_err();
    assert!(
        err.to_string().contains("full (3 priors)") && err.to_string().contains("power strip"),
        "{err}"
    );
    assert_eq!(m.stats().unwrap().priors, 3);
    let mut bad = priors[0].clone();
    bad.confidence = 1.5;
    assert!(matches!(
        m.add_prior(bad),
        Err(MemoryError::InvalidPrior { .. })
    ));
}

#[test]
fn episodic_bank_evicts_the_oldest_into_capsules() {
    let dir = tempfile::tempdir().unwrap();
    let m = AffordanceMemory::open(db(&dir), &cfg(4), &[]).unwrap();
    let evidence = clean_evidence();
    let mut evictions = Vec::new();
    for i in 0..10u64 {
        let category = if i % 2 == 0 { "mug" } else { "drawer" };
        let wb = m
            .write_back(acceptance_for(&evidence).unwrap(), draft(i, category))
            .unwrap();
        assert_eq!(wb.episode, i);
        evictions.push(wb.evicted);
    }
    // the first four fit; then each write evicts the oldest
    assert!(evictions[..4].iter().all(Option::is_none));
    let evicted: Vec<u64> = evictions[4..].iter().map(|e| e.unwrap().0).collect();
    assert_eq!(evicted, vec![0, 1, 2, 3, 4, 5]);
    let ids: Vec<u64> = m.episodes().unwrap().iter().map(|e| e.id).collect();
    assert_eq!(ids, vec![6, 7, 8, 9]);
    // evicted mugs (0, 2, 4) and drawers (1, 3, 5) went into one capsule each
    let capsules = m.capsules().unwrap();
    assert_eq!(capsules.len(), 2);
    let mug = capsules.iter().find(|c| c.category == "mug").unwrap();
    assert_eq!(
        (mug.episodes, mug.first_episode, mug.last_episode),
        (3, 0, 4)
    );
    // zoom ranges 2..2+(i%5): midpoints 2.0, 3.0, 4.0 for i = 0, 2, 4
    let zoom = mug.parameters["zoom"];
    assert_eq!(
        (zoom.lo, zoom.median, zoom.hi, zoom.samples),
        (2.0, 3.0, 4.0, 3)
    );
    assert!(
        mug.summary.contains("3 accepted episodes"),
        "{}",
        mug.summary
    );
    assert!((mug.mean_outcome - evidence_v()).abs() < 1e-9);
    let stats = m.stats().unwrap();
    assert_eq!(
        (stats.episodes, stats.capsules, stats.episodes_written),
        (4, 2, 10)
    );
}

fn evidence_v() -> f64 {
    acceptance_for(&clean_evidence()).unwrap().v()
}

#[test]
fn capsules_keep_a_bounded_number_of_samples() {
    let dir = tempfile::tempdir().unwrap();
    let small = MemoryConfig {
        episodic_capacity: 1,
        capsule_samples: 3,
        ..MemoryConfig::default()
    };
    let m = AffordanceMemory::open(db(&dir), &small, &[]).unwrap();
    for i in 0..8 {
        m.write_back(acceptance_for(&clean_evidence()).unwrap(), draft(i, "mug"))
            .unwrap();
    }
    let c = &m.capsules().unwrap()[0];
    assert_eq!(c.episodes, 7);
    assert_eq!(
        c.samples["zoom"].len(),
        3,
        "only the latest samples are kept"
    );
}

#[test]
fn retrieval_is_top_n_by_cosine_over_both_tiers() {
    let dir = tempfile::tempdir().unwrap();
    let m = AffordanceMemory::open(db(&dir), &cfg(3), &[]).unwrap();
    let mut drafts = Vec::new();
    for i in 0..5u64 {
        let d = draft(i, if i < 2 { "kettle" } else { "mug" });
        drafts.push(d.clone());
        m.write_back(acceptance_for(&clean_evidence()).unwrap(), d)
            .unwrap();
    }
    // episodes 2, 3, 4 remain; 0 and 1 form the kettle capsule
    let query = drafts[3].embedding.clone();
    let hits = m.retrieve(&query, 2).unwrap();
    assert_eq!(hits.len(), 2);
    match &hits[0] {
        Recalled::Episode {
            episode,
            similarity,
        } => {
            assert_eq!(episode.id, 3);
            assert!((similarity - 1.0).abs() < 1e-5);
        }
        other => panic!("{other:?}"),
    }
    assert!(hits[0].similarity() >= hits[1].similarity());
    // the full ranking is sorted and covers every episode and capsule
    let all = m.retrieve(&query, 10).unwrap();
    assert_eq!(all.len(), 4);
    assert!(
        all.windows(2)
            .all(|w| w[0].similarity() >= w[1].similarity())
    );
    // the capsule is found by its own direction (the renormalised mean of 0 and 1)
    let capsule = m.capsules().unwrap().remove(0);
    let hits = m.retrieve(&capsule.embedding, 1).unwrap();
    assert!(matches!(&hits[0], Recalled::Capsule { capsule: c, .. } if c.category == "kettle"));
    assert!(hits[0].describe().contains("kettle handle"));
    assert!(m.retrieve(&query, 0).unwrap().is_empty());
}

#[test]
fn write_back_needs_an_acceptance_that_rejected_evidence_never_yields() {
    let dir = tempfile::tempdir().unwrap();
    let m = AffordanceMemory::open(db(&dir), &cfg(80), &[]).unwrap();
    // the segmenter leaks below the box: ω = 0.5, v ≈ 0.70 < δ
    let mut evidence = clean_evidence();
    if let asp_core::EvidencePayload::Mask(mask) = &mut evidence[1].payload {
        *mask = asp_core::Mask::fill_box(32, 32, &Box2::new(8.0, 8.0, 20.0, 32.0));
    }
    let mut evidence2 = clean_evidence();
    if let asp_core::EvidencePayload::Mask(mask) = &mut evidence2[1].payload {
        *mask = asp_core::Mask::fill_box(32, 32, &Box2::new(20.0, 20.0, 32.0, 32.0));
    }
    assert!(acceptance_for(&evidence).is_none());
    // … or grabs another region entirely: ω = 0
    assert!(acceptance_for(&evidence2).is_none());
    assert!(acceptance_for(&[]).is_none(), "no evidence, no acceptance");
    assert_eq!(m.stats().unwrap().episodes, 0);
    // an embedding problem is refused before anything is written
    let mut d = draft(0, "mug");
    d.embedding.clear();
    assert!(matches!(
        m.write_back(acceptance_for(&clean_evidence()).unwrap(), d),
        Err(MemoryError::EmptyEmbedding)
    ));
    m.write_back(acceptance_for(&clean_evidence()).unwrap(), draft(0, "mug"))
        .unwrap();
    let mut d = draft(1, "mug");
    d.embedding.push(0.0);
    assert!(matches!(
        m.write_back(acceptance_for(&clean_evidence()).unwrap(), d),
        Err(MemoryError::EmbeddingDim {
            expected: 8,
            found: 9
        })
    ));
    assert_eq!(m.stats().unwrap().episodes, 1);
}

#[test]
fn memory_survives_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let m = AffordanceMemory::open(db(&dir), &cfg(2), &seed()).unwrap();
        for i in 0..5 {
            m.write_back(acceptance_for(&clean_evidence()).unwrap(), draft(i, "mug"))
                .unwrap();
        }
        (
            m.episodes().unwrap(),
            m.capsules().unwrap(),
            m.priors().unwrap(),
        )
    };
    let mut m = AffordanceMemory::open(db(&dir), &cfg(2), &seed()).unwrap();
    assert_eq!(
        (
            m.episodes().unwrap(),
            m.capsules().unwrap(),
            m.priors().unwrap()
        ),
        before
    );
    assert!(m.check_integrity().unwrap());
    // ids continue after the restart
    let wb = m
        .write_back(acceptance_for(&clean_evidence()).unwrap(), draft(5, "mug"))
        .unwrap();
    assert_eq!(wb.episode, 5);
}

/// A writer process is SIGKILLed while committing episodes (with evictions). Every
/// episode it reported committed must be in the reopened memory (as an episode or folded
/// into a capsule), the bank must hold exactly the newest episodes, and redb's integrity
/// check must pass.
#[test]
fn memory_survives_a_killed_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = db(&dir);
    let capacity = 7usize;
    let mut child = Command::new(env!("CARGO_BIN_EXE_memory_crash_writer"))
        .arg(&path)
        .arg(capacity.to_string())
        .arg("1000000")
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut last = None;
    for line in BufReader::new(stdout).lines() {
        let line = line.unwrap();
        let n: u64 = line.strip_prefix("committed ").unwrap().parse().unwrap();
        last = Some(n);
        if n >= 40 {
            break;
        }
    }
    child.kill().unwrap(); // SIGKILL on Unix: no destructor, no flush, mid-transaction
    let status = child.wait().unwrap();
    assert!(!status.success(), "the writer was killed, not finished");
    let last = last.unwrap();

    let mut m = AffordanceMemory::open(&path, &cfg(capacity), &[]).unwrap();
    m.check_integrity().unwrap();
    let stats = m.stats().unwrap();
    let written = stats.episodes_written;
    assert!(
        written > last,
        "committed {last} was reported, {written} are in the file"
    );
    let episodes = m.episodes().unwrap();
    assert_eq!(episodes.len(), capacity);
    let ids: Vec<u64> = episodes.iter().map(|e| e.id).collect();
    let expected: Vec<u64> = (written - capacity as u64..written).collect();
    assert_eq!(
        ids, expected,
        "the bank holds the newest episodes, contiguous"
    );
    for e in &episodes {
        assert_eq!(e.actions[1], format!("episode_{}", e.id), "entry intact");
    }
    let absorbed: u64 = m
        .capsules()
        .unwrap()
        .iter()
        .map(|c| u64::from(c.episodes))
        .sum();
    assert_eq!(
        absorbed + episodes.len() as u64,
        written,
        "no committed episode was lost"
    );
    // the reopened memory takes new writes after the crash
    let wb = m
        .write_back(
            acceptance_for(&clean_evidence()).unwrap(),
            draft(written, "mug"),
        )
        .unwrap();
    assert_eq!(wb.episode, written);
}

#[test]
fn clearing_test_time_entries_keeps_the_common_sense_bank() {
    let dir = tempfile::tempdir().unwrap();
    let mut m = AffordanceMemory::open(db(&dir), &cfg(2), &seed()).unwrap();
    let priors = m.stats().unwrap().priors;
    assert!(priors > 0);
    let evidence = clean_evidence();
    for i in 0..5u64 {
        m.write_back(acceptance_for(&evidence).unwrap(), draft(i, "mug"))
            .unwrap();
    }
    let before = m.stats().unwrap();
    assert_eq!((before.episodes, before.capsules), (2, 1));
    assert_eq!(m.clear_test_time().unwrap(), (2, 1));
    let after = m.stats().unwrap();
    assert_eq!(
        (after.priors, after.episodes, after.capsules),
        (priors, 0, 0)
    );
    assert!(
        m.retrieve(&draft(9, "mug").embedding, 5)
            .unwrap()
            .is_empty()
    );
    // ids keep counting after a clear, and a new eviction starts a fresh capsule
    let wb = m
        .write_back(acceptance_for(&evidence).unwrap(), draft(5, "mug"))
        .unwrap();
    assert_eq!(wb.episode, 5);
    m.compact().unwrap();
    drop(m);
    let m = AffordanceMemory::open(db(&dir), &cfg(2), &seed()).unwrap();
    let reopened = m.stats().unwrap();
    assert_eq!(
        (reopened.priors, reopened.episodes, reopened.capsules),
        (priors, 1, 0)
    );
}

#[test]
fn a_database_held_by_another_process_is_named_with_that_process() {
    let dir = tempfile::tempdir().unwrap();
    let first = AffordanceMemory::open(db(&dir), &cfg(8), &seed()).unwrap();
    // redb locks the file for the whole process, so a second open here meets the lock
    // as another process would
    let err = AffordanceMemory::open(db(&dir), &cfg(8), &seed()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, MemoryError::Held { .. }), "{msg}");
    assert!(
        msg.contains(&format!("pid {}", std::process::id())),
        "names the holder: {msg}"
    );
    assert!(msg.contains("paths.data_dir"), "says what to do: {msg}");
    // closing gives the claim back, and the next open works
    drop(first);
    let owner = format!("{}.owner", db(&dir).display());
    assert!(!std::path::Path::new(&owner).exists());
    AffordanceMemory::open(db(&dir), &cfg(8), &seed()).unwrap();
}
