//! A-Harness two-tier memory (SPEC §2.3) on an embedded database.
//!
//! - **Common-sense bank** M_cs (capacity C_cs): curated priors per object category and
//!   part, seeded from `config/memory/common_sense_priors.yaml` when an empty database is
//!   first opened. When full, new priors are refused (curated knowledge is not silently
//!   evicted).
//! - **Test-time episodic bank** M_tt (capacity C_tt): verifier-accepted groundings. A
//!   write needs an [`asp_verify::Acceptance`], which only the commit rule makes (v ≥ δ ∧
//!   ω ≥ ω_floor), and consumes it. When full, the oldest episode is evicted and folded
//!   into the experience capsule of its (category, part, skill): a summary plus robust
//!   parameter ranges, kept forever (at most one capsule per key, so they stay compact).
//! - **Retrieval**: top-N episodes and capsules by cosine similarity of
//!   `g = normalize(f_visual ‖ f_text)` ([`joint_embedding`]).
//!
//! Storage is [redb](https://docs.rs/redb): pure Rust, ACID, copy-on-write B-trees with
//! a two-slot commit, so a process killed at any instant leaves the last committed
//! transaction intact and the file consistent (checked on open; [`AffordanceMemory::check_integrity`]).
//! Every write (an episode with its eviction, a prior) is one durable transaction. A
//! single process may open the file at a time (redb holds a file lock).

pub mod building;
pub mod concepts;
#[doc(hidden)]
pub mod testkit;
mod types;

use std::path::{Path, PathBuf};

use asp_config::sections::affordance::MemoryConfig;
use asp_core::map::cosine_similarity;
use asp_verify::Acceptance;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

pub use types::{
    Capsule, CommonSensePrior, CompactMask, Episode, EpisodeDraft, EvidenceSummary, ParamRange,
    Recalled, RobustRange, SeedFile, joint_embedding, robust_range,
};

const META: TableDefinition<&str, u64> = TableDefinition::new("meta");
const PRIORS: TableDefinition<u64, &[u8]> = TableDefinition::new("common_sense");
const EPISODES: TableDefinition<u64, &[u8]> = TableDefinition::new("episodes");
const CAPSULES: TableDefinition<u64, &[u8]> = TableDefinition::new("capsules");
const CAPSULE_KEYS: TableDefinition<&str, u64> = TableDefinition::new("capsule_keys");

const SCHEMA_VERSION: u64 = 1;

/// Errors of the memory; each names the database file or the offending entry.
#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error("memory database {file}: {message}")]
    Database { file: String, message: String },
    #[error(
        "memory database {file} is in use by {holder}; stop that process or give this one its own data folder (`--set /**.paths.data_dir=DIR`)"
    )]
    Held { file: String, holder: String },
    #[error("memory database {file} has schema {found}, this build reads {expected}")]
    Schema {
        file: String,
        found: u64,
        expected: u64,
    },
    #[error("common-sense seed {file}: {problem}")]
    Seed { file: String, problem: String },
    #[error("common-sense prior {prior}: {problem}")]
    InvalidPrior { prior: String, problem: String },
    #[error("the common-sense bank is full ({capacity} priors); {prior} was not added")]
    CommonSenseFull { capacity: usize, prior: String },
    #[error("episode embedding has {found} dimensions, the memory holds {expected}")]
    EmbeddingDim { expected: usize, found: usize },
    #[error("an episode needs a non-empty, finite embedding")]
    EmptyEmbedding,
    #[error("corrupt memory entry: {0}")]
    Corrupt(String),
    #[error(
        "memory database {file} holds the building memory of site \"{found}\", not \"{expected}\"; give each site its own file"
    )]
    OtherSite {
        file: String,
        found: String,
        expected: String,
    },
    #[error("building memory {file}: {source}")]
    Build {
        file: String,
        #[source]
        source: building::BuildError,
    },
}

/// What [`AffordanceMemory::write_back`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBack {
    pub episode: u64,
    /// The episode evicted to make room, and the capsule it went into.
    pub evicted: Option<(u64, u64)>,
}

/// Counts per tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryStats {
    pub priors: usize,
    pub episodes: usize,
    pub capsules: usize,
    /// Episodes ever written (including evicted ones).
    pub episodes_written: u64,
}

/// The two-tier affordance memory on one redb file.
#[derive(Debug)]
pub struct AffordanceMemory {
    db: Database,
    path: PathBuf,
    common_sense_capacity: usize,
    episodic_capacity: usize,
    capsule_samples: usize,
}

/// The file beside the database that names the process holding it.
fn owner_file(db: &Path) -> PathBuf {
    let mut name = db.as_os_str().to_owned();
    name.push(".owner");
    PathBuf::from(name)
}

fn owner_line() -> String {
    let command: Vec<String> = std::env::args().take(4).collect();
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    format!("{}\n{}\n{since}\n", std::process::id(), command.join(" "))
}

/// "pid 4242 (`asp launch sim`), open since 2026-…": what the owner file says, or that
/// another process holds the lock when it says nothing.
fn holder(db: &Path) -> String {
    let text = std::fs::read_to_string(owner_file(db)).unwrap_or_default();
    let mut lines = text.lines();
    match (lines.next(), lines.next(), lines.next()) {
        (Some(pid), Some(command), Some(since)) if !pid.is_empty() => {
            let age = since
                .parse::<u64>()
                .ok()
                .and_then(|s| {
                    std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()
                        .map(|now| now.as_secs().saturating_sub(s))
                })
                .map_or_else(String::new, |age| format!(", opened {age} s ago"));
            format!("pid {pid} (`{command}`){age}")
        }
        _ => "another process".to_owned(),
    }
}

/// Takes back this process's claim on `db` (another's is left alone).
fn release_owner(db: &Path) {
    let file = owner_file(db);
    if std::fs::read_to_string(&file)
        .is_ok_and(|t| t.lines().next() == Some(&std::process::id().to_string()))
    {
        let _ = std::fs::remove_file(file);
    }
}

/// Creates or opens the redb file at `path` (its folder too), naming the process that
/// holds it when it is locked, and records this process as its holder.
fn open_locked(path: &Path) -> Result<Database, MemoryError> {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| MemoryError::Database {
            file: path.display().to_string(),
            message: format!("cannot create folder {}: {e}", dir.display()),
        })?;
    }
    let db = Database::create(path).map_err(|e| match e {
        redb::DatabaseError::DatabaseAlreadyOpen => MemoryError::Held {
            file: path.display().to_string(),
            holder: holder(path),
        },
        e => MemoryError::Database {
            file: path.display().to_string(),
            message: e.to_string(),
        },
    })?;
    // who holds it, for the next process that finds it locked
    let _ = std::fs::write(owner_file(path), owner_line());
    Ok(db)
}

/// Checks the version `meta` holds under `key` against `expected`, or writes it into a
/// new file's table; another version is an error naming `file` and both.
pub(crate) fn check_version(
    meta: &mut redb::Table<&str, u64>,
    key: &str,
    file: &Path,
    expected: u64,
) -> Result<(), MemoryError> {
    let err = |e: redb::StorageError| MemoryError::Database {
        file: file.display().to_string(),
        message: e.to_string(),
    };
    let found = meta.get(key).map_err(err)?.map(|v| v.value());
    match found {
        Some(found) if found != expected => Err(MemoryError::Schema {
            file: file.display().to_string(),
            found,
            expected,
        }),
        Some(_) => Ok(()),
        None => meta.insert(key, expected).map(|_| ()).map_err(err),
    }
}

impl Drop for AffordanceMemory {
    fn drop(&mut self) {
        release_owner(&self.path);
    }
}

impl AffordanceMemory {
    /// Opens (or creates) the database at `path`. If it holds no common-sense priors and
    /// was never seeded, `seed` is loaded in the same transaction that marks it seeded.
    pub fn open(
        path: impl AsRef<Path>,
        cfg: &MemoryConfig,
        seed: &[CommonSensePrior],
    ) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let db = open_locked(&path)?;
        let mem = Self {
            db,
            path,
            common_sense_capacity: cfg.common_sense_capacity,
            episodic_capacity: cfg.episodic_capacity,
            capsule_samples: cfg.capsule_samples,
        };
        mem.initialise(seed)?;
        Ok(mem)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    fn err(&self, e: impl std::fmt::Display) -> MemoryError {
        MemoryError::Database {
            file: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn initialise(&self, seed: &[CommonSensePrior]) -> Result<(), MemoryError> {
        for p in seed {
            p.validate()?;
        }
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut meta = tx.open_table(META).map_err(|e| self.err(e))?;
            check_version(&mut meta, "schema", &self.path, SCHEMA_VERSION)?;
            let seeded = meta.get("seeded").map_err(|e| self.err(e))?.is_some();
            let mut priors = tx.open_table(PRIORS).map_err(|e| self.err(e))?;
            tx.open_table(EPISODES).map_err(|e| self.err(e))?;
            tx.open_table(CAPSULES).map_err(|e| self.err(e))?;
            tx.open_table(CAPSULE_KEYS).map_err(|e| self.err(e))?;
            if !seeded && priors.is_empty().map_err(|e| self.err(e))? {
                if seed.len() > self.common_sense_capacity {
                    return Err(MemoryError::CommonSenseFull {
                        capacity: self.common_sense_capacity,
                        prior: format!("seed of {} priors", seed.len()),
                    });
                }
                for (i, p) in seed.iter().enumerate() {
                    let bytes = encode(p)?;
                    priors
                        .insert(i as u64, bytes.as_slice())
                        .map_err(|e| self.err(e))?;
                }
                meta.insert("seeded", 1).map_err(|e| self.err(e))?;
                tracing::info!(file = %self.path.display(), priors = seed.len(), "seeded the common-sense bank");
            }
        }
        tx.commit().map_err(|e| self.err(e))
    }

    /// Adds a curated prior; refused when the bank holds C_cs priors.
    pub fn add_prior(&self, prior: CommonSensePrior) -> Result<u64, MemoryError> {
        prior.validate()?;
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        let id = {
            let mut priors = tx.open_table(PRIORS).map_err(|e| self.err(e))?;
            let len = priors.len().map_err(|e| self.err(e))? as usize;
            if len >= self.common_sense_capacity {
                return Err(MemoryError::CommonSenseFull {
                    capacity: self.common_sense_capacity,
                    prior: format!("{}/{}", prior.category, prior.part),
                });
            }
            let id = priors
                .last()
                .map_err(|e| self.err(e))?
                .map_or(0, |(k, _)| k.value() + 1);
            priors
                .insert(id, encode(&prior)?.as_slice())
                .map_err(|e| self.err(e))?;
            id
        };
        tx.commit().map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// Every common-sense prior, in insertion order.
    pub fn priors(&self) -> Result<Vec<CommonSensePrior>, MemoryError> {
        self.read_all(PRIORS)
    }

    /// The prior that best matches an object (its query text, e.g. "red mug") and a part
    /// name (e.g. "mug handle"): every word of the prior's category must appear in the
    /// object or part text, and some word of the prior's part in the part text; ties go
    /// to the prior with more matching words. `None`: the category is unfamiliar.
    pub fn prior_for(
        &self,
        object: &str,
        part: &str,
    ) -> Result<Option<CommonSensePrior>, MemoryError> {
        let obj = types::tokens(object);
        let prt = types::tokens(part);
        let mut best: Option<(usize, CommonSensePrior)> = None;
        for p in self.priors()? {
            let cat = types::tokens(&p.category);
            let ppart = types::tokens(&p.part);
            let cat_ok = !cat.is_empty() && cat.iter().all(|w| obj.contains(w) || prt.contains(w));
            let part_hits = ppart.iter().filter(|w| prt.contains(w)).count();
            if cat_ok && part_hits > 0 {
                let score = cat.len() + part_hits;
                if best.as_ref().is_none_or(|(s, _)| score > *s) {
                    best = Some((score, p));
                }
            }
        }
        Ok(best.map(|(_, p)| p))
    }

    /// Remembers an accepted grounding. The [`Acceptance`] is consumed: one acceptance,
    /// one episode. Evicts the oldest episode into its capsule when the bank is full, in
    /// the same transaction. The outcome score ρ is the accepted v.
    pub fn write_back(
        &self,
        acceptance: Acceptance,
        draft: EpisodeDraft,
    ) -> Result<WriteBack, MemoryError> {
        if draft.embedding.is_empty() || draft.embedding.iter().any(|v| !v.is_finite()) {
            return Err(MemoryError::EmptyEmbedding);
        }
        // the type guarantees it; a wrong configuration at construction cannot slip by
        debug_assert!(acceptance.v() >= acceptance.delta());
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        let result = {
            let mut meta = tx.open_table(META).map_err(|e| self.err(e))?;
            let mut episodes = tx.open_table(EPISODES).map_err(|e| self.err(e))?;
            if let Some((_, v)) = episodes.first().map_err(|e| self.err(e))? {
                let first: Episode = decode(v.value())?;
                if first.embedding.len() != draft.embedding.len() {
                    return Err(MemoryError::EmbeddingDim {
                        expected: first.embedding.len(),
                        found: draft.embedding.len(),
                    });
                }
            }
            let id = meta
                .get("next_episode")
                .map_err(|e| self.err(e))?
                .map_or(0, |v| v.value());
            meta.insert("next_episode", id + 1)
                .map_err(|e| self.err(e))?;
            let episode = Episode {
                id,
                embedding: draft.embedding,
                category: draft.category,
                part: draft.part,
                skill: draft.skill,
                actions: draft.actions,
                parameters: draft.parameters,
                evidence: draft.evidence,
                outcome: acceptance.v(),
                reference_mask: draft.reference_mask,
            };
            episodes
                .insert(id, encode(&episode)?.as_slice())
                .map_err(|e| self.err(e))?;
            let mut evicted = None;
            while episodes.len().map_err(|e| self.err(e))? as usize > self.episodic_capacity {
                let Some((k, v)) = episodes.pop_first().map_err(|e| self.err(e))? else {
                    break;
                };
                let old_id = k.value();
                let old: Episode = decode(v.value())?;
                drop((k, v));
                let capsule_id = self.absorb(&tx, &mut meta, &old)?;
                evicted = Some((old_id, capsule_id));
            }
            WriteBack {
                episode: id,
                evicted,
            }
        };
        tx.commit().map_err(|e| self.err(e))?;
        Ok(result)
    }

    fn absorb(
        &self,
        tx: &redb::WriteTransaction,
        meta: &mut redb::Table<'_, &'static str, u64>,
        old: &Episode,
    ) -> Result<u64, MemoryError> {
        let mut keys = tx.open_table(CAPSULE_KEYS).map_err(|e| self.err(e))?;
        let mut capsules = tx.open_table(CAPSULES).map_err(|e| self.err(e))?;
        let key = Capsule::key(&old.category, &old.part, old.skill);
        let existing = keys
            .get(key.as_str())
            .map_err(|e| self.err(e))?
            .map(|v| v.value());
        let (id, current) = match existing {
            Some(id) => {
                let c = capsules
                    .get(id)
                    .map_err(|e| self.err(e))?
                    .map(|v| decode::<Capsule>(v.value()))
                    .transpose()?;
                (id, c)
            }
            None => {
                let id = meta
                    .get("next_capsule")
                    .map_err(|e| self.err(e))?
                    .map_or(0, |v| v.value());
                meta.insert("next_capsule", id + 1)
                    .map_err(|e| self.err(e))?;
                keys.insert(key.as_str(), id).map_err(|e| self.err(e))?;
                (id, None)
            }
        };
        let capsule = Capsule::absorb(current, id, old, self.capsule_samples);
        capsules
            .insert(id, encode(&capsule)?.as_slice())
            .map_err(|e| self.err(e))?;
        Ok(id)
    }

    /// Episodes in M_tt, oldest first.
    pub fn episodes(&self) -> Result<Vec<Episode>, MemoryError> {
        self.read_all(EPISODES)
    }

    /// Experience capsules, in creation order.
    pub fn capsules(&self) -> Result<Vec<Capsule>, MemoryError> {
        self.read_all(CAPSULES)
    }

    fn read_all<T: serde::de::DeserializeOwned>(
        &self,
        table: TableDefinition<u64, &[u8]>,
    ) -> Result<Vec<T>, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let t = tx.open_table(table).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for item in t.iter().map_err(|e| self.err(e))? {
            let (_, v) = item.map_err(|e| self.err(e))?;
            out.push(decode(v.value())?);
        }
        Ok(out)
    }

    /// The `n` episodes and capsules most similar to `query` (cosine), best first; ties
    /// go to episodes, then to newer entries.
    pub fn retrieve(&self, query: &[f32], n: usize) -> Result<Vec<Recalled>, MemoryError> {
        if n == 0 {
            return Ok(Vec::new());
        }
        let mut hits: Vec<(f32, u8, u64, Recalled)> = Vec::new();
        for e in self.episodes()? {
            let s = cosine_similarity(query, &e.embedding);
            hits.push((
                s,
                1,
                e.id,
                Recalled::Episode {
                    similarity: s,
                    episode: e,
                },
            ));
        }
        for c in self.capsules()? {
            let s = cosine_similarity(query, &c.embedding);
            hits.push((
                s,
                0,
                c.last_episode,
                Recalled::Capsule {
                    similarity: s,
                    capsule: c,
                },
            ));
        }
        hits.sort_by(|a, b| b.0.total_cmp(&a.0).then(b.1.cmp(&a.1)).then(b.2.cmp(&a.2)));
        Ok(hits.into_iter().take(n).map(|h| h.3).collect())
    }

    pub fn stats(&self) -> Result<MemoryStats, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let len = |t: TableDefinition<u64, &[u8]>| -> Result<usize, MemoryError> {
            Ok(tx
                .open_table(t)
                .map_err(|e| self.err(e))?
                .len()
                .map_err(|e| self.err(e))? as usize)
        };
        let meta = tx.open_table(META).map_err(|e| self.err(e))?;
        let written = meta
            .get("next_episode")
            .map_err(|e| self.err(e))?
            .map_or(0, |v| v.value());
        Ok(MemoryStats {
            priors: len(PRIORS)?,
            episodes: len(EPISODES)?,
            capsules: len(CAPSULES)?,
            episodes_written: written,
        })
    }

    /// Removes every test-time entry (episodes, capsules and their keys) in one
    /// transaction; the curated common-sense bank stays. Returns (episodes, capsules)
    /// removed. Episode ids keep counting, so old ids are never reused.
    pub fn clear_test_time(&self) -> Result<(usize, usize), MemoryError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        let removed = {
            let mut episodes = tx.open_table(EPISODES).map_err(|e| self.err(e))?;
            let mut capsules = tx.open_table(CAPSULES).map_err(|e| self.err(e))?;
            let mut keys = tx.open_table(CAPSULE_KEYS).map_err(|e| self.err(e))?;
            let counts = (
                episodes.len().map_err(|e| self.err(e))? as usize,
                capsules.len().map_err(|e| self.err(e))? as usize,
            );
            episodes.retain(|_, _| false).map_err(|e| self.err(e))?;
            capsules.retain(|_, _| false).map_err(|e| self.err(e))?;
            keys.retain(|_, _| false).map_err(|e| self.err(e))?;
            counts
        };
        tx.commit().map_err(|e| self.err(e))?;
        Ok(removed)
    }

    /// Gives free pages back to the file system (redb's compaction). `true` if the file
    /// was compacted, `false` if there was nothing to do.
    pub fn compact(&mut self) -> Result<bool, MemoryError> {
        self.db.compact().map_err(|e| MemoryError::Database {
            file: self.path.display().to_string(),
            message: e.to_string(),
        })
    }

    /// Verifies every page checksum and B-tree (redb's integrity check; repairs what an
    /// interrupted commit left behind). `true`: no repair was needed.
    pub fn check_integrity(&mut self) -> Result<bool, MemoryError> {
        self.db
            .check_integrity()
            .map_err(|e| MemoryError::Database {
                file: self.path.display().to_string(),
                message: e.to_string(),
            })
    }
}

fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, MemoryError> {
    serde_json::to_vec(v).map_err(|e| MemoryError::Corrupt(format!("cannot encode: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, MemoryError> {
    serde_json::from_slice(bytes).map_err(|e| MemoryError::Corrupt(e.to_string()))
}
