//! `object_retrieval(query)` (SPEC §1.3): the top-k objects by cosine similarity between
//! the query's text embedding and the objects' features, each then shown to a VLM (its
//! best crops) that confirms or rejects it, so the number returned varies with no
//! similarity threshold to tune. Confirmed objects get keys such as `red_mug_0`, held by
//! an [`ObjectRegistry`] that maps keys to map ids for as long as the map is not rebuilt.

use std::collections::BTreeMap;
use std::sync::Arc;

use asp_config::sections::perception::RetrievalConfig;
use asp_core::ObjectKey;
use asp_core::map::{Object, ObjectId, ObjectMap};
use asp_core::models::{RetrievalVlm, TextEmbedder};
use serde::{Deserialize, Serialize};

use crate::PerceptionError;

/// The agent's names for map objects: a stable mapping key ↔ [`ObjectId`]. The agent
/// session owns one; when the map is rebuilt (ids change then) its keys are forgotten,
/// and the map service gives them back to the objects it finds where they were.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ObjectRegistry {
    by_key: BTreeMap<ObjectKey, ObjectId>,
    by_id: BTreeMap<ObjectId, ObjectKey>,
    /// Next counter per key stem (`red_mug` → 1 after `red_mug_0`).
    counters: BTreeMap<String, u32>,
}

impl ObjectRegistry {
    pub fn new() -> Self {
        Self::default()
    }

    /// The object a key names.
    pub fn resolve(&self, key: &ObjectKey) -> Option<ObjectId> {
        self.by_key.get(key).copied()
    }

    /// The object a key names, or an error naming the key.
    pub fn require(&self, key: &ObjectKey) -> Result<ObjectId, PerceptionError> {
        self.resolve(key)
            .ok_or_else(|| PerceptionError::UnknownObject(key.to_string()))
    }

    /// The key an object already has.
    pub fn key_of(&self, id: ObjectId) -> Option<&ObjectKey> {
        self.by_id.get(&id)
    }

    /// Every key with its object, in key order.
    pub fn entries(&self) -> impl Iterator<Item = (&ObjectKey, ObjectId)> {
        self.by_key.iter().map(|(k, v)| (k, *v))
    }

    pub fn len(&self) -> usize {
        self.by_key.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_key.is_empty()
    }

    /// The key of `id`: its existing key if it has one (an object keeps its first name,
    /// whatever later query finds it again), else a new `stem_N` from `query`.
    pub fn register(&mut self, query: &str, id: ObjectId) -> ObjectKey {
        if let Some(k) = self.by_id.get(&id) {
            return k.clone();
        }
        let probe = ObjectKey::from_query(query, 0);
        let stem = probe
            .as_str()
            .strip_suffix("_0")
            .unwrap_or(probe.as_str())
            .to_owned();
        let counter = self.counters.entry(stem).or_insert(0);
        let mut key = ObjectKey::from_query(query, *counter);
        *counter += 1;
        while self.by_key.contains_key(&key) {
            key = ObjectKey::from_query(query, *counter);
            *counter += 1;
        }
        self.by_key.insert(key.clone(), id);
        self.by_id.insert(id, key.clone());
        key
    }

    /// Gives `id` the key `key` (a key kept across a rebuild), replacing what either
    /// named before.
    pub fn insert(&mut self, key: ObjectKey, id: ObjectId) {
        if let Some(old) = self.by_key.insert(key.clone(), id) {
            self.by_id.remove(&old);
        }
        if let Some(old) = self.by_id.insert(id, key.clone())
            && old != key
        {
            self.by_key.remove(&old);
        }
    }

    /// Forgets `key` (its object keeps no name); the counters go on, so the key is not
    /// given again.
    pub fn remove(&mut self, key: &ObjectKey) -> Option<ObjectId> {
        let id = self.by_key.remove(key)?;
        self.by_id.remove(&id);
        Some(id)
    }

    /// Forgets every key; counters restart.
    pub fn clear(&mut self) {
        *self = Self::default();
    }

    /// Forgets every key (the map was rebuilt, ids changed) but keeps counting: a new
    /// object never takes a key an earlier one had, so an old key cannot silently name
    /// another object.
    pub fn forget_keys(&mut self) {
        self.by_key.clear();
        self.by_id.clear();
    }

    /// Drops keys whose object is no longer in `map` (merged away); returns them.
    pub fn retain_existing(&mut self, map: &ObjectMap) -> Vec<ObjectKey> {
        let gone: Vec<ObjectKey> = self
            .by_key
            .iter()
            .filter(|(_, id)| map.get(**id).is_none())
            .map(|(k, _)| k.clone())
            .collect();
        for k in &gone {
            if let Some(id) = self.by_key.remove(k) {
                self.by_id.remove(&id);
            }
        }
        gone
    }
}

/// One ranked candidate of a retrieval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub id: ObjectId,
    /// Cosine similarity of the query and the object's features.
    pub similarity: f32,
    /// The VLM's answer (true when confirmation is off).
    pub confirmed: bool,
    /// The key given to a confirmed candidate.
    pub key: Option<ObjectKey>,
}

/// The result of `object_retrieval`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Retrieval {
    pub query: String,
    /// Keys of the confirmed objects, best similarity first.
    pub keys: Vec<ObjectKey>,
    /// Every top-k candidate and the VLM's answer about it.
    pub candidates: Vec<Candidate>,
    /// For a request that named a room: whether the room was kept to, and as what
    /// ("kept to the office: where the building memory saw a stapler, a wooden desk"),
    /// or why not. The agent reads it with the keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub room: Option<String>,
    /// For a request that named a storey relative to the robot's ("upstairs"): the
    /// storey (0: the ground floor) it was counted from, for the rest of the goal to
    /// count from the same one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storeys_counted_from: Option<u32>,
}

/// What a retrieval asks: the text candidates are ranked by, the question each is
/// confirmed with, and the name confirmed objects are keyed after. A plain query is all
/// three.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask<'a> {
    pub rank: &'a str,
    pub confirm: &'a str,
    pub key: &'a str,
}

impl<'a> Ask<'a> {
    pub fn plain(query: &'a str) -> Self {
        Self {
            rank: query,
            confirm: query,
            key: query,
        }
    }
}

/// Runs `object_retrieval` over a map.
#[derive(Clone)]
pub struct ObjectRetriever {
    text: Arc<dyn TextEmbedder>,
    vlm: Option<Arc<dyn RetrievalVlm>>,
    config: RetrievalConfig,
}

impl std::fmt::Debug for ObjectRetriever {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ObjectRetriever")
            .field("config", &self.config)
            .field("vlm", &self.vlm.is_some())
            .finish()
    }
}

impl ObjectRetriever {
    /// `vlm` may be `None` only with `confirm_with_vlm: false`.
    pub fn new(
        text: Arc<dyn TextEmbedder>,
        vlm: Option<Arc<dyn RetrievalVlm>>,
        config: RetrievalConfig,
    ) -> Result<Self, PerceptionError> {
        if config.confirm_with_vlm && vlm.is_none() {
            return Err(PerceptionError::config(
                "object_map_node.retrieval.confirm_with_vlm",
                "is true but no retrieval VLM was given",
            ));
        }
        Ok(Self { text, vlm, config })
    }

    pub fn config(&self) -> &RetrievalConfig {
        &self.config
    }

    /// Top-k by similarity, VLM confirmation of each from its best crops, keys for the
    /// confirmed ones (registered in `registry`).
    pub async fn retrieve(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        query: &str,
    ) -> Result<Retrieval, PerceptionError> {
        self.retrieve_where(map, registry, query, |_| true).await
    }

    /// [`Self::retrieve`] among the objects `eligible` admits: the top-k are ranked among
    /// them (an object a closer look said is not `query` leaves its place to the next).
    pub async fn retrieve_where(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        query: &str,
        eligible: impl Fn(&Object) -> bool,
    ) -> Result<Retrieval, PerceptionError> {
        self.retrieve_in(map, registry, query, eligible, None).await
    }

    /// [`Self::retrieve_where`] judged by the views from keyframe `first` on (a closer
    /// look): only objects those views saw are candidates, and the VLM is asked about
    /// their crops from those views alone, so what an earlier view showed (and the
    /// answer the VLM gave about it) cannot confirm the object again.
    pub async fn retrieve_seen_since(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        query: &str,
        eligible: impl Fn(&Object) -> bool,
        first: u32,
    ) -> Result<Retrieval, PerceptionError> {
        self.retrieve_in(map, registry, query, eligible, Some(first))
            .await
    }

    /// [`Self::retrieve_where`] with the three uses of a query apart (a grounded word,
    /// SPEC §4.2): the candidates ranked by `ask.rank`, each confirmed as `ask.confirm`,
    /// and the confirmed ones keyed after `ask.key`.
    pub async fn retrieve_asking(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        ask: Ask<'_>,
        eligible: impl Fn(&Object) -> bool,
    ) -> Result<Retrieval, PerceptionError> {
        self.retrieve_asked(map, registry, ask, eligible, None)
            .await
    }

    async fn retrieve_in(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        query: &str,
        eligible: impl Fn(&Object) -> bool,
        since: Option<u32>,
    ) -> Result<Retrieval, PerceptionError> {
        self.retrieve_asked(map, registry, Ask::plain(query), eligible, since)
            .await
    }

    async fn retrieve_asked(
        &self,
        map: &ObjectMap,
        registry: &mut ObjectRegistry,
        ask: Ask<'_>,
        eligible: impl Fn(&Object) -> bool,
        since: Option<u32>,
    ) -> Result<Retrieval, PerceptionError> {
        let query = ask.confirm;
        let seen = |o: &Object| since.is_none_or(|f| o.crops.iter().any(|c| c.keyframe >= f));
        let eligible = |o: &Object| seen(o) && eligible(o);
        let q = self.text.embed_text(ask.rank)?;
        let ranked: Vec<(ObjectId, f32)> = map
            .top_k_by_similarity(&q, map.len())
            .into_iter()
            .filter(|(id, _)| map.get(*id).is_some_and(&eligible))
            .take(self.config.top_k)
            .collect();
        let mut candidates = Vec::with_capacity(ranked.len());
        let mut keys = Vec::new();
        for (id, similarity) in ranked {
            let object = map
                .get(id)
                .ok_or_else(|| PerceptionError::UnknownObject(id.to_string()))?;
            let confirmed = match since {
                None => self.confirm_scored(object, query, similarity).await?,
                Some(first) => {
                    let mut recent = object.clone();
                    recent.crops.retain(|c| c.keyframe >= first);
                    self.confirm_scored(&recent, query, similarity).await?
                }
            };
            tracing::debug!(
                query,
                %id,
                similarity,
                confirmed,
                centroid = ?object.point_cloud.centroid(),
                "retrieval candidate"
            );
            let key = confirmed.then(|| registry.register(ask.key, id));
            if let Some(k) = &key {
                keys.push(k.clone());
            }
            candidates.push(Candidate {
                id,
                similarity,
                confirmed,
                key,
            });
        }
        tracing::debug!(
            query,
            rank = ask.rank,
            found = keys.len(),
            "object retrieval"
        );
        Ok(Retrieval {
            query: query.to_owned(),
            keys,
            candidates,
            room: None,
            storeys_counted_from: None,
        })
    }

    /// Whether the VLM takes `object` for `query`: the majority of up to
    /// `confirm_votes` questions, each on another set of its crops (always true when
    /// confirmation is off). A weak match (its features' similarity to the query below
    /// `weak_similarity`) needs a majority of all `confirm_votes`: with fewer crop sets
    /// than that, more yes than no is not enough.
    pub async fn confirm(&self, object: &Object, query: &str) -> Result<bool, PerceptionError> {
        let q = self.text.embed_text(query)?;
        let similarity = asp_core::map::cosine_similarity(&object.features, &q);
        self.confirm_scored(object, query, similarity).await
    }

    /// [`Self::confirm`] with the object's similarity to the query already known.
    async fn confirm_scored(
        &self,
        object: &Object,
        query: &str,
        similarity: f32,
    ) -> Result<bool, PerceptionError> {
        let Some(vlm) = self.vlm.as_ref().filter(|_| self.config.confirm_with_vlm) else {
            return Ok(true);
        };
        let votes = self.config.confirm_votes.max(1);
        let need = votes / 2 + 1;
        let (mut yes, mut no) = (0, 0);
        for set in view_sets(object.crops.len(), self.config.crops_per_candidate)
            .into_iter()
            .take(votes)
        {
            let views: Vec<_> = set
                .iter()
                .map(|&i| object.crops[i].centred_observation())
                .collect();
            if vlm.confirm(query, &views).await? {
                yes += 1;
            } else {
                no += 1;
            }
            if yes >= need || no >= need {
                break;
            }
        }
        if similarity < self.config.weak_similarity {
            return Ok(yes >= need);
        }
        Ok(yes > no)
    }
}

/// The crop sets a candidate is asked about, best first: the best `per_set` crops, then
/// sets that each leave out another of them (or bring in the next crop), every set
/// distinct. One set when there is one crop; none without crops.
fn view_sets(crops: usize, per_set: usize) -> Vec<Vec<usize>> {
    let per_set = per_set.clamp(1, crops.max(1));
    let mut sets: Vec<Vec<usize>> = Vec::new();
    if crops == 0 {
        return sets;
    }
    let first: Vec<usize> = (0..per_set).collect();
    sets.push(first.clone());
    // the next crops in turn take the place of each of the first set's
    for extra in per_set..crops {
        for out in (0..per_set).rev() {
            let mut s = first.clone();
            s[out] = extra;
            s.sort_unstable();
            if !sets.contains(&s) {
                sets.push(s);
            }
        }
    }
    // then the first set's crops alone, and without each other
    for i in 0..per_set {
        let s = vec![i];
        if !sets.contains(&s) {
            sets.push(s);
        }
    }
    sets
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn candidates_are_asked_about_distinct_crop_sets_best_first() {
        assert_eq!(view_sets(0, 2), Vec::<Vec<usize>>::new());
        assert_eq!(view_sets(1, 2), vec![vec![0]]);
        assert_eq!(view_sets(2, 2), vec![vec![0, 1], vec![0], vec![1]]);
        let sets = view_sets(4, 2);
        assert_eq!(sets[0], vec![0, 1]);
        assert_eq!(sets[1], vec![0, 2]);
        assert_eq!(sets[2], vec![1, 2]);
        let mut dedup = sets.clone();
        dedup.sort();
        dedup.dedup();
        assert_eq!(dedup.len(), sets.len(), "{sets:?}");
    }

    #[test]
    fn keys_count_up_per_stem_and_objects_keep_their_first_key() {
        let mut r = ObjectRegistry::new();
        let a = r.register("red mug", ObjectId(7));
        let b = r.register("Red mug!", ObjectId(9));
        assert_eq!((a.as_str(), b.as_str()), ("red_mug_0", "red_mug_1"));
        // found again by another query: same key
        assert_eq!(r.register("mug", ObjectId(7)).as_str(), "red_mug_0");
        assert_eq!(r.register("mug", ObjectId(3)).as_str(), "mug_0");
        assert_eq!(r.resolve(&a), Some(ObjectId(7)));
        assert_eq!(r.key_of(ObjectId(9)), Some(&b));
        assert!(r.require(&ObjectKey::new("bowl_0").unwrap()).is_err());
        let mut map = ObjectMap::new("map");
        assert_eq!(r.retain_existing(&map).len(), 3);
        assert!(r.is_empty());
        let _ = map.allocate_id();
        r.clear();
        assert_eq!(r.register("red mug", ObjectId(1)).as_str(), "red_mug_0");
    }
}
