//! The building memory on disk: one redb file per site holding the views (the source
//! of truth) and the levels built over them. New views and the levels rebuilt over all
//! views commit in one transaction, so a failed build or a killed process leaves the
//! previous memory whole. A file of another site or format is refused by name. Places
//! found empty since the tour ([`Vacated`]) are kept beside the views, so that the
//! memory is of what the robot last saw, not of the tour's day.

use std::path::{Path, PathBuf};

use asp_core::models::TextEmbedder;
use redb::{Database, ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};

use super::{ClusterParams, Hierarchy, Summariser, Vacated, View};
use crate::{MemoryError, open_locked, release_owner};

/// Format of the building memory's tables; a file of another format is refused.
pub const BUILDING_FORMAT: u64 = 1;

const META: TableDefinition<&str, u64> = TableDefinition::new("building_meta");
const SITE: TableDefinition<&str, &str> = TableDefinition::new("building_site");
const VIEWS: TableDefinition<u64, &[u8]> = TableDefinition::new("building_views");
const LEVELS: TableDefinition<u64, &[u8]> = TableDefinition::new("building_levels");
/// Places found empty, oldest first (a table files of the first layout lack: created
/// when opened, so that their format stays).
const VACATED: TableDefinition<u64, &[u8]> = TableDefinition::new("building_vacated");

/// The most places found empty kept; the oldest go first.
pub const MAX_VACATED: usize = 256;

/// A site's building memory, loaded.
#[derive(Debug)]
pub struct BuildingMemory {
    db: Database,
    path: PathBuf,
    site: String,
    hierarchy: Hierarchy,
    vacated: Vec<Vacated>,
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
            vacated: Vec::new(),
        };
        memory.initialise()?;
        memory.hierarchy = memory.load()?;
        memory.vacated = memory.load_vacated()?;
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

    /// The frame the views' poses are in (`None`: the storey's map, as memories of one
    /// storey are; a building's frame keeps storeys apart).
    pub fn frame(&self) -> Result<Option<String>, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let site = tx.open_table(SITE).map_err(|e| self.err(e))?;
        Ok(site
            .get("frame")
            .map_err(|e| self.err(e))?
            .map(|v| v.value().to_owned()))
    }

    /// Says which frame the views are in: the first call keeps it (for memories of one
    /// storey `map`, else a building's frame); views of another frame are refused,
    /// naming both, since they could not be compared with those kept.
    pub fn set_frame(&mut self, frame: &str) -> Result<(), MemoryError> {
        let kept = self.frame()?;
        match kept.as_deref() {
            Some(k) if k == frame => Ok(()),
            Some(k) => Err(MemoryError::Corrupt(format!(
                "{}: its views are in frame {k:?}; these are in {frame:?} (record the tour with the same TF, or build another memory)",
                self.path.display()
            ))),
            // a memory of views in `map` made before frames were kept is of `map`
            None if frame != "map" && !self.hierarchy.views.is_empty() => {
                Err(MemoryError::Corrupt(format!(
                    "{}: its views are in the storey's map; these are in {frame:?} (build another memory)",
                    self.path.display()
                )))
            }
            None => {
                let tx = self.db.begin_write().map_err(|e| self.err(e))?;
                tx.open_table(SITE)
                    .map_err(|e| self.err(e))?
                    .insert("frame", frame)
                    .map_err(|e| self.err(e))?;
                tx.commit().map_err(|e| self.err(e))
            }
        }
    }

    /// The places found empty since the views were recorded, oldest first.
    pub fn vacated(&self) -> &[Vacated] {
        &self.vacated
    }

    /// Keeps `mark`: recall passes over what it says is gone from now on, in this
    /// process and the next. The oldest marks beyond [`MAX_VACATED`] are forgotten.
    pub fn mark_vacated(&mut self, mark: Vacated) -> Result<(), MemoryError> {
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            let mut table = tx.open_table(VACATED).map_err(|e| self.err(e))?;
            let next = table
                .last()
                .map_err(|e| self.err(e))?
                .map_or(0, |(k, _)| k.value() + 1);
            table
                .insert(next, encode(&mark)?.as_slice())
                .map_err(|e| self.err(e))?;
            let kept = table.len().map_err(|e| self.err(e))? as usize;
            for _ in MAX_VACATED..kept {
                table.pop_first().map_err(|e| self.err(e))?;
            }
        }
        tx.commit().map_err(|e| self.err(e))?;
        self.vacated.push(mark);
        let over = self.vacated.len().saturating_sub(MAX_VACATED);
        self.vacated.drain(..over);
        Ok(())
    }

    fn load_vacated(&self) -> Result<Vec<Vacated>, MemoryError> {
        let tx = self.db.begin_read().map_err(|e| self.err(e))?;
        let table = tx.open_table(VACATED).map_err(|e| self.err(e))?;
        let mut out = Vec::new();
        for entry in table.iter().map_err(|e| self.err(e))? {
            let (_, bytes) = entry.map_err(|e| self.err(e))?;
            out.push(decode(bytes.value())?);
        }
        Ok(out)
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
            tx.open_table(VACATED).map_err(|e| self.err(e))?;
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
    /// not at all. A place found empty that a new view sees an object like the request
    /// at again is no longer passed over. Returns the new hierarchy.
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
        let seen_again = |mark: &Vacated| {
            built.views[first_new..].iter().any(|v| {
                v.instances.iter().any(|i| {
                    i.position
                        .is_some_and(|at| mark.passes_over(&at, &i.embedding))
                })
            })
        };
        let kept: Vec<Vacated> = self
            .vacated
            .iter()
            .filter(|m| !seen_again(m))
            .cloned()
            .collect();
        let tx = self.db.begin_write().map_err(|e| self.err(e))?;
        {
            if kept.len() != self.vacated.len() {
                let mut table = tx.open_table(VACATED).map_err(|e| self.err(e))?;
                table.retain(|_, _| false).map_err(|e| self.err(e))?;
                for (i, m) in kept.iter().enumerate() {
                    table
                        .insert(i as u64, encode(m)?.as_slice())
                        .map_err(|e| self.err(e))?;
                }
            }
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
        self.vacated = kept;
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
