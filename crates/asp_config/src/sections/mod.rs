//! One module per node's parameters; the module owns its defaults and ranges.

pub mod affordance;
pub mod agent;
pub mod common;
pub mod go_to;
pub mod perception;
pub mod sim;
pub mod skills;
pub mod verifier;

/// A garde check that a value is at least the field `what` (`min`), or above it when
/// `strictly`.
pub(crate) fn not_below(
    min: f32,
    what: &'static str,
    strictly: bool,
) -> impl FnOnce(&f32, &()) -> garde::Result {
    move |v, _| {
        let ok = if strictly { *v > min } else { *v >= min };
        if ok {
            Ok(())
        } else {
            let bound = if strictly { "above" } else { "at least" };
            Err(garde::Error::new(format!(
                "is {v}; must be {bound} {what} ({min})"
            )))
        }
    }
}

/// A garde check: the value is at most the field `what`, `max`.
pub(crate) fn at_most(max: f64, what: &'static str) -> impl FnOnce(&f64, &()) -> garde::Result {
    move |v, _| {
        if *v <= max {
            Ok(())
        } else {
            Err(garde::Error::new(format!(
                "is {v}; must be at most {what} ({max})"
            )))
        }
    }
}
