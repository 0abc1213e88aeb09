//! The concept memory (SPEC §4.2): what unknown words were grounded to — the vision
//! memory (five keywords per word) and the replacement memory (the known word that
//! stood in for it and found something) — on its own redb file, which also holds the
//! web search cache ([`ConceptMemory::database`]), so one file is what the robot learnt
//! about words it did not know.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use asp_core::models::{ConceptKeywords, ConceptStore, Grounding};
// "Moka  Pot" and "moka pot" are one word
use asp_core::web::phrase_key;
use redb::{Database, ReadableDatabase, TableDefinition};
use serde::{Deserialize, Serialize};

use crate::{MemoryError, check_version, open_locked, release_owner};

const META: TableDefinition<&str, u64> = TableDefinition::new("concept_meta");
/// Word → [`KeywordsEntry`] as JSON.
const KEYWORDS: TableDefinition<&str, &[u8]> = TableDefinition::new("concept_keywords");
/// Word → the known word that replaced it.
const REPLACEMENTS: TableDefinition<&str, &str> = TableDefinition::new("concept_replacements");

const SCHEMA_VERSION: u64 = 1;

#[derive(Debug, Serialize, Deserialize)]
struct KeywordsEntry {
    keywords: ConceptKeywords,
    sources: Vec<String>,
}

/// Groundings of unknown words on one redb file.
#[derive(Debug)]
pub struct ConceptMemory {
    db: Arc<Database>,
    path: PathBuf,
}

impl Drop for ConceptMemory {
    fn drop(&mut self) {
        release_owner(&self.path);
    }
}

impl ConceptMemory {
    /// Opens (or creates) the file at `path`; one written by another schema is an error
    /// naming both versions, one held by another process an error naming it.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let db = Arc::new(open_locked(&path)?);
        let mem = Self { db, path };
        mem.initialise()?;
        Ok(mem)
    }

    /// The memory at `path` as this process has it open: the same handle for every
    /// caller while one holds it (nodes of one process, a graph started while the last
    /// one's tasks are still winding down), else [`Self::open`]. Another process holding
    /// the file is still an error naming it.
    pub fn open_shared(path: impl AsRef<Path>) -> Result<Arc<Self>, MemoryError> {
        use std::collections::HashMap;
        use std::sync::{Mutex, OnceLock, Weak};
        static OPEN: OnceLock<Mutex<HashMap<PathBuf, Weak<ConceptMemory>>>> = OnceLock::new();
        let path = path.as_ref().to_path_buf();
        let key = std::path::absolute(&path).unwrap_or_else(|_| path.clone());
        let mut open = OPEN
            .get_or_init(Default::default)
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        open.retain(|_, w| w.strong_count() > 0);
        if let Some(mem) = open.get(&key).and_then(Weak::upgrade) {
            return Ok(mem);
        }
        let mem = Arc::new(Self::open(&path)?);
        open.insert(key, Arc::downgrade(&mem));
        Ok(mem)
    }

    fn err(&self, e: impl std::fmt::Display) -> MemoryError {
        MemoryError::Database {
            file: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn initialise(&self) -> Result<(), MemoryError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut meta = tx.open_table(META).map_err(|e| self.err(e))?;
            check_version(&mut meta, "schema", &self.path, SCHEMA_VERSION)?;
            tx.open_table(KEYWORDS).map_err(|e| self.err(e))?;
            tx.open_table(REPLACEMENTS).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The file's database, for the web search cache's table.
    pub fn database(&self) -> Arc<Database> {
        Arc::clone(&self.db)
    }

    /// Words grounded so far (with keywords).
    pub fn len(&self) -> Result<usize, MemoryError> {
        use redb::ReadableTableMetadata;
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let t = tx.open_table(KEYWORDS).map_err(|e| self.err(e))?;
        Ok(t.len().map_err(|e| self.err(e))? as usize)
    }

    pub fn is_empty(&self) -> Result<bool, MemoryError> {
        Ok(self.len()? == 0)
    }

    fn recall_key(&self, key: &str) -> Result<Option<Grounding>, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let keywords = tx.open_table(KEYWORDS).map_err(|e| self.err(e))?;
        let Some(bytes) = keywords.get(key).map_err(|e| self.err(e))? else {
            return Ok(None);
        };
        let entry: KeywordsEntry = serde_json::from_slice(bytes.value())
            .map_err(|e| MemoryError::Corrupt(format!("concept {key:?}: {e}")))?;
        let replacements = tx.open_table(REPLACEMENTS).map_err(|e| self.err(e))?;
        let replacement = replacements
            .get(key)
            .map_err(|e| self.err(e))?
            .map(|v| v.value().to_owned());
        Ok(Some(Grounding {
            keywords: entry.keywords,
            replacement,
            sources: entry.sources,
        }))
    }

    fn write(
        &self,
        f: impl FnOnce(&redb::WriteTransaction) -> Result<(), redb::Error>,
    ) -> Result<(), MemoryError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        f(&tx).map_err(|e| self.err(e))?;
        tx.commit().map_err(|e| self.err(e))
    }
}

impl ConceptStore for ConceptMemory {
    fn recall(&self, word: &str) -> Result<Option<Grounding>, String> {
        self.recall_key(&phrase_key(word))
            .map_err(|e| e.to_string())
    }

    fn remember_keywords(
        &self,
        word: &str,
        keywords: &ConceptKeywords,
        sources: &[String],
    ) -> Result<(), String> {
        let key = phrase_key(word);
        if key.is_empty() {
            return Err("a concept needs a word".into());
        }
        let entry = serde_json::to_vec(&KeywordsEntry {
            keywords: keywords.clone(),
            sources: sources.to_vec(),
        })
        .map_err(|e| e.to_string())?;
        self.write(|tx| {
            let mut t = tx.open_table(KEYWORDS)?;
            t.insert(key.as_str(), entry.as_slice())?;
            Ok(())
        })
        .map_err(|e| e.to_string())
    }

    fn remember_replacement(&self, word: &str, replacement: &str) -> Result<(), String> {
        let key = phrase_key(word);
        let replacement = replacement.trim();
        if key.is_empty() || replacement.is_empty() {
            return Err(format!(
                "a replacement needs a word and a known word, got {word:?} → {replacement:?}"
            ));
        }
        self.write(|tx| {
            let mut t = tx.open_table(REPLACEMENTS)?;
            t.insert(key.as_str(), replacement)?;
            Ok(())
        })
        .map_err(|e| e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn moka() -> ConceptKeywords {
        ConceptKeywords {
            colour: "silver".into(),
            shape: "eight-sided jug".into(),
            material: "aluminium".into(),
            size: "small".into(),
            function: "brews coffee on a stove".into(),
        }
    }

    #[test]
    fn groundings_outlive_the_process_and_only_kept_replacements_come_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("concepts.redb");
        {
            let m = ConceptMemory::open(&path).unwrap();
            assert!(m.is_empty().unwrap());
            assert_eq!(m.recall("moka pot").unwrap(), None);
            m.remember_keywords("Moka  Pot", &moka(), &["https://e.org/moka".into()])
                .unwrap();
            let g = m.recall("moka pot").unwrap().unwrap();
            assert_eq!(g.keywords, moka());
            assert_eq!(g.replacement, None, "no replacement kept yet");
            m.remember_replacement("moka pot", "kettle").unwrap();
            assert!(m.remember_replacement("moka pot", " ").is_err());
        }
        let m = ConceptMemory::open(&path).unwrap();
        let g = m.recall("MOKA pot").unwrap().unwrap();
        assert_eq!(g.replacement.as_deref(), Some("kettle"));
        assert_eq!(g.sources, ["https://e.org/moka"]);
        assert_eq!(m.len().unwrap(), 1);
    }

    #[test]
    fn a_second_opener_is_told_who_holds_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("concepts.redb");
        let _held = ConceptMemory::open(&path).unwrap();
        let e = ConceptMemory::open(&path).unwrap_err();
        assert!(matches!(e, MemoryError::Held { .. }), "{e}");
        assert!(e.to_string().contains("pid"), "{e}");
    }

    #[test]
    fn openers_in_one_process_share_the_handle_until_the_last_drops_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("concepts.redb");
        let a = ConceptMemory::open_shared(&path).unwrap();
        let b = ConceptMemory::open_shared(&path).unwrap();
        assert!(Arc::ptr_eq(&a, &b));
        let k = ConceptKeywords {
            colour: "silver".into(),
            shape: "jug".into(),
            material: "aluminium".into(),
            size: "small".into(),
            function: "brews coffee".into(),
        };
        a.remember_keywords("moka pot", &k, &[]).unwrap();
        assert!(b.recall("moka pot").unwrap().is_some());
        // a plain open while shared is refused as before; after the last drop, a fresh one
        assert!(matches!(
            ConceptMemory::open(&path).unwrap_err(),
            MemoryError::Held { .. }
        ));
        drop((a, b));
        let c = ConceptMemory::open_shared(&path).unwrap();
        assert!(c.recall("moka pot").unwrap().is_some());
    }

    #[test]
    fn a_file_of_another_schema_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("concepts.redb");
        {
            let db = Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            tx.open_table(META).unwrap().insert("schema", 99).unwrap();
            tx.commit().unwrap();
        }
        let e = ConceptMemory::open(&path).unwrap_err();
        assert!(matches!(e, MemoryError::Schema { found: 99, .. }), "{e}");
    }
}
