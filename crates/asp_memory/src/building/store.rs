//! The building memory on disk: one redb file per site holding the views (the source
//! of truth) and the levels built over them. New views and the levels rebuilt over all
//! views commit in one transaction, so a failed build or a killed process leaves the
//! previous memory whole. A file of another site or format is refused by name.

use std::path::{Path, PathBuf};

use asp_core::models::TextEmbedder;
use redb::{Database, ReadableDatabase, ReadableTable, TableDefinition};

use super::{ClusterParams, Hierarchy, Summariser, View};
use crate::{MemoryError, open_locked, release_owner};

/// Format of the building memory's tables; a file of another format is refused.
pub const BUILDING_FORMAT: u64 = 1;

const META: TableDefinition<&str, u64> = TableDefinition::new("building_meta");
const SITE: TableDefinition<&str, &str> = TableDefinition::new("building_site");
const VIEWS: TableDefinition<u64, &[u8]> = TableDefinition::new("building_views");
const LEVELS: TableDefinition<u64, &[u8]> = TableDefinition::new("building_levels");

/// A site's building memory, loaded.
#[derive(Debug)]
pub struct BuildingMemory {
    db: Database,
    path: PathBuf,
    site: String,
    hierarchy: Hierarchy,
}

impl Drop for BuildingMemory {
    fn drop(&mut self) {
        release_owner(&self.path);
    }
}

impl BuildingMemory {
    /// Opens (or creates) the memory of `site` at `path`.
    pub fn open(path: impl AsRef<Path>, site: &str) -> Result<Self, MemoryError> {
        let path = path.as_ref().to_path_buf();
        let db = open_locked(&path)?;
        let mut memory = BuildingMemory {
            db,
            path,
            site: site.to_owned(),
            hierarchy: Hierarchy::default(),
        };
        memory.initialise()?;
        memory.hierarchy = memory.load()?;
        Ok(memory)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn site(&self) -> &str {
        &self.site
    }

    pub fn hierarchy(&self) -> &Hierarchy {
        &self.hierarchy
    }

    fn err(&self, e: impl std::fmt::Display) -> MemoryError {
        MemoryError::Database {
            file: self.path.display().to_string(),
            message: e.to_string(),
        }
    }

    fn initialise(&self) -> Result<(), MemoryError> {
        let file = self.path.display().to_string();
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut meta = tx.open_table(META).map_err(|e| self.err(e))?;
            crate::check_version(&mut meta, "format", &self.path, BUILDING_FORMAT)?;
            let mut site = tx.open_table(SITE).map_err(|e| self.err(e))?;
            let found = site
                .get("site")
                .map_err(|e| self.err(e))?
                .map(|v| v.value().to_owned());
            match found {
                Some(found) if found != self.site => {
                    return Err(MemoryError::OtherSite {
                        file,
                        found,
                        expected: self.site.clone(),
                    });
                }
                Some(_) => {}
                None => {
                    site.insert("site", self.site.as_str())
                        .map_err(|e| self.err(e))?;
                }
            }
            tx.open_table(VIEWS).map_err(|e| self.err(e))?;
            tx.open_table(LEVELS).map_err(|e| self.err(e))?;
        }
        tx.commit().map_err(|e| self.err(e))
    }

    fn load(&self) -> Result<Hierarchy, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let views_table = tx.open_table(VIEWS).map_err(|e| self.err(e))?;
        let mut views = Vec::new();
        for entry in views_table.iter().map_err(|e| self.err(e))? {
            let (_, bytes) = entry.map_err(|e| self.err(e))?;
            views.push(decode::<View>(bytes.value())?);
        }
        let levels_table = tx.open_table(LEVELS).map_err(|e| self.err(e))?;
        let mut levels = Vec::new();
        for entry in levels_table.iter().map_err(|e| self.err(e))? {
            let (_, bytes) = entry.map_err(|e| self.err(e))?;
            levels.push(decode(bytes.value())?);
        }
        let hierarchy = Hierarchy { views, levels };
        check_links(&hierarchy).map_err(|problem| {
            MemoryError::Corrupt(format!("{}: {problem}", self.path.display()))
        })?;
        Ok(hierarchy)
    }

    /// Adds `views` and rebuilds the levels over all views; both commit together or
    /// not at all. Returns the new hierarchy.
    pub fn add_views(
        &mut self,
        views: Vec<View>,
        params: &ClusterParams,
        summariser: &dyn Summariser,
        embedder: &dyn TextEmbedder,
    ) -> Result<&Hierarchy, MemoryError> {
        let first_new = self.hierarchy.views.len();
        let mut all = self.hierarchy.views.clone();
        all.extend(views);
        let built = Hierarchy::build(all, params, summariser, embedder).map_err(|source| {
            MemoryError::Build {
                file: self.path.display().to_string(),
                source,
            }
        })?;
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut table = tx.open_table(VIEWS).map_err(|e| self.err(e))?;
            for (i, v) in built.views.iter().enumerate().skip(first_new) {
                table
                    .insert(i as u64, encode(v)?.as_slice())
                    .map_err(|e| self.err(e))?;
            }
            let mut levels = tx.open_table(LEVELS).map_err(|e| self.err(e))?;
            levels.retain(|_, _| false).map_err(|e| self.err(e))?;
            for (i, l) in built.levels.iter().enumerate() {
                levels
                    .insert(i as u64, encode(l)?.as_slice())
                    .map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        self.hierarchy = built;
        // the rewritten levels leave the old pages free: give them back to the file.
        // The memory is committed either way; a file left larger is no failure.
        if let Err(e) = self.db.compact() {
            tracing::warn!(file = %self.path.display(), "building memory not compacted: {e}");
        }
        Ok(&self.hierarchy)
    }
}

/// Views and levels are stored with postcard: exact floats (JSON re-parses f64 to the
/// nearest-but-one at times) and a quarter of JSON's size for embeddings.
fn encode<T: serde::Serialize>(v: &T) -> Result<Vec<u8>, MemoryError> {
    postcard::to_stdvec(v).map_err(|e| MemoryError::Corrupt(format!("cannot encode: {e}")))
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T, MemoryError> {
    postcard::from_bytes(bytes).map_err(|e| MemoryError::Corrupt(e.to_string()))
}

/// Every child index points into the level below.
fn check_links(h: &Hierarchy) -> Result<(), String> {
    for (l, level) in h.levels.iter().enumerate() {
        let below = if l == 0 {
            h.views.len()
        } else {
            h.levels[l - 1].len()
        };
        if let Some(bad) = level
            .iter()
            .flat_map(|c| c.children.iter())
            .find(|&&c| c as usize >= below)
        {
            return Err(format!("level {} names child {bad} of {below}", l + 4));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_memory_of_another_format_is_refused_naming_both() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("building.redb");
        {
            let db = Database::create(&path).unwrap();
            let tx = db.begin_write().unwrap();
            tx.open_table(META)
                .unwrap()
                .insert("format", BUILDING_FORMAT + 1)
                .unwrap();
            tx.commit().unwrap();
        }
        let e = BuildingMemory::open(&path, "house").unwrap_err();
        assert!(
            matches!(e, MemoryError::Schema { found, expected, .. } if found == BUILDING_FORMAT + 1 && expected == BUILDING_FORMAT),
            "{e}"
        );
        // and a fresh file takes this build's format
        let fresh = dir.path().join("fresh.redb");
        drop(BuildingMemory::open(&fresh, "house").unwrap());
        assert!(BuildingMemory::open(&fresh, "house").is_ok());
    }
}
