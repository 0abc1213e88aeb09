//! `go_to` (SPEC §1.6): affordance-facing navigation.
//!
//! - [`select`]: the base pose — the affordance's outward normal projected on the floor
//!   gives the preferred position `p_aff` at radius r; candidates on the circle of radius
//!   r around the object, each facing it, cost `F + λ_aff‖p − p_aff‖` with `F` the mean
//!   footprint cost on the occupancy grid; colliding candidates are discarded and r is
//!   relaxed in steps from 0.85 m when none is valid. `λ_aff = 0` or no affordance is the
//!   plain "go near" ablation.
//! - [`GoTo`]: sends the chosen pose through [`asp_core::robot::BaseNavigation`] (Nav2's
//!   `NavigateToPose` on a robot, the simulator in process) with cancel and the e-stop,
//!   reports Nav2 codes as tool feedback ([`codes`]) and, on arrival, re-detects the
//!   object in a local map of the current camera frame through a [`Relocalizer`].

pub mod codes;
pub mod explore;
pub mod goto;
pub mod relocalize;
pub mod select;

pub use goto::{GoTo, GoToReport, GoToRequest, GoToResult};
pub use relocalize::{RelocalizeError, Relocalized, Relocalizer};
pub use select::{Candidate, PoseSelector, Rejection, Selection, SelectionError, SelectionInput};
