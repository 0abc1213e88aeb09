//! Errors of loading a robot description and of inverse kinematics.

use std::path::PathBuf;

/// A robot description that cannot be loaded or used. Each variant names the file,
/// link, joint or key at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum DescriptionError {
    #[error("cannot read {path}: {message}")]
    Read { path: PathBuf, message: String },
    #[error("{source_name}: not a valid URDF: {message}")]
    Urdf {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: not a valid SRDF: {message}")]
    Srdf {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: link {link:?}: {message}")]
    Link {
        source_name: String,
        link: String,
        message: String,
    },
    #[error("{source_name}: joint {joint:?}: {message}")]
    Joint {
        source_name: String,
        joint: String,
        message: String,
    },
    #[error("{source_name}: {message}")]
    Structure {
        source_name: String,
        message: String,
    },
    #[error("{source_name}: group_state {state:?}: {message}")]
    GroupState {
        source_name: String,
        state: String,
        message: String,
    },
}

/// Why inverse kinematics returned no configuration.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum IkError {
    /// No seed converged to the target within the tolerances.
    #[error(
        "no IK solution within {position_tolerance} m / {orientation_tolerance} rad after {attempts} \
         attempts (closest: {best_position_error:.4} m, {best_orientation_error:.4} rad)"
    )]
    NoSolution {
        attempts: usize,
        position_tolerance: f64,
        orientation_tolerance: f64,
        best_position_error: f64,
        best_orientation_error: f64,
    },
    /// Solutions were found, but the caller's filter (e.g. a collision check) rejected
    /// all of them.
    #[error("{solutions} IK solution(s) found, all rejected: {reason}")]
    AllRejected { solutions: usize, reason: String },
    /// The target pose has NaN or infinite components.
    #[error("the IK target is not a finite pose: {0}")]
    InvalidTarget(String),
    /// The seed has the wrong length or non-finite values.
    #[error("invalid IK seed: {0}")]
    InvalidSeed(String),
}
