//! Transport settings resolved from configuration and the standard ROS 2 environment
//! variables (`ROS_DOMAIN_ID`, `RMW_IMPLEMENTATION`).

use std::time::Duration;

use asp_config::sections::common::{RmwImplementation, TransportConfig};

use crate::RosError;

/// How service requests and replies are laid out on DDS. Both ends must agree; ROS 2
/// picks it with the RMW implementation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ServiceMapping {
    /// `rmw_fastrtps_cpp` (ROS 2's default RMW): the request id travels as the
    /// sample's related-sample-identity ("enhanced" RPC over DDS mapping).
    FastDds,
    /// `rmw_cyclonedds_cpp`: a 16-byte header (client GUID half and sequence number) in
    /// front of every request and reply payload.
    Cyclone,
}

impl ServiceMapping {
    /// The mapping for an `RMW_IMPLEMENTATION` value; unset or empty means ROS 2's
    /// default, Fast DDS.
    pub fn from_rmw_name(name: Option<&str>) -> Result<Self, RosError> {
        match name.map(str::trim) {
            None | Some("") => Ok(Self::FastDds),
            Some("rmw_fastrtps_cpp" | "rmw_fastrtps_dynamic_cpp") => Ok(Self::FastDds),
            Some("rmw_cyclonedds_cpp") => Ok(Self::Cyclone),
            Some(other) => Err(RosError::Config(format!(
                "RMW_IMPLEMENTATION={other:?} is not supported; use rmw_fastrtps_cpp or \
                 rmw_cyclonedds_cpp (or set transport.rmw_implementation)"
            ))),
        }
    }

    pub(crate) fn to_ros2(self) -> ros2_client::ServiceMapping {
        match self {
            Self::FastDds => ros2_client::ServiceMapping::Enhanced,
            Self::Cyclone => ros2_client::ServiceMapping::Cyclone,
        }
    }
}

/// Resolved transport settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TransportSettings {
    /// DDS domain, 0–232.
    pub domain_id: u16,
    pub service_mapping: ServiceMapping,
    /// How long to wait for a server or a matching endpoint to appear.
    pub discovery_timeout: Duration,
    /// How long to wait for a service reply or an action result.
    pub call_timeout: Duration,
}

impl Default for TransportSettings {
    fn default() -> Self {
        Self {
            domain_id: 0,
            service_mapping: ServiceMapping::FastDds,
            discovery_timeout: Duration::from_secs(10),
            call_timeout: Duration::from_secs(120),
        }
    }
}

/// The largest domain id RustDDS (and the RTPS port mapping) supports.
pub const MAX_DOMAIN_ID: u16 = 232;

impl TransportSettings {
    /// Settings from configuration, reading `ROS_DOMAIN_ID` and `RMW_IMPLEMENTATION`
    /// from the process environment where the configuration defers to them.
    pub fn from_config(cfg: &TransportConfig) -> Result<Self, RosError> {
        Self::resolve(cfg, |k| std::env::var(k).ok())
    }

    /// Like [`Self::from_config`] with an explicit environment lookup.
    pub fn resolve(
        cfg: &TransportConfig,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<Self, RosError> {
        let domain_id = match cfg.domain_id {
            Some(d) => d,
            None => match env("ROS_DOMAIN_ID") {
                None => 0,
                Some(s) if s.trim().is_empty() => 0,
                Some(s) => s.trim().parse::<u16>().map_err(|_| {
                    RosError::Config(format!(
                        "ROS_DOMAIN_ID={s:?} is not a domain id (an integer 0-{MAX_DOMAIN_ID})"
                    ))
                })?,
            },
        };
        if domain_id > MAX_DOMAIN_ID {
            return Err(RosError::Config(format!(
                "domain id {domain_id} is out of range 0-{MAX_DOMAIN_ID}"
            )));
        }
        let service_mapping = match cfg.rmw_implementation {
            RmwImplementation::RmwFastrtpsCpp => ServiceMapping::FastDds,
            RmwImplementation::RmwCycloneddsCpp => ServiceMapping::Cyclone,
            RmwImplementation::FromEnvironment => {
                ServiceMapping::from_rmw_name(env("RMW_IMPLEMENTATION").as_deref())?
            }
        };
        let secs = |what: &str, s: f64| {
            Duration::try_from_secs_f64(s)
                .map_err(|_| RosError::Config(format!("{what} = {s} is not a duration")))
        };
        Ok(Self {
            domain_id,
            service_mapping,
            discovery_timeout: secs("transport.discovery_timeout_s", cfg.discovery_timeout_s)?,
            call_timeout: secs("transport.call_timeout_s", cfg.call_timeout_s)?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn environment_decides_when_configuration_defers() {
        let cfg = TransportConfig::default();
        let s = TransportSettings::resolve(&cfg, env(&[])).unwrap();
        assert_eq!(
            (s.domain_id, s.service_mapping),
            (0, ServiceMapping::FastDds)
        );
        let s = TransportSettings::resolve(
            &cfg,
            env(&[
                ("ROS_DOMAIN_ID", "42"),
                ("RMW_IMPLEMENTATION", "rmw_cyclonedds_cpp"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (s.domain_id, s.service_mapping),
            (42, ServiceMapping::Cyclone)
        );
        let s =
            TransportSettings::resolve(&cfg, env(&[("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp")]))
                .unwrap();
        assert_eq!(s.service_mapping, ServiceMapping::FastDds);
    }

    #[test]
    fn configuration_overrides_environment() {
        let cfg = TransportConfig {
            rmw_implementation: RmwImplementation::RmwCycloneddsCpp,
            domain_id: Some(7),
            ..TransportConfig::default()
        };
        let s = TransportSettings::resolve(
            &cfg,
            env(&[
                ("ROS_DOMAIN_ID", "42"),
                ("RMW_IMPLEMENTATION", "rmw_fastrtps_cpp"),
            ]),
        )
        .unwrap();
        assert_eq!(
            (s.domain_id, s.service_mapping),
            (7, ServiceMapping::Cyclone)
        );
        assert_eq!(s.discovery_timeout, Duration::from_secs(10));
    }

    #[test]
    fn bad_values_are_named() {
        let cfg = TransportConfig::default();
        let e = TransportSettings::resolve(&cfg, env(&[("ROS_DOMAIN_ID", "abc")])).unwrap_err();
        assert!(e.to_string().contains("\"abc\""), "{e}");
        let e = TransportSettings::resolve(&cfg, env(&[("ROS_DOMAIN_ID", "300")])).unwrap_err();
        assert!(e.to_string().contains("300"), "{e}");
        let e = TransportSettings::resolve(&cfg, env(&[("RMW_IMPLEMENTATION", "rmw_zenoh_cpp")]))
            .unwrap_err();
        assert!(e.to_string().contains("rmw_zenoh_cpp"), "{e}");
    }
}
