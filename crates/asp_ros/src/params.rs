//! ROS 2 parameters: a node's settings as named, typed values that `ros2 param list`,
//! `get`, `describe` and `set` reach through the six `rcl_interfaces` services, served
//! on the node's own transport (so they follow its service mapping, and work in process).
//!
//! Every parameter is read-only unless declared settable; a settable one is changed only
//! after its type is checked and the node's hook accepted the value (the hook makes the
//! change take effect, or says why not). Each change is announced on
//! `/parameter_events`.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use serde_json::Value;
use tracing::{info, warn};

use crate::msg::builtin_interfaces::Time;
use crate::msg::rcl_interfaces::{
    self as rcl, DescribeParameters, DescribeParametersRequest, DescribeParametersResponse,
    GetParameterTypes, GetParameterTypesRequest, GetParameterTypesResponse, GetParameters,
    GetParametersRequest, GetParametersResponse, ListParameters, ListParametersRequest,
    ListParametersResponse, ListParametersResult, ParameterDescriptor, ParameterEvent,
    SetParameters, SetParametersAtomically, SetParametersAtomicallyRequest,
    SetParametersAtomicallyResponse, SetParametersRequest, SetParametersResponse,
    SetParametersResult, parameter_type,
};
use crate::transport::{Publisher, ServiceServer};
use crate::{Node, Qos, RosError};

/// A parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub enum ParamValue {
    Bool(bool),
    Integer(i64),
    Double(f64),
    String(String),
    BoolArray(Vec<bool>),
    IntegerArray(Vec<i64>),
    DoubleArray(Vec<f64>),
    StringArray(Vec<String>),
}

impl ParamValue {
    /// The `rcl_interfaces/ParameterType` code.
    pub fn type_code(&self) -> u8 {
        match self {
            Self::Bool(_) => parameter_type::BOOL,
            Self::Integer(_) => parameter_type::INTEGER,
            Self::Double(_) => parameter_type::DOUBLE,
            Self::String(_) => parameter_type::STRING,
            Self::BoolArray(_) => parameter_type::BOOL_ARRAY,
            Self::IntegerArray(_) => parameter_type::INTEGER_ARRAY,
            Self::DoubleArray(_) => parameter_type::DOUBLE_ARRAY,
            Self::StringArray(_) => parameter_type::STRING_ARRAY,
        }
    }

    fn type_name(code: u8) -> &'static str {
        match code {
            parameter_type::BOOL => "a bool",
            parameter_type::INTEGER => "an integer",
            parameter_type::DOUBLE => "a double",
            parameter_type::STRING => "a string",
            parameter_type::BYTE_ARRAY => "a byte array",
            parameter_type::BOOL_ARRAY => "a bool array",
            parameter_type::INTEGER_ARRAY => "an integer array",
            parameter_type::DOUBLE_ARRAY => "a double array",
            parameter_type::STRING_ARRAY => "a string array",
            _ => "not set",
        }
    }

    fn to_msg(&self) -> rcl::ParameterValue {
        let mut m = rcl::ParameterValue {
            r#type: self.type_code(),
            ..Default::default()
        };
        match self {
            Self::Bool(v) => m.bool_value = *v,
            Self::Integer(v) => m.integer_value = *v,
            Self::Double(v) => m.double_value = *v,
            Self::String(v) => m.string_value.clone_from(v),
            Self::BoolArray(v) => m.bool_array_value.clone_from(v),
            Self::IntegerArray(v) => m.integer_array_value.clone_from(v),
            Self::DoubleArray(v) => m.double_array_value.clone_from(v),
            Self::StringArray(v) => m.string_array_value.clone_from(v),
        }
        m
    }

    /// The value a message carries; `Err` names the type when it holds none we take.
    fn from_msg(m: &rcl::ParameterValue) -> Result<Self, String> {
        Ok(match m.r#type {
            parameter_type::BOOL => Self::Bool(m.bool_value),
            parameter_type::INTEGER => Self::Integer(m.integer_value),
            parameter_type::DOUBLE => Self::Double(m.double_value),
            parameter_type::STRING => Self::String(m.string_value.clone()),
            parameter_type::BOOL_ARRAY => Self::BoolArray(m.bool_array_value.clone()),
            parameter_type::INTEGER_ARRAY => Self::IntegerArray(m.integer_array_value.clone()),
            parameter_type::DOUBLE_ARRAY => Self::DoubleArray(m.double_array_value.clone()),
            parameter_type::STRING_ARRAY => Self::StringArray(m.string_array_value.clone()),
            other => {
                return Err(format!(
                    "values of type {other} ({}) are not taken",
                    Self::type_name(other)
                ));
            }
        })
    }
}

/// One declared parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct ParamSpec {
    pub name: String,
    pub value: ParamValue,
    pub description: String,
    /// Constraints in words (`ros2 param describe` shows them).
    pub constraints: String,
    pub read_only: bool,
}

impl ParamSpec {
    /// A read-only parameter.
    pub fn read_only(name: impl Into<String>, value: ParamValue) -> Self {
        Self {
            name: name.into(),
            value,
            description: String::new(),
            constraints: String::new(),
            read_only: true,
        }
    }
}

/// Flattens a settings tree into read-only parameters, nested keys joined with `.`
/// (`limits.max_steps`). Nulls (unset options) are left out, as are arrays mixing types
/// or holding maps, which no parameter type can carry.
pub fn parameters_from_json(prefix: &str, value: &Value) -> Vec<ParamSpec> {
    let mut out = Vec::new();
    flatten(prefix, value, &mut out);
    out
}

fn flatten(name: &str, value: &Value, out: &mut Vec<ParamSpec>) {
    let join = |key: &str| {
        if name.is_empty() {
            key.to_owned()
        } else {
            format!("{name}.{key}")
        }
    };
    let scalar = match value {
        Value::Null => return,
        Value::Object(map) => {
            for (k, v) in map {
                flatten(&join(k), v, out);
            }
            return;
        }
        Value::Bool(b) => Some(ParamValue::Bool(*b)),
        Value::Number(n) => n
            .as_i64()
            .map(ParamValue::Integer)
            .or_else(|| n.as_f64().map(ParamValue::Double)),
        Value::String(s) => Some(ParamValue::String(s.clone())),
        Value::Array(items) => array_value(items),
    };
    if let Some(v) = scalar {
        out.push(ParamSpec::read_only(name, v));
    }
}

fn array_value(items: &[Value]) -> Option<ParamValue> {
    if items.iter().all(Value::is_boolean) {
        return Some(ParamValue::BoolArray(
            items.iter().filter_map(Value::as_bool).collect(),
        ));
    }
    if items.iter().all(Value::is_i64) {
        return Some(ParamValue::IntegerArray(
            items.iter().filter_map(Value::as_i64).collect(),
        ));
    }
    if items.iter().all(Value::is_number) {
        return Some(ParamValue::DoubleArray(
            items.iter().filter_map(Value::as_f64).collect(),
        ));
    }
    if items.iter().all(Value::is_string) {
        return Some(ParamValue::StringArray(
            items
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
        ));
    }
    None
}

/// What a node does with a new value of a settable parameter: `Ok` once it has taken
/// effect, `Err` with the reason it is refused (the value then stays as it was).
pub type SetHook = Arc<dyn Fn(&str, &ParamValue) -> Result<(), String> + Send + Sync>;

/// A node's parameters.
pub struct ParameterStore {
    node: String,
    params: Mutex<BTreeMap<String, ParamSpec>>,
    on_set: Option<SetHook>,
}

impl std::fmt::Debug for ParameterStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ParameterStore")
            .field("node", &self.node)
            .finish_non_exhaustive()
    }
}

impl ParameterStore {
    /// `node`'s parameters; a later spec of the same name replaces an earlier one.
    pub fn new(node: &str, specs: impl IntoIterator<Item = ParamSpec>) -> Self {
        Self {
            node: node.to_owned(),
            params: Mutex::new(specs.into_iter().map(|s| (s.name.clone(), s)).collect()),
            on_set: None,
        }
    }

    /// Calls `hook` before a settable parameter changes.
    #[must_use]
    pub fn with_set_hook(mut self, hook: SetHook) -> Self {
        self.on_set = Some(hook);
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, ParamSpec>> {
        self.params
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub fn get(&self, name: &str) -> Option<ParamValue> {
        self.lock().get(name).map(|p| p.value.clone())
    }

    pub fn names(&self) -> Vec<String> {
        self.lock().keys().cloned().collect()
    }

    /// Why `name` cannot take `value`, if it cannot.
    fn check(&self, name: &str, value: &ParamValue) -> Result<(), String> {
        let params = self.lock();
        let Some(p) = params.get(name) else {
            return Err(format!("{}: no parameter named {name:?}", self.node));
        };
        if p.read_only {
            return Err(format!(
                "{}: {name} is read-only (set it in the configuration and restart the node)",
                self.node
            ));
        }
        if p.value.type_code() != value.type_code() {
            return Err(format!(
                "{}: {name} is {}, not {}",
                self.node,
                ParamValue::type_name(p.value.type_code()),
                ParamValue::type_name(value.type_code())
            ));
        }
        Ok(())
    }

    /// Sets `name` to `value` when it is settable, of the same type, and the node's hook
    /// takes it.
    pub fn set(&self, name: &str, value: ParamValue) -> Result<(), String> {
        self.check(name, &value)?;
        if let Some(hook) = &self.on_set {
            hook(name, &value).map_err(|reason| format!("{}: {name}: {reason}", self.node))?;
        }
        if let Some(p) = self.lock().get_mut(name) {
            p.value = value;
        }
        info!(node = %self.node, parameter = name, "parameter set");
        Ok(())
    }

    /// Sets all or none: every value is checked first (types and settability). A hook
    /// that refuses a value part-way leaves the earlier ones set, as rclcpp does when a
    /// callback fails after validation.
    pub fn set_all(&self, values: &[(String, ParamValue)]) -> Result<(), String> {
        for (n, v) in values {
            self.check(n, v)?;
        }
        for (n, v) in values {
            self.set(n, v.clone())?;
        }
        Ok(())
    }

    fn describe(&self, name: &str) -> ParameterDescriptor {
        match self.lock().get(name) {
            Some(p) => ParameterDescriptor {
                name: name.to_owned(),
                r#type: p.value.type_code(),
                description: p.description.clone(),
                additional_constraints: p.constraints.clone(),
                read_only: p.read_only,
                ..Default::default()
            },
            None => ParameterDescriptor {
                name: name.to_owned(),
                ..Default::default()
            },
        }
    }

    /// `ros2 param list`'s answer, with rclcpp's semantics: without prefixes, the names
    /// with fewer than `depth` dots (0: all); with prefixes, the names equal to a prefix,
    /// or under it with fewer than `depth` dots after the prefix (its own separator
    /// counted, as rclcpp counts it).
    fn list(&self, prefixes: &[String], depth: u64) -> ListParametersResult {
        let dots = |s: &str| s.matches('.').count() as u64;
        let within = |s: &str| depth == 0 || dots(s) < depth;
        let mut out = ListParametersResult::default();
        for name in self.lock().keys() {
            let listed = if prefixes.is_empty() {
                within(name)
            } else {
                prefixes.iter().any(|p| {
                    name == p
                        || name
                            .strip_prefix(p.as_str())
                            .filter(|r| r.starts_with('.'))
                            .is_some_and(within)
                })
            };
            if listed {
                out.names.push(name.clone());
                if let Some((ns, _)) = name.rsplit_once('.')
                    && !out.prefixes.iter().any(|p| p == ns)
                {
                    out.prefixes.push(ns.to_owned());
                }
            }
        }
        out
    }
}

/// The running parameter services of a node; dropping it stops them.
#[derive(Debug)]
pub struct ParameterServices {
    pub store: Arc<ParameterStore>,
    _servers: Vec<ServiceServer>,
}

fn result(r: Result<(), String>) -> SetParametersResult {
    match r {
        Ok(()) => SetParametersResult {
            successful: true,
            reason: String::new(),
        },
        Err(reason) => SetParametersResult {
            successful: false,
            reason,
        },
    }
}

fn event(node: &str, changed: Vec<rcl::Parameter>, stamp: Time) -> ParameterEvent {
    ParameterEvent {
        stamp,
        node: node.to_owned(),
        changed_parameters: changed,
        ..Default::default()
    }
}

/// Serves `store` on `node` as `<node>/get_parameters`, `get_parameter_types`,
/// `set_parameters`, `set_parameters_atomically`, `list_parameters` and
/// `describe_parameters`, announcing changes on `/parameter_events`.
pub fn serve_parameters(
    node: &Node,
    store: Arc<ParameterStore>,
) -> Result<ParameterServices, RosError> {
    let base = node.name().trim_end_matches('/').to_owned();
    let at = |s: &str| format!("{base}/{s}");
    let events: Arc<Publisher<ParameterEvent>> = Arc::new(node.publisher(
        "/parameter_events",
        Qos::default_reliable().with_depth(1000),
    )?);
    let fq = node.name().to_owned();
    let mut servers = Vec::new();

    let s = store.clone();
    servers.push(node.serve::<GetParameters, _, _>(
        &at("get_parameters"),
        move |req: GetParametersRequest| {
            let values = req
                .names
                .iter()
                .map(|n| s.get(n).map(|v| v.to_msg()).unwrap_or_default())
                .collect();
            async move { GetParametersResponse { values } }
        },
    )?);
    let s = store.clone();
    servers.push(node.serve::<GetParameterTypes, _, _>(
        &at("get_parameter_types"),
        move |req: GetParameterTypesRequest| {
            let types = req
                .names
                .iter()
                .map(|n| s.get(n).map_or(parameter_type::NOT_SET, |v| v.type_code()))
                .collect();
            async move { GetParameterTypesResponse { types } }
        },
    )?);
    let s = store.clone();
    servers.push(node.serve::<ListParameters, _, _>(
        &at("list_parameters"),
        move |req: ListParametersRequest| {
            let result = s.list(&req.prefixes, req.depth);
            async move { ListParametersResponse { result } }
        },
    )?);
    let s = store.clone();
    servers.push(node.serve::<DescribeParameters, _, _>(
        &at("describe_parameters"),
        move |req: DescribeParametersRequest| {
            let descriptors = req.names.iter().map(|n| s.describe(n)).collect();
            async move { DescribeParametersResponse { descriptors } }
        },
    )?);
    let (s, ev, name) = (store.clone(), events.clone(), fq.clone());
    servers.push(node.serve::<SetParameters, _, _>(
        &at("set_parameters"),
        move |req: SetParametersRequest| {
            let mut changed = Vec::new();
            let results = req
                .parameters
                .iter()
                .map(|p| {
                    let r = ParamValue::from_msg(&p.value)
                        .map_err(|e| format!("{}: {}: {e}", name, p.name))
                        .and_then(|v| s.set(&p.name, v));
                    if r.is_ok() {
                        changed.push(p.clone());
                    }
                    result(r)
                })
                .collect();
            announce(&ev, &name, changed);
            async move { SetParametersResponse { results } }
        },
    )?);
    let (s, ev, name) = (store.clone(), events, fq);
    servers.push(node.serve::<SetParametersAtomically, _, _>(
        &at("set_parameters_atomically"),
        move |req: SetParametersAtomicallyRequest| {
            let parsed: Result<Vec<(String, ParamValue)>, String> = req
                .parameters
                .iter()
                .map(|p| {
                    ParamValue::from_msg(&p.value)
                        .map(|v| (p.name.clone(), v))
                        .map_err(|e| format!("{}: {}: {e}", name, p.name))
                })
                .collect();
            let r = parsed.and_then(|values| s.set_all(&values));
            if r.is_ok() {
                announce(&ev, &name, req.parameters.clone());
            }
            async move { SetParametersAtomicallyResponse { result: result(r) } }
        },
    )?);
    Ok(ParameterServices {
        store,
        _servers: servers,
    })
}

fn announce(events: &Publisher<ParameterEvent>, node: &str, changed: Vec<rcl::Parameter>) {
    if changed.is_empty() {
        return;
    }
    if let Err(e) = events.publish(event(node, changed, events.now())) {
        warn!("/parameter_events: {e}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_settings_tree_flattens_into_typed_dotted_names() {
        let v = serde_json::json!({
            "when_busy": "preempt",
            "limits": {"max_steps": 40, "scale": 0.5},
            "skills": ["grasp", "place"],
            "box": [-0.5, 0.5],
            "unset": null,
            "mixed": [1, "a"],
        });
        let mut got = parameters_from_json("", &v);
        got.sort_by(|a, b| a.name.cmp(&b.name));
        let pairs: Vec<(&str, &ParamValue)> =
            got.iter().map(|p| (p.name.as_str(), &p.value)).collect();
        assert_eq!(
            pairs,
            vec![
                ("box", &ParamValue::DoubleArray(vec![-0.5, 0.5])),
                ("limits.max_steps", &ParamValue::Integer(40)),
                ("limits.scale", &ParamValue::Double(0.5)),
                (
                    "skills",
                    &ParamValue::StringArray(vec!["grasp".into(), "place".into()])
                ),
                ("when_busy", &ParamValue::String("preempt".into())),
            ]
        );
        assert!(got.iter().all(|p| p.read_only));
    }

    fn store() -> ParameterStore {
        let mut mode = ParamSpec::read_only("mode", ParamValue::String("a".into()));
        mode.read_only = false;
        ParameterStore::new(
            "/n",
            [
                mode,
                ParamSpec::read_only("limits.max_steps", ParamValue::Integer(3)),
                ParamSpec::read_only("limits.deep.x", ParamValue::Bool(true)),
            ],
        )
        .with_set_hook(Arc::new(|_, v| match v {
            ParamValue::String(s) if s == "a" || s == "b" => Ok(()),
            other => Err(format!("{other:?} is not one of a, b")),
        }))
    }

    #[test]
    fn only_settable_parameters_of_the_same_type_that_the_hook_takes_change() {
        let s = store();
        s.set("mode", ParamValue::String("b".into())).unwrap();
        assert_eq!(s.get("mode"), Some(ParamValue::String("b".into())));
        let e = s.set("mode", ParamValue::String("c".into())).unwrap_err();
        assert!(e.contains("not one of a, b"), "{e}");
        assert_eq!(s.get("mode"), Some(ParamValue::String("b".into())));
        let e = s.set("mode", ParamValue::Integer(1)).unwrap_err();
        assert!(e.contains("mode is a string, not an integer"), "{e}");
        let e = s
            .set("limits.max_steps", ParamValue::Integer(9))
            .unwrap_err();
        assert!(e.contains("read-only"), "{e}");
        let e = s.set("nope", ParamValue::Bool(true)).unwrap_err();
        assert!(e.contains("no parameter named \"nope\""), "{e}");
        // all or nothing: a read-only one in the batch stops the settable one too
        let batch = [
            ("mode".to_owned(), ParamValue::String("a".into())),
            ("limits.max_steps".to_owned(), ParamValue::Integer(1)),
        ];
        assert!(s.set_all(&batch).is_err());
        assert_eq!(s.get("mode"), Some(ParamValue::String("b".into())));
    }

    #[test]
    fn listing_follows_rclcpp_prefix_and_depth_rules() {
        let s = store();
        let all = s.list(&[], 0);
        assert_eq!(all.names, vec!["limits.deep.x", "limits.max_steps", "mode"]);
        assert_eq!(s.list(&[], 1).names, vec!["mode"]);
        assert!(s.list(&["limits".to_owned()], 1).names.is_empty());
        let under = s.list(&["limits".to_owned()], 2);
        assert_eq!(under.names, vec!["limits.max_steps"]);
        assert_eq!(under.prefixes, vec!["limits"]);
        assert_eq!(s.list(&["limits".to_owned()], 0).names.len(), 2);
    }
}
