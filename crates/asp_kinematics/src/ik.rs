//! A serial chain (the planning group from the arm base to the tool frame) with forward
//! kinematics, the geometric Jacobian and damped-least-squares inverse kinematics.

use std::f64::consts::{PI, TAU};

use nalgebra::{Matrix6, Matrix6xX, Translation3, Unit, UnitQuaternion, Vector6};
use rand::{RngExt, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::error::IkError;
use crate::model::{IkOptions, JointSpec, SolutionFilter};
use crate::{Iso64, Vec64};

/// Metres of tool travel that count as much as one radian of tool rotation in the IK
/// error.
const ORIENTATION_WEIGHT: f64 = 0.3;
/// Largest joint change of one IK iteration, radians (or metres).
const MAX_STEP: f64 = 0.5;

#[derive(Debug, Clone)]
struct ChainJoint {
    /// Transform from the previous joint's moving frame (or the arm base) to this
    /// joint's frame at value 0: every fixed joint in between folded in.
    before: Iso64,
    axis: Unit<Vec64>,
    revolute: bool,
    lower: f64,
    upper: f64,
}

/// The arm's actuated joints from the arm base to the tool frame.
#[derive(Debug, Clone)]
pub struct SerialChain {
    joints: Vec<ChainJoint>,
    /// From the last joint's moving frame to the tool frame.
    tool: Iso64,
}

impl SerialChain {
    /// A chain from its joints (`(transform before the joint, axis, revolute?, spec)`)
    /// and the tool offset after the last one.
    pub fn new(parts: Vec<(Iso64, Unit<Vec64>, bool, &JointSpec)>, tool: Iso64) -> Self {
        let joints = parts
            .into_iter()
            .map(|(before, axis, revolute, spec)| ChainJoint {
                before,
                axis,
                revolute,
                lower: spec.lower,
                upper: spec.upper,
            })
            .collect();
        Self { joints, tool }
    }

    pub fn dof(&self) -> usize {
        self.joints.len()
    }

    /// The tool pose in the arm base frame.
    pub fn forward(&self, q: &[f64]) -> Iso64 {
        let mut t = Iso64::identity();
        for (j, &qi) in self.joints.iter().zip(q) {
            t = t * j.before * motion(j, qi);
        }
        t * self.tool
    }

    /// The tool pose and the geometric Jacobian (rows: linear then angular velocity of
    /// the tool point, in the arm base frame).
    pub fn forward_with_jacobian(&self, q: &[f64]) -> (Iso64, Matrix6xX<f64>) {
        let n = self.joints.len();
        let mut axes = Vec::with_capacity(n);
        let mut t = Iso64::identity();
        for (j, &qi) in self.joints.iter().zip(q) {
            t *= j.before;
            axes.push((
                t.translation.vector,
                t.rotation * j.axis.into_inner(),
                j.revolute,
            ));
            t *= motion(j, qi);
        }
        let tool = t * self.tool;
        let p = tool.translation.vector;
        let mut jac = Matrix6xX::zeros(n);
        for (i, (origin, axis, revolute)) in axes.into_iter().enumerate() {
            if revolute {
                let lin = axis.cross(&(p - origin));
                jac.fixed_view_mut::<3, 1>(0, i).copy_from(&lin);
                jac.fixed_view_mut::<3, 1>(3, i).copy_from(&axis);
            } else {
                jac.fixed_view_mut::<3, 1>(0, i).copy_from(&axis);
            }
        }
        (tool, jac)
    }

    /// Brings `q` within the limits: revolute joints first by whole turns, then by
    /// clamping.
    pub fn clamp(&self, q: &mut [f64]) {
        for (j, qi) in self.joints.iter().zip(q.iter_mut()) {
            *qi = limit_joint(j, *qi);
        }
    }

    /// Among the whole-turn equivalents of each revolute joint within the limits, the
    /// one nearest to `reference`.
    pub fn nearest_equivalent(&self, q: &mut [f64], reference: &[f64]) {
        for ((j, qi), &r) in self.joints.iter().zip(q.iter_mut()).zip(reference) {
            if !j.revolute {
                continue;
            }
            let mut best = *qi;
            for k in -2..=2 {
                let cand = *qi + f64::from(k) * TAU;
                if cand >= j.lower && cand <= j.upper && (cand - r).abs() < (best - r).abs() {
                    best = cand;
                }
            }
            *qi = best;
        }
    }

    /// Damped-least-squares IK from several deterministic seeds: `seed` first, then
    /// `extra_seeds`, then pseudo-random configurations within the limits.
    pub fn inverse(
        &self,
        target: &Iso64,
        seed: &[f64],
        extra_seeds: &[Vec<f64>],
        opts: &IkOptions,
        accept: SolutionFilter<'_>,
    ) -> Result<Vec<f64>, IkError> {
        let n = self.dof();
        if seed.len() != n {
            return Err(IkError::InvalidSeed(format!(
                "{} values for {n} joints",
                seed.len()
            )));
        }
        if let Some((i, v)) = seed.iter().enumerate().find(|(_, v)| !v.is_finite()) {
            return Err(IkError::InvalidSeed(format!("joint {i} is {v}")));
        }
        let mut rng = ChaCha8Rng::seed_from_u64(opts.seed);
        let mut best = (f64::INFINITY, f64::INFINITY);
        let mut solutions = 0usize;
        let mut first_reason = None;
        let attempts = opts.max_attempts.max(1);
        for attempt in 0..attempts {
            let start: Vec<f64> = if attempt == 0 {
                seed.to_vec()
            } else if let Some(s) = extra_seeds.get(attempt - 1).filter(|s| s.len() == n) {
                s.clone()
            } else {
                self.joints
                    .iter()
                    .map(|j| {
                        let (lo, hi) = sample_range(j);
                        rng.random_range(lo..=hi)
                    })
                    .collect()
            };
            let (mut q, pos_err, rot_err) = self.descend(target, start, opts);
            if pos_err <= opts.position_tolerance && rot_err <= opts.orientation_tolerance {
                self.nearest_equivalent(&mut q, seed);
                solutions += 1;
                match accept(&q) {
                    Ok(()) => return Ok(q),
                    Err(reason) => {
                        first_reason.get_or_insert(reason);
                    }
                }
            } else if pos_err + ORIENTATION_WEIGHT * rot_err < best.0 + ORIENTATION_WEIGHT * best.1
            {
                best = (pos_err, rot_err);
            }
        }
        if solutions > 0 {
            return Err(IkError::AllRejected {
                solutions,
                reason: first_reason.unwrap_or_default(),
            });
        }
        Err(IkError::NoSolution {
            attempts,
            position_tolerance: opts.position_tolerance,
            orientation_tolerance: opts.orientation_tolerance,
            best_position_error: best.0,
            best_orientation_error: best.1,
        })
    }

    /// One Levenberg–Marquardt-damped descent from `q`: returns the configuration and
    /// its position and orientation errors.
    fn descend(&self, target: &Iso64, mut q: Vec<f64>, opts: &IkOptions) -> (Vec<f64>, f64, f64) {
        let n = self.dof();
        self.clamp(&mut q);
        // Stop well inside the tolerance so that callers get accurate solutions.
        let pos_goal = 0.05 * opts.position_tolerance;
        let rot_goal = 0.05 * opts.orientation_tolerance;
        let mut lambda = 1e-2;
        let (pose, mut jac) = self.forward_with_jacobian(&q);
        let mut err = pose_error(target, &pose);
        let mut cost = weighted_cost(&err);
        let mut stalled = 0;
        for _ in 0..opts.max_iterations {
            let (pe, re) = norms(&err);
            if pe <= pos_goal && re <= rot_goal {
                break;
            }
            let mut locked = vec![false; n];
            let mut dq = vec![0.0; n];
            // Solve, then lock joints at a limit that the step pushes outwards and solve
            // again with the others.
            for _ in 0..3 {
                let mut jw = jac.clone();
                for (i, _) in locked.iter().enumerate().filter(|(_, l)| **l) {
                    jw.column_mut(i).fill(0.0);
                }
                for r in 3..6 {
                    jw.row_mut(r).scale_mut(ORIENTATION_WEIGHT);
                }
                let mut e = err;
                for r in 3..6 {
                    e[r] *= ORIENTATION_WEIGHT;
                }
                let jjt: Matrix6<f64> =
                    &jw * jw.transpose() + Matrix6::identity() * (lambda * lambda);
                let Some(chol) = jjt.cholesky() else { break };
                let step = jw.transpose() * chol.solve(&e);
                let mut changed = false;
                for i in 0..n {
                    dq[i] = step[i];
                    let j = &self.joints[i];
                    let at_upper = q[i] >= j.upper - 1e-9 && dq[i] > 0.0;
                    let at_lower = q[i] <= j.lower + 1e-9 && dq[i] < 0.0;
                    if !locked[i] && (at_upper || at_lower) && j.upper - j.lower < TAU - 1e-6 {
                        locked[i] = true;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
            let biggest = dq.iter().fold(0.0_f64, |m, d| m.max(d.abs()));
            if biggest > MAX_STEP {
                let s = MAX_STEP / biggest;
                dq.iter_mut().for_each(|d| *d *= s);
            }
            let mut q_new: Vec<f64> = q.iter().zip(&dq).map(|(a, d)| a + d).collect();
            self.clamp(&mut q_new);
            let (pose_new, jac_new) = self.forward_with_jacobian(&q_new);
            let err_new = pose_error(target, &pose_new);
            let cost_new = weighted_cost(&err_new);
            if cost_new < cost {
                let improvement = (cost - cost_new) / cost.max(1e-300);
                q = q_new;
                jac = jac_new;
                err = err_new;
                cost = cost_new;
                lambda = (lambda * 0.5).max(1e-6);
                stalled = if improvement < 1e-4 { stalled + 1 } else { 0 };
            } else {
                lambda *= 4.0;
                stalled += 1;
            }
            if stalled > 12 || lambda > 1e3 {
                break;
            }
        }
        let (pe, re) = norms(&err);
        (q, pe, re)
    }
}

fn motion(j: &ChainJoint, q: f64) -> Iso64 {
    if j.revolute {
        Iso64::from_parts(
            Translation3::identity(),
            UnitQuaternion::from_axis_angle(&j.axis, q),
        )
    } else {
        Iso64::from_parts(
            Translation3::from(j.axis.into_inner() * q),
            UnitQuaternion::identity(),
        )
    }
}

fn limit_joint(j: &ChainJoint, q: f64) -> f64 {
    if q >= j.lower && q <= j.upper {
        return q;
    }
    if j.revolute {
        for k in [-1.0, 1.0, -2.0, 2.0] {
            let c = q + k * TAU;
            if c >= j.lower && c <= j.upper {
                return c;
            }
        }
    }
    q.clamp(j.lower, j.upper)
}

fn sample_range(j: &ChainJoint) -> (f64, f64) {
    let lo = if j.lower.is_finite() { j.lower } else { -PI };
    let hi = if j.upper.is_finite() { j.upper } else { PI };
    (lo, hi.max(lo))
}

/// Position error (target − current) and rotation vector taking the current
/// orientation to the target, both in the arm base frame.
fn pose_error(target: &Iso64, current: &Iso64) -> Vector6<f64> {
    let dp = target.translation.vector - current.translation.vector;
    let dr = (target.rotation * current.rotation.inverse()).scaled_axis();
    Vector6::new(dp.x, dp.y, dp.z, dr.x, dr.y, dr.z)
}

fn norms(e: &Vector6<f64>) -> (f64, f64) {
    (e.fixed_rows::<3>(0).norm(), e.fixed_rows::<3>(3).norm())
}

fn weighted_cost(e: &Vector6<f64>) -> f64 {
    let (p, r) = norms(e);
    p * p + (ORIENTATION_WEIGHT * r) * (ORIENTATION_WEIGHT * r)
}

/// Distance between two poses: translation (m) and rotation angle (rad).
pub fn pose_distance(a: &Iso64, b: &Iso64) -> (f64, f64) {
    (
        (a.translation.vector - b.translation.vector).norm(),
        a.rotation.angle_to(&b.rotation),
    )
}
