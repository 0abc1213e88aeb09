//! Pluggable complementary evidence producers (SPEC §2.1): interaction imagination and web
//! search. Either may be absent; the router then treats its action as infeasible.

use asp_core::models::{ModelError, Observation};
use asp_core::{Box2, Skill};
use asp_memory::CommonSensePrior;
use async_trait::async_trait;

/// Where an imagined interaction would happen, in the view's pixels.
#[derive(Debug, Clone, PartialEq)]
pub struct ImaginedRegion {
    pub bbox: Box2,
    /// Self-confidence in `[0, 1]`.
    pub confidence: f32,
    pub note: String,
}

/// What imagination is asked.
#[derive(Debug, Clone, Copy)]
pub struct ImaginationRequest<'a> {
    /// The object as the agent named it ("red mug").
    pub object: &'a str,
    pub part: &'a str,
    pub skill: Skill,
    pub view: &'a Observation,
    /// The object's box in the view.
    pub object_box: Box2,
}

/// Interaction imagination: where on a familiar object the interaction happens.
#[async_trait]
pub trait Imagination: Send + Sync {
    /// Whether the object/part is familiar (imagination applies).
    fn is_familiar(&self, object: &str, part: &str) -> bool;
    async fn imagine(
        &self,
        request: &ImaginationRequest<'_>,
    ) -> Result<Option<ImaginedRegion>, ModelError>;
}

/// Web search for an unknown word (VLA² §4.2): concrete keywords (colour, shape,
/// material, size, function) to re-detect with. No implementation ships: it needs a
/// search API and network access the robot may not have.
#[async_trait]
pub trait WebSearch: Send + Sync {
    async fn keywords(&self, part: &str, object: &str) -> Result<Vec<String>, ModelError>;
}

/// Imagination from the common-sense bank: the prior's relative box mapped into the
/// object's box, with the prior's confidence. Familiar = a prior matches.
#[derive(Debug, Clone)]
pub struct PriorImagination {
    priors: Vec<CommonSensePrior>,
}

impl PriorImagination {
    pub fn new(priors: Vec<CommonSensePrior>) -> Self {
        Self { priors }
    }

    /// From the priors stored in a memory.
    pub fn from_memory(
        memory: &asp_memory::AffordanceMemory,
    ) -> Result<Self, asp_memory::MemoryError> {
        Ok(Self::new(memory.priors()?))
    }

    fn tokens(s: &str) -> Vec<String> {
        s.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect()
    }

    /// Same rule as [`asp_memory::AffordanceMemory::prior_for`]: the prior's category words
    /// all occur in the object or part text, and a word of its part in the part text.
    pub fn prior_for(&self, object: &str, part: &str) -> Option<&CommonSensePrior> {
        let o = Self::tokens(object);
        let p = Self::tokens(part);
        self.priors
            .iter()
            .filter_map(|pr| {
                let cat = Self::tokens(&pr.category);
                let hits = Self::tokens(&pr.part)
                    .iter()
                    .filter(|w| p.contains(w))
                    .count();
                (!cat.is_empty() && cat.iter().all(|w| o.contains(w) || p.contains(w)) && hits > 0)
                    .then_some((cat.len() + hits, pr))
            })
            .fold(
                None,
                |best: Option<(usize, &CommonSensePrior)>, (s, pr)| match best {
                    Some((bs, _)) if bs >= s => best,
                    _ => Some((s, pr)),
                },
            )
            .map(|(_, pr)| pr)
    }
}

#[async_trait]
impl Imagination for PriorImagination {
    fn is_familiar(&self, object: &str, part: &str) -> bool {
        self.prior_for(object, part)
            .is_some_and(|p| p.relative_box.is_some())
    }

    async fn imagine(
        &self,
        r: &ImaginationRequest<'_>,
    ) -> Result<Option<ImaginedRegion>, ModelError> {
        let Some(prior) = self.prior_for(r.object, r.part) else {
            return Ok(None);
        };
        let Some([x0, y0, x1, y1]) = prior.relative_box else {
            return Ok(None);
        };
        let o = r.object_box;
        let (w, h) = (o.width(), o.height());
        Ok(Some(ImaginedRegion {
            bbox: Box2::new(o.x0 + x0 * w, o.y0 + y0 * h, o.x0 + x1 * w, o.y0 + y1 * h),
            confidence: prior.confidence,
            note: format!("{} {}: {}", prior.category, prior.part, prior.description),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn prior(category: &str, part: &str, b: [f32; 4]) -> CommonSensePrior {
        CommonSensePrior {
            category: category.into(),
            part: part.into(),
            skill: Skill::GraspPart,
            description: String::new(),
            relative_box: Some(b),
            confidence: 0.4,
            keywords: vec![],
            reference_mask: None,
            embedding: None,
        }
    }

    #[tokio::test]
    async fn prior_box_maps_into_the_object_box() {
        let im = PriorImagination::new(vec![prior("mug", "handle", [0.5, 0.0, 1.0, 0.5])]);
        assert!(im.is_familiar("red mug", "mug handle"));
        assert!(!im.is_familiar("kettle", "handle"));
        let view = Observation {
            rgb: asp_core::Image::filled(10, 10, [0, 0, 0]),
            depth: None,
            ground_truth: None,
        };
        let r = im
            .imagine(&ImaginationRequest {
                object: "mug",
                part: "handle",
                skill: Skill::GraspPart,
                view: &view,
                object_box: Box2::new(10.0, 20.0, 30.0, 60.0),
            })
            .await
            .unwrap()
            .unwrap();
        assert_eq!(r.bbox, Box2::new(20.0, 20.0, 30.0, 40.0));
        assert_eq!(r.confidence, 0.4);
    }
}
