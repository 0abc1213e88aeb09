//! go_to_node's logic (SPEC §1.6): detect the affordance for the action on the remote
//! object, choose the base pose that faces it, drive there, find the object again.

use std::sync::{Arc, Mutex};

use asp_config::GoToConfig;
use asp_core::grid::OccupancyGrid;
use asp_core::robot::{BaseNavigation, CancellationToken};
use asp_core::{FailureKind, ObjectKey, ObjectMap, PointCloud};
use asp_nav::{GoTo, GoToRequest, GoToResult, RelocalizeError, Relocalized, Relocalizer};
use asp_skills::EStopListener;
use async_trait::async_trait;
use tracing::warn;

use crate::ports::{
    AffordancePort, AffordanceQuery, GoToGoal, GoToReply, NavigationPort, ObjectMapPort,
    RelocalizedObject, ServiceError,
};

/// Where the occupancy grid comes from (`/map` on a robot).
#[async_trait]
pub trait GridSource: Send + Sync {
    async fn occupancy_grid(&self) -> Result<OccupancyGrid, String>;
}

/// The go_to service.
pub struct GoToService {
    base: Arc<dyn BaseNavigation>,
    map: Arc<dyn ObjectMapPort>,
    affordance: Arc<dyn AffordancePort>,
    grid: Arc<dyn GridSource>,
    estop: EStopListener,
    cfg: GoToConfig,
}

impl std::fmt::Debug for GoToService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GoToService")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

/// Re-detection through the map service, for one key; keeps what it found.
struct KeyRelocalizer {
    map: Arc<dyn ObjectMapPort>,
    key: ObjectKey,
    found: Mutex<Option<RelocalizedObject>>,
}

#[async_trait]
impl Relocalizer for KeyRelocalizer {
    async fn relocalize(
        &self,
        _query: &str,
        _previous: &PointCloud,
        camera: &str,
    ) -> Result<Option<Relocalized>, RelocalizeError> {
        let found = self.map.relocalize(&self.key, camera).await.map_err(|e| {
            if e.failure.kind == FailureKind::UnknownObject {
                RelocalizeError::NotIt(e.message)
            } else {
                RelocalizeError::Failed(e.message)
            }
        })?;
        let Some(found) = found else { return Ok(None) };
        let mut local_map = ObjectMap::new(found.cloud.frame.clone());
        let object = local_map.allocate_id();
        let out = Relocalized {
            local_map,
            object,
            object_cloud: found.cloud.clone(),
            score: found.score,
            shift: found.shift,
        };
        *self
            .found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(found);
        Ok(Some(out))
    }
}

impl GoToService {
    pub fn new(
        base: Arc<dyn BaseNavigation>,
        map: Arc<dyn ObjectMapPort>,
        affordance: Arc<dyn AffordancePort>,
        grid: Arc<dyn GridSource>,
        estop: EStopListener,
        cfg: &GoToConfig,
    ) -> Self {
        Self {
            base,
            map,
            affordance,
            grid,
            estop,
            cfg: cfg.clone(),
        }
    }
}

fn failed(e: ServiceError) -> GoToReply {
    GoToReply {
        arrived: false,
        failure: Some(e.failure),
        message: e.message,
        selection: None,
        final_pose: None,
        affordance_part: None,
        relocalized: None,
    }
}

#[async_trait]
impl NavigationPort for GoToService {
    async fn go_to(&self, goal: &GoToGoal, cancel: &CancellationToken) -> GoToReply {
        let object = match self.map.object(&goal.key).await {
            Ok(o) => o,
            Err(e) => return failed(e),
        };
        // the affordance the robot should face; λ_aff = 0 is plain "go near"
        let affordance = if self.cfg.lambda_aff > 0.0 {
            let query = AffordanceQuery {
                key: goal.key.clone(),
                action: goal.action.clone(),
                skills: Vec::new(),
            };
            match self.affordance.detect(&query, cancel).await {
                Ok(report) => report.affordances.into_iter().next().map(|a| a.affordance),
                Err(e) if e.failure.kind == FailureKind::Cancelled => return failed(e),
                Err(e) => {
                    warn!(object = %goal.key, "no affordance to face ({e}); going near the object");
                    None
                }
            }
        } else {
            None
        };
        let grid = match self.grid.occupancy_grid().await {
            Ok(g) => g,
            Err(e) => {
                return failed(ServiceError::new(
                    FailureKind::Navigation,
                    format!("no occupancy grid to choose a base pose on: {e}"),
                ));
            }
        };
        let relocalizer = Arc::new(KeyRelocalizer {
            map: self.map.clone(),
            key: goal.key.clone(),
            found: Mutex::new(None),
        });
        let goto = GoTo::new(
            self.base.clone(),
            &self.cfg,
            self.estop.clone(),
            Some(relocalizer.clone() as Arc<dyn Relocalizer>),
        );
        let affordance_part = affordance.as_ref().map(|a| a.part.clone());
        let request = GoToRequest {
            object: goal.key.clone(),
            query: object.query.clone(),
            object_cloud: object.object.point_cloud.clone(),
            affordance,
            grid,
            carried: goal.carried.map(|c| (c.height, c.radius)),
            surroundings: object.surroundings.clone(),
        };
        let result = goto.go_to(request, cancel).await;
        let relocalized = relocalizer
            .found
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        let (arrived, failure, report) = match result {
            GoToResult::Arrived(r) => (true, None, r),
            GoToResult::Failed { failure, report } => (false, Some(failure), report),
        };
        GoToReply {
            arrived,
            failure,
            message: report.message,
            selection: report.selection,
            final_pose: report.navigation.map(|n| n.final_pose),
            affordance_part,
            relocalized,
        }
    }
}
