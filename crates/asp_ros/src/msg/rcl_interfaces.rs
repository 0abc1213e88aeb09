//! `rcl_interfaces`: the parameter services every ROS 2 node offers (`ros2 param list`,
//! `get`, `describe`, `set`), `/parameter_events` and the `/rosout` log. The descriptor's ranges are bounded
//! sequences (`[<=1]`) in ROS; their CDR is a plain sequence's.

use super::builtin_interfaces::Time;

crate::ros_message! {
    /// A parameter's value; `type` says which field holds it.
    pub struct ParameterValue in rcl_interfaces / msg {
        pub r#type: u8,
        pub bool_value: bool,
        pub integer_value: i64,
        pub double_value: f64,
        pub string_value: String,
        pub byte_array_value: Vec<u8>,
        pub bool_array_value: Vec<bool>,
        pub integer_array_value: Vec<i64>,
        pub double_array_value: Vec<f64>,
        pub string_array_value: Vec<String>,
    }

    pub struct Parameter in rcl_interfaces / msg {
        pub name: String,
        pub value: ParameterValue,
    }

    pub struct FloatingPointRange in rcl_interfaces / msg {
        pub from_value: f64,
        pub to_value: f64,
        pub step: f64,
    }

    pub struct IntegerRange in rcl_interfaces / msg {
        pub from_value: i64,
        pub to_value: i64,
        pub step: u64,
    }

    pub struct ParameterDescriptor in rcl_interfaces / msg {
        pub name: String,
        pub r#type: u8,
        pub description: String,
        pub additional_constraints: String,
        pub read_only: bool,
        pub dynamic_typing: bool,
        pub floating_point_range: Vec<FloatingPointRange>,
        pub integer_range: Vec<IntegerRange>,
    }

    pub struct SetParametersResult in rcl_interfaces / msg {
        pub successful: bool,
        pub reason: String,
    }

    pub struct ListParametersResult in rcl_interfaces / msg {
        pub names: Vec<String>,
        pub prefixes: Vec<String>,
    }

    /// One log line on `/rosout`.
    pub struct Log in rcl_interfaces / msg {
        pub stamp: Time,
        pub level: u8,
        pub name: String,
        pub msg: String,
        pub file: String,
        pub function: String,
        pub line: u32,
    }
    consts {
        DEBUG: u8 = 10,
        INFO: u8 = 20,
        WARN: u8 = 30,
        ERROR: u8 = 40,
        FATAL: u8 = 50,
    }

    /// Published on `/parameter_events` whenever a node's parameters change.
    pub struct ParameterEvent in rcl_interfaces / msg {
        pub stamp: Time,
        pub node: String,
        pub new_parameters: Vec<Parameter>,
        pub changed_parameters: Vec<Parameter>,
        pub deleted_parameters: Vec<Parameter>,
    }

    pub struct GetParametersRequest in rcl_interfaces / srv as "GetParameters_Request" {
        pub names: Vec<String>,
    }
    pub struct GetParametersResponse in rcl_interfaces / srv as "GetParameters_Response" {
        pub values: Vec<ParameterValue>,
    }

    pub struct GetParameterTypesRequest in rcl_interfaces / srv as "GetParameterTypes_Request" {
        pub names: Vec<String>,
    }
    pub struct GetParameterTypesResponse in rcl_interfaces / srv as "GetParameterTypes_Response" {
        pub types: Vec<u8>,
    }

    pub struct SetParametersRequest in rcl_interfaces / srv as "SetParameters_Request" {
        pub parameters: Vec<Parameter>,
    }
    pub struct SetParametersResponse in rcl_interfaces / srv as "SetParameters_Response" {
        pub results: Vec<SetParametersResult>,
    }

    pub struct SetParametersAtomicallyRequest in rcl_interfaces / srv as "SetParametersAtomically_Request" {
        pub parameters: Vec<Parameter>,
    }
    pub struct SetParametersAtomicallyResponse in rcl_interfaces / srv as "SetParametersAtomically_Response" {
        pub result: SetParametersResult,
    }

    pub struct ListParametersRequest in rcl_interfaces / srv as "ListParameters_Request" {
        pub prefixes: Vec<String>,
        pub depth: u64,
    }
    consts {
        DEPTH_RECURSIVE: u64 = 0,
    }
    pub struct ListParametersResponse in rcl_interfaces / srv as "ListParameters_Response" {
        pub result: ListParametersResult,
    }

    pub struct DescribeParametersRequest in rcl_interfaces / srv as "DescribeParameters_Request" {
        pub names: Vec<String>,
    }
    pub struct DescribeParametersResponse in rcl_interfaces / srv as "DescribeParameters_Response" {
        pub descriptors: Vec<ParameterDescriptor>,
    }
}

crate::ros_service! {
    pub struct GetParameters in rcl_interfaces { GetParametersRequest, GetParametersResponse }
}
crate::ros_service! {
    pub struct GetParameterTypes in rcl_interfaces { GetParameterTypesRequest, GetParameterTypesResponse }
}
crate::ros_service! {
    pub struct SetParameters in rcl_interfaces { SetParametersRequest, SetParametersResponse }
}
crate::ros_service! {
    pub struct SetParametersAtomically in rcl_interfaces {
        SetParametersAtomicallyRequest, SetParametersAtomicallyResponse
    }
}
crate::ros_service! {
    pub struct ListParameters in rcl_interfaces { ListParametersRequest, ListParametersResponse }
}
crate::ros_service! {
    pub struct DescribeParameters in rcl_interfaces { DescribeParametersRequest, DescribeParametersResponse }
}

/// `rcl_interfaces/msg/ParameterType`'s constants (the message itself has no fields).
pub mod parameter_type {
    pub const NOT_SET: u8 = 0;
    pub const BOOL: u8 = 1;
    pub const INTEGER: u8 = 2;
    pub const DOUBLE: u8 = 3;
    pub const STRING: u8 = 4;
    pub const BYTE_ARRAY: u8 = 5;
    pub const BOOL_ARRAY: u8 = 6;
    pub const INTEGER_ARRAY: u8 = 7;
    pub const DOUBLE_ARRAY: u8 = 8;
    pub const STRING_ARRAY: u8 = 9;
}

crate::msg::register!(
    Log,
    ParameterValue,
    Parameter,
    FloatingPointRange,
    IntegerRange,
    ParameterDescriptor,
    SetParametersResult,
    ListParametersResult,
    ParameterEvent,
    GetParametersRequest,
    GetParametersResponse,
    GetParameterTypesRequest,
    GetParameterTypesResponse,
    SetParametersRequest,
    SetParametersResponse,
    SetParametersAtomicallyRequest,
    SetParametersAtomicallyResponse,
    ListParametersRequest,
    ListParametersResponse,
    DescribeParametersRequest,
    DescribeParametersResponse,
);
