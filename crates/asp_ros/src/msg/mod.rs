//! ROS 2 interface definitions: the project's own serde structs for every message,
//! service and action the nodes exchange, with a description of their fields.
//!
//! Each type is declared once with [`ros_message!`](crate::ros_message); the macro
//! writes the struct, its `Default` (honouring `.msg` default values), the ROS type
//! name and the field and constant lists ([`RosMessage::fields`],
//! [`RosMessage::constants`]) from the same tokens, so the description cannot drift
//! from the struct. A test compares those descriptions field for field with the
//! upstream Jazzy `.msg` files.
//!
//! Wire format: the structs serialise with serde into plain CDR (XCDR1), the encoding
//! every ROS 2 RMW uses: fields in declaration order, fixed arrays as Rust arrays,
//! unbounded and bounded sequences as `Vec`, `byte` as [`Byte`], and large `uint8[]`
//! blobs through `serde_bytes` (one copy instead of one call per byte).

pub mod action_msgs;
pub mod asp_interfaces;
pub mod bond;
pub mod builtin_interfaces;
pub mod control_msgs;
pub mod diagnostic_msgs;
pub mod geometry_msgs;
pub mod lifecycle_msgs;
pub mod moveit_msgs;
pub mod nav2_msgs;
pub mod nav_msgs;
pub mod object_recognition_msgs;
pub mod octomap_msgs;
pub mod rcl_interfaces;
pub mod rosgraph_msgs;
pub mod sensor_msgs;
pub mod shape_msgs;
pub mod std_msgs;
pub mod tf2_msgs;
pub mod trajectory_msgs;
pub mod unique_identifier_msgs;
pub mod visualization_msgs;

use std::fmt;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Which ROS 2 distribution's interface set this build speaks.
#[cfg(all(feature = "jazzy", not(feature = "humble")))]
pub const DISTRO: &str = "jazzy";
/// Which ROS 2 distribution's interface set this build speaks.
#[cfg(all(feature = "humble", not(feature = "jazzy")))]
pub const DISTRO: &str = "humble";
#[cfg(all(feature = "humble", feature = "jazzy"))]
compile_error!(
    "asp_ros: enable exactly one of the `jazzy` (default) and `humble` features \
     (for Humble: --no-default-features --features humble)"
);
#[cfg(not(any(feature = "humble", feature = "jazzy")))]
compile_error!("asp_ros: enable one of the `jazzy` (default) or `humble` features");

/// The ROS type of a field, as written in a `.msg` file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldType {
    /// `bool`, `byte`, `char`, `int8` … `uint64`, `float32`, `float64`, `string`.
    Primitive(&'static str),
    /// Another message, `package/Name`.
    Message {
        package: &'static str,
        name: &'static str,
    },
    /// `T[N]`.
    Array(Box<FieldType>, usize),
    /// `T[]`.
    Sequence(Box<FieldType>),
    /// `T[<=N]`.
    BoundedSequence(Box<FieldType>, usize),
}

impl fmt::Display for FieldType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FieldType::Primitive(p) => f.write_str(p),
            FieldType::Message { package, name } => write!(f, "{package}/{name}"),
            FieldType::Array(t, n) => write!(f, "{t}[{n}]"),
            FieldType::Sequence(t) => write!(f, "{t}[]"),
            FieldType::BoundedSequence(t, n) => write!(f, "{t}[<={n}]"),
        }
    }
}

/// One field of a message.
#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    /// The default value from the `.msg` file, when it declares one.
    pub default: Option<ConstValue>,
}

/// The value of a constant or a field default.
#[derive(Debug, Clone, PartialEq)]
pub enum ConstValue {
    Int(i128),
    Float(f64),
    Bool(bool),
    Str(String),
}

impl fmt::Display for ConstValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ConstValue::Int(v) => write!(f, "{v}"),
            ConstValue::Float(v) => write!(f, "{v}"),
            ConstValue::Bool(v) => write!(f, "{v}"),
            ConstValue::Str(v) => write!(f, "{v:?}"),
        }
    }
}

/// One constant of a message (`int8 STATUS_ACCEPTED = 1`).
#[derive(Debug, Clone, PartialEq)]
pub struct Constant {
    pub name: &'static str,
    pub ty: FieldType,
    pub value: ConstValue,
}

/// `type` for the raw identifier `r#type`.
pub fn strip_raw(name: &'static str) -> &'static str {
    name.strip_prefix("r#").unwrap_or(name)
}

/// A type that may appear as a field of a message.
pub trait RosField {
    fn field_type() -> FieldType;
}

/// A value that may be a constant or a default.
pub trait ToConst {
    fn to_const(&self) -> ConstValue;
}

macro_rules! primitive {
    ($($t:ty => $name:literal, $variant:ident, $conv:ty;)*) => {$(
        impl RosField for $t {
            fn field_type() -> FieldType {
                FieldType::Primitive($name)
            }
        }
        impl ToConst for $t {
            fn to_const(&self) -> ConstValue {
                ConstValue::$variant(<$conv>::from(self.clone()))
            }
        }
    )*};
}

primitive! {
    bool => "bool", Bool, bool;
    i8 => "int8", Int, i128;
    u8 => "uint8", Int, i128;
    i16 => "int16", Int, i128;
    u16 => "uint16", Int, i128;
    i32 => "int32", Int, i128;
    u32 => "uint32", Int, i128;
    i64 => "int64", Int, i128;
    u64 => "uint64", Int, i128;
    f32 => "float32", Float, f64;
    f64 => "float64", Float, f64;
    String => "string", Str, String;
}

/// The ROS `byte` type (an IDL `octet`): one byte on the wire like `uint8`, but a
/// distinct type in interface definitions.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Byte(pub u8);

impl Serialize for Byte {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for Byte {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        u8::deserialize(d).map(Byte)
    }
}

impl RosField for Byte {
    fn field_type() -> FieldType {
        FieldType::Primitive("byte")
    }
}

impl ToConst for Byte {
    fn to_const(&self) -> ConstValue {
        ConstValue::Int(i128::from(self.0))
    }
}

impl<T: RosField> RosField for Vec<T> {
    fn field_type() -> FieldType {
        FieldType::Sequence(Box::new(T::field_type()))
    }
}

impl<T: RosField, const N: usize> RosField for [T; N] {
    fn field_type() -> FieldType {
        FieldType::Array(Box::new(T::field_type()), N)
    }
}

/// A bounded sequence `T[<=N]`. Serialises like a sequence; longer input is refused
/// both when serialising and when deserialising, naming the bound.
#[derive(Debug, Clone, PartialEq)]
pub struct BoundedVec<T, const N: usize>(Vec<T>);

impl<T, const N: usize> Default for BoundedVec<T, N> {
    fn default() -> Self {
        Self(Vec::new())
    }
}

impl<T, const N: usize> BoundedVec<T, N> {
    /// The sequence, or an error naming the bound when `items` is longer than `N`.
    pub fn new(items: Vec<T>) -> Result<Self, crate::RosError> {
        if items.len() > N {
            return Err(crate::RosError::Conversion(format!(
                "a bounded sequence holds at most {N} elements, got {}",
                items.len()
            )));
        }
        Ok(Self(items))
    }

    pub fn as_slice(&self) -> &[T] {
        &self.0
    }

    pub fn into_vec(self) -> Vec<T> {
        self.0
    }
}

impl<T: Serialize, const N: usize> Serialize for BoundedVec<T, N> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if self.0.len() > N {
            return Err(serde::ser::Error::custom(format!(
                "bounded sequence longer than {N}"
            )));
        }
        self.0.serialize(s)
    }
}

impl<'de, T: Deserialize<'de>, const N: usize> Deserialize<'de> for BoundedVec<T, N> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Vec::<T>::deserialize(d)?;
        if v.len() > N {
            return Err(serde::de::Error::custom(format!(
                "bounded sequence of {} elements exceeds its bound {N}",
                v.len()
            )));
        }
        Ok(Self(v))
    }
}

impl<T: RosField, const N: usize> RosField for BoundedVec<T, N> {
    fn field_type() -> FieldType {
        FieldType::BoundedSequence(Box::new(T::field_type()), N)
    }
}

/// Where a type lives: `msg`, `srv` (request and response parts) or `action` (goal,
/// result and feedback parts).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Namespace {
    Msg,
    Srv,
    Action,
}

impl Namespace {
    pub fn as_str(self) -> &'static str {
        match self {
            Namespace::Msg => "msg",
            Namespace::Srv => "srv",
            Namespace::Action => "action",
        }
    }
}

/// A ROS 2 message type: a serde struct with its ROS name and field description.
pub trait RosMessage:
    Serialize
    + DeserializeOwned
    + ros2_client::Message
    + Clone
    + fmt::Debug
    + Default
    + PartialEq
    + Send
    + Sync
    + 'static
{
    const PACKAGE: &'static str;
    const NAMESPACE: Namespace;
    /// The type name; service and action parts carry their suffix
    /// (`ExecuteGoal_Request`, `NavigateToPose_Goal`).
    const NAME: &'static str;

    fn fields() -> Vec<Field>;

    fn constants() -> Vec<Constant> {
        Vec::new()
    }

    /// `package/msg/Name`, as `ros2 interface show` spells it.
    fn type_name() -> String {
        format!(
            "{}/{}/{}",
            Self::PACKAGE,
            Self::NAMESPACE.as_str(),
            Self::NAME
        )
    }

    /// The DDS type name, `package::msg::dds_::Name_`.
    fn dds_type_name() -> String {
        format!(
            "{}::{}::dds_::{}_",
            Self::PACKAGE,
            Self::NAMESPACE.as_str(),
            Self::NAME
        )
    }
}

/// A ROS 2 service type.
pub trait RosService: Send + Sync + 'static {
    type Request: RosMessage;
    type Response: RosMessage;
    const PACKAGE: &'static str;
    const NAME: &'static str;

    fn type_name() -> String {
        format!("{}/srv/{}", Self::PACKAGE, Self::NAME)
    }
}

/// How an action goal ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TerminalState {
    Succeeded,
    Aborted,
    Canceled,
}

/// Why an action server ended a goal itself, without a result from the goal handler.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndReason {
    /// A newer goal took over (terminal state ABORTED, as Nav2 does).
    Preempted,
    /// A client asked to cancel (terminal state CANCELED).
    Canceled,
    /// The e-stop was engaged (ABORTED).
    EStop,
    /// The server shut down (ABORTED).
    Shutdown,
    /// The goal handler failed without producing a result (ABORTED).
    HandlerFailed,
    /// The node that sends the goals stopped (its heartbeat): nobody supervises the
    /// goal any more (ABORTED).
    ClientLost,
    /// The node was deactivated (REP-2006 lifecycle): it holds until activated again
    /// (ABORTED).
    Deactivated,
    /// The server's process ended while the goal ran; the process that took its place
    /// found the goal in its request record (ABORTED, outcome unknown).
    Restarted,
}

/// A ROS 2 action type.
pub trait RosAction: Send + Sync + 'static {
    type Goal: RosMessage;
    type Result: RosMessage;
    type Feedback: RosMessage;
    const PACKAGE: &'static str;
    const NAME: &'static str;

    fn type_name() -> String {
        format!("{}/action/{}", Self::PACKAGE, Self::NAME)
    }

    /// The result an action server sends when it ends a goal itself, without a result
    /// from the goal handler (see [`EndReason`]). Actions whose results carry an error
    /// code override this to fill it in; the default is the empty result.
    fn result_for(reason: EndReason, message: &str) -> Self::Result {
        let _ = (reason, message);
        Self::Result::default()
    }
}

/// Declares ROS message structs. See the module documentation.
///
/// ```text
/// ros_message! {
///     /// doc
///     pub struct Quaternion in geometry_msgs / msg {
///         pub x: f64 = 0.0,
///         pub w: f64 = 1.0,
///     }
///     consts { SOME: i32 = 1 }
/// }
/// ```
#[macro_export]
macro_rules! ros_message {
    ($(
        $(#[$meta:meta])*
        pub struct $name:ident in $pkg:ident / $ns:ident $(as $rosname:literal)? {
            $(
                $(#[$fmeta:meta])*
                pub $field:ident : $fty:ty $(= $default:expr)?
            ),* $(,)?
        }
        $(consts {
            $( $(#[$cmeta:meta])* $cname:ident : $cty:ty = $cval:expr ),* $(,)?
        })?
    )*) => {$(
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, ::serde::Serialize, ::serde::Deserialize)]
        pub struct $name {
            $(
                $(#[$fmeta])*
                pub $field: $fty,
            )*
        }

        #[allow(clippy::derivable_impls)]
        impl ::std::default::Default for $name {
            fn default() -> Self {
                Self {
                    $( $field: $crate::ros_message!(@default $($default)?), )*
                }
            }
        }

        $(
        impl $name {
            $( $(#[$cmeta])* pub const $cname: $cty = $cval; )*
        }
        )?

        impl ::ros2_client::Message for $name {}

        impl $crate::msg::RosField for $name {
            fn field_type() -> $crate::msg::FieldType {
                $crate::msg::FieldType::Message {
                    package: stringify!($pkg),
                    name: <$name as $crate::msg::RosMessage>::NAME,
                }
            }
        }

        impl $crate::msg::RosMessage for $name {
            const PACKAGE: &'static str = stringify!($pkg);
            const NAMESPACE: $crate::msg::Namespace = $crate::ros_message!(@ns $ns);
            const NAME: &'static str = $crate::ros_message!(@name $name $($rosname)?);

            fn fields() -> Vec<$crate::msg::Field> {
                vec![$(
                    $crate::msg::Field {
                        name: $crate::msg::strip_raw(stringify!($field)),
                        ty: <$fty as $crate::msg::RosField>::field_type(),
                        default: $crate::ros_message!(@defaultdesc $fty $(, $default)?),
                    },
                )*]
            }

            #[allow(clippy::vec_init_then_push)]
            fn constants() -> Vec<$crate::msg::Constant> {
                #[allow(unused_mut)]
                let mut out = Vec::new();
                $($(
                    $(#[$cmeta])*
                    out.push($crate::msg::Constant {
                        name: stringify!($cname),
                        ty: <$cty as $crate::msg::RosField>::field_type(),
                        value: $crate::msg::ToConst::to_const(&$name::$cname),
                    });
                )*)?
                out
            }
        }
    )*};
    (@default) => { ::std::default::Default::default() };
    (@default $e:expr) => { $e };
    (@defaultdesc $t:ty) => { None };
    (@defaultdesc $t:ty, $e:expr) => {{
        let v: $t = $e;
        Some($crate::msg::ToConst::to_const(&v))
    }};
    (@ns msg) => { $crate::msg::Namespace::Msg };
    (@ns srv) => { $crate::msg::Namespace::Srv };
    (@ns action) => { $crate::msg::Namespace::Action };
    (@name $name:ident) => { stringify!($name) };
    (@name $name:ident $rosname:literal) => { $rosname };
}

/// Declares a service type from its request and response messages.
#[macro_export]
macro_rules! ros_service {
    ($(#[$meta:meta])* pub struct $name:ident in $pkg:ident $(as $rosname:literal)? { $req:ty, $resp:ty }) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl $crate::msg::RosService for $name {
            type Request = $req;
            type Response = $resp;
            const PACKAGE: &'static str = stringify!($pkg);
            const NAME: &'static str = $crate::ros_message!(@name $name $($rosname)?);
        }
    };
}

/// Declares an action type from its goal, result and feedback messages; an optional
/// `result_for` body fills in error codes of results the server makes itself.
#[macro_export]
macro_rules! ros_action {
    (
        $(#[$meta:meta])* pub struct $name:ident in $pkg:ident $(as $rosname:literal)? {
            $goal:ty, $result:ty, $feedback:ty $(,)?
        }
        $(fn result_for($reason:ident, $message:ident) $body:block)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub struct $name;

        impl $crate::msg::RosAction for $name {
            type Goal = $goal;
            type Result = $result;
            type Feedback = $feedback;
            const PACKAGE: &'static str = stringify!($pkg);
            const NAME: &'static str = $crate::ros_message!(@name $name $($rosname)?);
            $(
            fn result_for($reason: $crate::msg::EndReason, $message: &str) -> $result $body
            )?
        }
    };
}

/// Every message type this crate defines, by `package/Name` (services and actions
/// contribute their parts). Used by the interface check and by tests that round-trip
/// every type through CDR.
pub fn registry() -> Vec<TypeInfo> {
    let mut out = Vec::new();
    action_msgs::register(&mut out);
    asp_interfaces::register(&mut out);
    bond::register(&mut out);
    builtin_interfaces::register(&mut out);
    control_msgs::register(&mut out);
    diagnostic_msgs::register(&mut out);
    geometry_msgs::register(&mut out);
    lifecycle_msgs::register(&mut out);
    moveit_msgs::register(&mut out);
    nav2_msgs::register(&mut out);
    nav_msgs::register(&mut out);
    object_recognition_msgs::register(&mut out);
    octomap_msgs::register(&mut out);
    rcl_interfaces::register(&mut out);
    rosgraph_msgs::register(&mut out);
    sensor_msgs::register(&mut out);
    shape_msgs::register(&mut out);
    std_msgs::register(&mut out);
    tf2_msgs::register(&mut out);
    trajectory_msgs::register(&mut out);
    unique_identifier_msgs::register(&mut out);
    visualization_msgs::register(&mut out);
    out
}

/// The description of one message type, for checks over every type.
#[derive(Debug, Clone)]
pub struct TypeInfo {
    pub package: &'static str,
    pub namespace: Namespace,
    pub name: &'static str,
    pub fields: Vec<Field>,
    pub constants: Vec<Constant>,
    /// Serialises the default value to CDR and back; `Err` names what failed.
    pub round_trip: fn() -> Result<(), String>,
}

impl TypeInfo {
    pub fn of<M: RosMessage>() -> Self {
        Self {
            package: M::PACKAGE,
            namespace: M::NAMESPACE,
            name: M::NAME,
            fields: M::fields(),
            constants: M::constants(),
            round_trip: cdr_round_trip_default::<M>,
        }
    }
}

fn cdr_round_trip_default<M: RosMessage>() -> Result<(), String> {
    let value = M::default();
    let bytes = crate::cdr::to_bytes(&value).map_err(|e| format!("{}: {e}", M::type_name()))?;
    let back: M = crate::cdr::from_bytes(&bytes).map_err(|e| format!("{}: {e}", M::type_name()))?;
    if back == value {
        Ok(())
    } else {
        Err(format!("{} changed in a CDR round trip", M::type_name()))
    }
}

/// Registers message types into a registry vector.
macro_rules! register {
    ($($t:ty),* $(,)?) => {
        pub(crate) fn register(out: &mut Vec<$crate::msg::TypeInfo>) {
            $( out.push($crate::msg::TypeInfo::of::<$t>()); )*
        }
    };
}
pub(crate) use register;
