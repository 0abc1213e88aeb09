#!/usr/bin/env python3
"""An independent ROS 2 peer on Eclipse Cyclone DDS (PyPI `cyclonedds`), speaking ROS 2's
wire conventions by hand: topic names `rt/...`, `rq/...Request`, `rr/...Reply`, type names
`<pkg>::msg::dds_::<Type>_`, plain CDR, and rmw_cyclonedds' request header
{uint64 guid; int64 seq} in front of every service payload. The Rust interoperability test
(crates/asp_ros/tests/interop.rs) runs it against ASP's DDS transport.

Usage (ROS_DOMAIN_ID selects the domain; each mode prints JSON lines and exits 0 on success):
  cyclone_peer.py pub    TOPIC N          publish N std_msgs/String once a reader matched
  cyclone_peer.py sub    TOPIC N          receive N std_msgs/String ("ready" once a writer matched)
  cyclone_peer.py call   SERVICE GOAL     call asp_interfaces/srv/ExecuteGoal
  cyclone_peer.py state  TOPIC            read the latched asp_interfaces/msg/SymbolicState
  cyclone_peer.py robot_user NODE GOAL  what a ROS user looks at with the e-stop pressed
                                          first: latch /asp/estop true (printed "estop"),
                                          then read /tf_static, /tf, /robot_description,
                                          list and get NODE's parameters and call
                                          /asp/execute_goal with GOAL
  cyclone_peer.py lifecycle NODE GOAL   what `ros2 lifecycle` does: NODE's state and
                                          available transitions, `set NODE deactivate`,
                                          GOAL on /asp/execute_goal, `set NODE activate`
                                          and the state again
  cyclone_peer.py map_view              what RViz shows of the object map: the latched
                                          /asp/object_map summary, /asp/markers and
                                          /asp/map_cloud
  cyclone_peer.py stretch_driver ACTION CODES
                                          stand in for stretch_core's trajectory server in
                                          position mode: serve control_msgs/action/
                                          FollowJointTrajectory goals, checking joint names
                                          and ranges as its command groups do, ending the
                                          i-th well-formed goal with the i-th of the
                                          comma-separated error CODES; exit after them all
  cyclone_peer.py action ACTION GOAL [cancel_after_feedback]
                                          drive asp_interfaces/action/ExecuteGoal: send the
                                          goal, print feedback, optionally cancel after that
                                          many feedback messages, print the result
"""
import json
import os
import random
import sys
import time
import uuid
from dataclasses import dataclass

from cyclonedds.core import Policy, Qos
from cyclonedds.domain import DomainParticipant
from cyclonedds.idl import IdlStruct
from cyclonedds.idl.types import (array, float32, int8, int32, int64, sequence, uint8, uint16,
                                  uint32, uint64)
from cyclonedds.pub import DataWriter
from cyclonedds.sub import DataReader
from cyclonedds.topic import Topic
from cyclonedds.util import duration


def emit(**kw):
    print(json.dumps(kw), flush=True)


# --- types (ROS 2 name mangling: <pkg>::<ns>::dds_::<Type>_) ---------------------------

@dataclass
class String_(IdlStruct, typename="std_msgs::msg::dds_::String_"):
    data: str


@dataclass
class Time_(IdlStruct, typename="builtin_interfaces::msg::dds_::Time_"):
    sec: int32
    nanosec: uint32


@dataclass
class Header_(IdlStruct, typename="std_msgs::msg::dds_::Header_"):
    stamp: Time_
    frame_id: str


@dataclass
class UUID_(IdlStruct, typename="unique_identifier_msgs::msg::dds_::UUID_"):
    uuid: array[uint8, 16]


@dataclass
class GoalInfo_(IdlStruct, typename="action_msgs::msg::dds_::GoalInfo_"):
    goal_id: UUID_
    stamp: Time_


@dataclass
class GoalStatus_(IdlStruct, typename="action_msgs::msg::dds_::GoalStatus_"):
    goal_info: GoalInfo_
    status: int8


@dataclass
class GoalStatusArray_(IdlStruct, typename="action_msgs::msg::dds_::GoalStatusArray_"):
    status_list: sequence[GoalStatus_]


@dataclass
class SymbolicState_(IdlStruct, typename="asp_interfaces::msg::dds_::SymbolicState_"):
    header: Header_
    held_object: str
    inventory: sequence[str]


@dataclass
class Bool_(IdlStruct, typename="std_msgs::msg::dds_::Bool_"):
    data: bool


@dataclass
class Vector3_(IdlStruct, typename="geometry_msgs::msg::dds_::Vector3_"):
    x: float
    y: float
    z: float


@dataclass
class Quaternion_(IdlStruct, typename="geometry_msgs::msg::dds_::Quaternion_"):
    x: float
    y: float
    z: float
    w: float


@dataclass
class Transform_(IdlStruct, typename="geometry_msgs::msg::dds_::Transform_"):
    translation: Vector3_
    rotation: Quaternion_


@dataclass
class TransformStamped_(IdlStruct, typename="geometry_msgs::msg::dds_::TransformStamped_"):
    header: Header_
    child_frame_id: str
    transform: Transform_


@dataclass
class TFMessage_(IdlStruct, typename="tf2_msgs::msg::dds_::TFMessage_"):
    transforms: sequence[TransformStamped_]


@dataclass
class ParameterValue_(IdlStruct, typename="rcl_interfaces::msg::dds_::ParameterValue_"):
    type: uint8
    bool_value: bool
    integer_value: int64
    double_value: float
    string_value: str
    byte_array_value: sequence[uint8]
    bool_array_value: sequence[bool]
    integer_array_value: sequence[int64]
    double_array_value: sequence[float]
    string_array_value: sequence[str]


@dataclass
class ListParametersResult_(IdlStruct, typename="rcl_interfaces::msg::dds_::ListParametersResult_"):
    names: sequence[str]
    prefixes: sequence[str]


# rmw_cyclonedds puts {uint64 guid; int64 seq} in front of every request and reply
@dataclass
class ExecuteGoal_Request_(IdlStruct, typename="asp_interfaces::srv::dds_::ExecuteGoal_Request_"):
    guid: uint64
    seq: int64
    goal: str


@dataclass
class ExecuteGoal_Response_(IdlStruct, typename="asp_interfaces::srv::dds_::ExecuteGoal_Response_"):
    guid: uint64
    seq: int64
    success: bool
    error_code: uint16
    error_msg: str
    summary: str


@dataclass
class ExecuteGoal_Goal_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_Goal_"):
    goal: str


@dataclass
class ExecuteGoal_Result_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_Result_"):
    success: bool
    error_code: uint16
    error_msg: str
    summary: str


@dataclass
class ExecuteGoal_Feedback_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_Feedback_"):
    step: uint32
    tool_call: str
    success: bool
    outcome: str
    state: SymbolicState_


@dataclass
class SendGoal_Request_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_SendGoal_Request_"):
    guid: uint64
    seq: int64
    goal_id: UUID_
    goal: ExecuteGoal_Goal_


@dataclass
class SendGoal_Response_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_SendGoal_Response_"):
    guid: uint64
    seq: int64
    accepted: bool
    stamp: Time_


@dataclass
class GetResult_Request_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_GetResult_Request_"):
    guid: uint64
    seq: int64
    goal_id: UUID_


@dataclass
class GetResult_Response_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_GetResult_Response_"):
    guid: uint64
    seq: int64
    status: int8
    result: ExecuteGoal_Result_


@dataclass
class FeedbackMessage_(IdlStruct, typename="asp_interfaces::action::dds_::ExecuteGoal_FeedbackMessage_"):
    goal_id: UUID_
    feedback: ExecuteGoal_Feedback_


@dataclass
class CancelGoal_Request_(IdlStruct, typename="action_msgs::srv::dds_::CancelGoal_Request_"):
    guid: uint64
    seq: int64
    goal_info: GoalInfo_


@dataclass
class CancelGoal_Response_(IdlStruct, typename="action_msgs::srv::dds_::CancelGoal_Response_"):
    guid: uint64
    seq: int64
    return_code: int8
    goals_canceling: sequence[GoalInfo_]


@dataclass
class ListParameters_Request_(IdlStruct, typename="rcl_interfaces::srv::dds_::ListParameters_Request_"):
    guid: uint64
    seq: int64
    prefixes: sequence[str]
    depth: uint64


@dataclass
class ListParameters_Response_(IdlStruct, typename="rcl_interfaces::srv::dds_::ListParameters_Response_"):
    guid: uint64
    seq: int64
    result: ListParametersResult_


@dataclass
class GetParameters_Request_(IdlStruct, typename="rcl_interfaces::srv::dds_::GetParameters_Request_"):
    guid: uint64
    seq: int64
    names: sequence[str]


@dataclass
class GetParameters_Response_(IdlStruct, typename="rcl_interfaces::srv::dds_::GetParameters_Response_"):
    guid: uint64
    seq: int64
    values: sequence[ParameterValue_]


@dataclass
class LcState_(IdlStruct, typename="lifecycle_msgs::msg::dds_::State_"):
    id: uint8
    label: str


@dataclass
class LcTransition_(IdlStruct, typename="lifecycle_msgs::msg::dds_::Transition_"):
    id: uint8
    label: str


@dataclass
class TransitionDescription_(IdlStruct, typename="lifecycle_msgs::msg::dds_::TransitionDescription_"):
    transition: LcTransition_
    start_state: LcState_
    goal_state: LcState_


@dataclass
class GetState_Request_(IdlStruct, typename="lifecycle_msgs::srv::dds_::GetState_Request_"):
    guid: uint64
    seq: int64
    structure_needs_at_least_one_member: uint8


@dataclass
class GetState_Response_(IdlStruct, typename="lifecycle_msgs::srv::dds_::GetState_Response_"):
    guid: uint64
    seq: int64
    current_state: LcState_


@dataclass
class GetAvailableTransitions_Request_(
        IdlStruct, typename="lifecycle_msgs::srv::dds_::GetAvailableTransitions_Request_"):
    guid: uint64
    seq: int64
    structure_needs_at_least_one_member: uint8


@dataclass
class GetAvailableTransitions_Response_(
        IdlStruct, typename="lifecycle_msgs::srv::dds_::GetAvailableTransitions_Response_"):
    guid: uint64
    seq: int64
    available_transitions: sequence[TransitionDescription_]


@dataclass
class ChangeState_Request_(IdlStruct, typename="lifecycle_msgs::srv::dds_::ChangeState_Request_"):
    guid: uint64
    seq: int64
    transition: LcTransition_


@dataclass
class ChangeState_Response_(IdlStruct, typename="lifecycle_msgs::srv::dds_::ChangeState_Response_"):
    guid: uint64
    seq: int64
    success: bool


@dataclass
class ObjectMapSummary_(IdlStruct, typename="asp_interfaces::msg::dds_::ObjectMapSummary_"):
    header: Header_
    objects: uint32
    points: uint32
    keys: sequence[str]
    key_ids: sequence[uint32]


@dataclass
class Point_(IdlStruct, typename="geometry_msgs::msg::dds_::Point_"):
    x: float
    y: float
    z: float


@dataclass
class Pose_(IdlStruct, typename="geometry_msgs::msg::dds_::Pose_"):
    position: Point_
    orientation: Quaternion_


@dataclass
class ColorRGBA_(IdlStruct, typename="std_msgs::msg::dds_::ColorRGBA_"):
    r: float32
    g: float32
    b: float32
    a: float32


@dataclass
class Duration_(IdlStruct, typename="builtin_interfaces::msg::dds_::Duration_"):
    sec: int32
    nanosec: uint32


@dataclass
class CompressedImage_(IdlStruct, typename="sensor_msgs::msg::dds_::CompressedImage_"):
    header: Header_
    format: str
    data: sequence[uint8]


@dataclass
class UVCoordinate_(IdlStruct, typename="visualization_msgs::msg::dds_::UVCoordinate_"):
    u: float32
    v: float32


@dataclass
class MeshFile_(IdlStruct, typename="visualization_msgs::msg::dds_::MeshFile_"):
    filename: str
    data: sequence[uint8]


@dataclass
class Marker_(IdlStruct, typename="visualization_msgs::msg::dds_::Marker_"):
    header: Header_
    ns: str
    id: int32
    type: int32
    action: int32
    pose: Pose_
    scale: Vector3_
    color: ColorRGBA_
    lifetime: Duration_
    frame_locked: bool
    points: sequence[Point_]
    colors: sequence[ColorRGBA_]
    texture_resource: str
    texture: CompressedImage_
    uv_coordinates: sequence[UVCoordinate_]
    text: str
    mesh_resource: str
    mesh_file: MeshFile_
    mesh_use_embedded_materials: bool


@dataclass
class MarkerArray_(IdlStruct, typename="visualization_msgs::msg::dds_::MarkerArray_"):
    markers: sequence[Marker_]


@dataclass
class PointField_(IdlStruct, typename="sensor_msgs::msg::dds_::PointField_"):
    name: str
    offset: uint32
    datatype: uint8
    count: uint32


@dataclass
class PointCloud2_(IdlStruct, typename="sensor_msgs::msg::dds_::PointCloud2_"):
    header: Header_
    height: uint32
    width: uint32
    fields: sequence[PointField_]
    is_bigendian: bool
    point_step: uint32
    row_step: uint32
    data: sequence[uint8]
    is_dense: bool


# --- control_msgs/action/FollowJointTrajectory (Humble and Jazzy alike) ------------------

@dataclass
class Twist_(IdlStruct, typename="geometry_msgs::msg::dds_::Twist_"):
    linear: Vector3_
    angular: Vector3_


@dataclass
class JointTrajectoryPoint_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectoryPoint_"):
    positions: sequence[float]
    velocities: sequence[float]
    accelerations: sequence[float]
    effort: sequence[float]
    time_from_start: Duration_


@dataclass
class JointTrajectory_(IdlStruct, typename="trajectory_msgs::msg::dds_::JointTrajectory_"):
    header: Header_
    joint_names: sequence[str]
    points: sequence[JointTrajectoryPoint_]


@dataclass
class MultiDOFJointTrajectoryPoint_(
        IdlStruct, typename="trajectory_msgs::msg::dds_::MultiDOFJointTrajectoryPoint_"):
    transforms: sequence[Transform_]
    velocities: sequence[Twist_]
    accelerations: sequence[Twist_]
    time_from_start: Duration_


@dataclass
class MultiDOFJointTrajectory_(IdlStruct, typename="trajectory_msgs::msg::dds_::MultiDOFJointTrajectory_"):
    header: Header_
    joint_names: sequence[str]
    points: sequence[MultiDOFJointTrajectoryPoint_]


@dataclass
class JointTolerance_(IdlStruct, typename="control_msgs::msg::dds_::JointTolerance_"):
    name: str
    position: float
    velocity: float
    acceleration: float


@dataclass
class JointComponentTolerance_(IdlStruct, typename="control_msgs::msg::dds_::JointComponentTolerance_"):
    joint_name: str
    component: uint16
    position: float
    velocity: float
    acceleration: float


@dataclass
class FJT_Goal_(IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_Goal_"):
    trajectory: JointTrajectory_
    multi_dof_trajectory: MultiDOFJointTrajectory_
    path_tolerance: sequence[JointTolerance_]
    component_path_tolerance: sequence[JointComponentTolerance_]
    goal_tolerance: sequence[JointTolerance_]
    component_goal_tolerance: sequence[JointComponentTolerance_]
    goal_time_tolerance: Duration_


@dataclass
class FJT_Result_(IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_Result_"):
    error_code: int32
    error_string: str


@dataclass
class FJT_Feedback_(IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_Feedback_"):
    header: Header_
    joint_names: sequence[str]
    desired: JointTrajectoryPoint_
    actual: JointTrajectoryPoint_
    error: JointTrajectoryPoint_
    multi_dof_joint_names: sequence[str]
    multi_dof_desired: MultiDOFJointTrajectoryPoint_
    multi_dof_actual: MultiDOFJointTrajectoryPoint_
    multi_dof_error: MultiDOFJointTrajectoryPoint_


@dataclass
class FJT_SendGoal_Request_(
        IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_SendGoal_Request_"):
    guid: uint64
    seq: int64
    goal_id: UUID_
    goal: FJT_Goal_


@dataclass
class FJT_SendGoal_Response_(
        IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_SendGoal_Response_"):
    guid: uint64
    seq: int64
    accepted: bool
    stamp: Time_


@dataclass
class FJT_GetResult_Request_(
        IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_GetResult_Request_"):
    guid: uint64
    seq: int64
    goal_id: UUID_


@dataclass
class FJT_GetResult_Response_(
        IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_GetResult_Response_"):
    guid: uint64
    seq: int64
    status: int8
    result: FJT_Result_


@dataclass
class FJT_FeedbackMessage_(
        IdlStruct, typename="control_msgs::action::dds_::FollowJointTrajectory_FeedbackMessage_"):
    goal_id: UUID_
    feedback: FJT_Feedback_


# --- plumbing -----------------------------------------------------------------------------

# ROS 2 default QoS: reliable, volatile, keep-last 10; plain CDR (XCDR1) like rmw_cyclonedds
QOS = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.Volatile,
          Policy.History.KeepLast(10), Policy.DataRepresentation(use_cdrv0_representation=True))
# action status: reliable, transient-local, keep-last 1
STATUS_QOS = Qos(Policy.Reliability.Reliable(duration(seconds=1)), Policy.Durability.TransientLocal,
                 Policy.History.KeepLast(1), Policy.DataRepresentation(use_cdrv0_representation=True))

DP = DomainParticipant(int(os.environ.get("ROS_DOMAIN_ID", "0")))
TIMEOUT = float(os.environ.get("PEER_TIMEOUT", "20"))


def writer(name, ty, qos=QOS):
    return DataWriter(DP, Topic(DP, name, ty, qos=qos), qos=qos)


def reader(name, ty, qos=QOS):
    return DataReader(DP, Topic(DP, name, ty, qos=qos), qos=qos)


def wait_matched(entities, what):
    end = time.time() + TIMEOUT
    while time.time() < end:
        ok = True
        for e in entities:
            st = (e.get_publication_matched_status() if isinstance(e, DataWriter)
                  else e.get_subscription_matched_status())
            ok = ok and st.current_count > 0
        if ok:
            return
        time.sleep(0.05)
    emit(event="error", what=f"no match for {what}")
    sys.exit(2)


class ServiceClient:
    """A client with rmw_cyclonedds' request/reply mapping."""

    def __init__(self, name, req_type, resp_type):
        self.w = writer(f"rq/{name}Request", req_type)
        self.r = reader(f"rr/{name}Reply", resp_type)
        self.resp_type = resp_type
        self.guid = random.getrandbits(63)
        self.seq = 0
        wait_matched([self.w, self.r], name)
        time.sleep(0.3)  # let the server's writer match our reader too

    def call(self, req_type, poll=None, **fields):
        self.seq += 1
        self.w.write(req_type(guid=self.guid, seq=self.seq, **fields))
        end = time.time() + TIMEOUT
        while time.time() < end:
            for s in self.r.take(10):
                if isinstance(s, self.resp_type) and s.guid == self.guid and s.seq == self.seq:
                    return s
            if poll:
                poll()
            time.sleep(0.01)
        emit(event="error", what=f"no reply to {req_type.__name__}")
        sys.exit(3)


# --- modes --------------------------------------------------------------------------------

def mode_pub(topic, n):
    w = writer(f"rt/{topic.lstrip('/')}", String_)
    wait_matched([w], topic)
    time.sleep(0.3)
    for i in range(int(n)):
        w.write(String_(data=f"from cyclone {i}"))
        emit(event="sent", i=i)
        time.sleep(0.05)
    time.sleep(1.0)


def mode_sub(topic, n):
    r = reader(f"rt/{topic.lstrip('/')}", String_)
    # discovery is two-sided: a writer that matched this reader may send before this
    # reader knows the writer, and such samples are dropped; say when both know
    wait_matched([r], topic)
    emit(event="ready")
    got, end = 0, time.time() + TIMEOUT
    while got < int(n) and time.time() < end:
        for s in r.take(10):
            if isinstance(s, String_):
                emit(event="received", data=s.data)
                got += 1
        time.sleep(0.02)
    if got < int(n):
        emit(event="error", what=f"received {got} of {n}")
        sys.exit(4)


def mode_call(service, goal):
    c = ServiceClient(service.lstrip("/"), ExecuteGoal_Request_, ExecuteGoal_Response_)
    r = c.call(ExecuteGoal_Request_, goal=goal)
    emit(event="response", success=r.success, error_code=r.error_code,
         error_msg=r.error_msg, summary=r.summary)


def mode_state(topic):
    # latched: reliable, transient local, depth 1, like the action status topic
    r = reader(f"rt/{topic.lstrip('/')}", SymbolicState_, STATUS_QOS)
    end = time.time() + TIMEOUT
    while time.time() < end:
        for s in r.take(10):
            if isinstance(s, SymbolicState_):
                emit(event="state", held_object=s.held_object, inventory=list(s.inventory))
                return
        time.sleep(0.02)
    emit(event="error", what=f"no state on {topic}")
    sys.exit(5)


def mode_action(action, goal, cancel_after=None):
    base = f"{action.lstrip('/')}/_action/"
    send = ServiceClient(base + "send_goal", SendGoal_Request_, SendGoal_Response_)
    result = ServiceClient(base + "get_result", GetResult_Request_, GetResult_Response_)
    cancel = ServiceClient(base + "cancel_goal", CancelGoal_Request_, CancelGoal_Response_)
    fb = reader(f"rt/{base}feedback", FeedbackMessage_)
    status = reader(f"rt/{base}status", GoalStatusArray_, STATUS_QOS)
    wait_matched([fb, status], "feedback and status topics")
    time.sleep(0.3)
    gid = UUID_(uuid=list(uuid.uuid4().bytes))
    r = send.call(SendGoal_Request_, goal_id=gid, goal=ExecuteGoal_Goal_(goal=goal))
    emit(event="accepted", accepted=r.accepted, stamp=r.stamp.sec)
    if not r.accepted:
        return
    feedback = []
    statuses = set()
    cancelled = False

    def poll():
        nonlocal cancelled
        for f in fb.take(10):
            if isinstance(f, FeedbackMessage_) and list(f.goal_id.uuid) == list(gid.uuid):
                feedback.append(f.feedback.step)
                emit(event="feedback", step=f.feedback.step, tool_call=f.feedback.tool_call,
                     inventory=list(f.feedback.state.inventory))
        for s in status.take(10):
            if isinstance(s, GoalStatusArray_):
                for g in s.status_list:
                    if list(g.goal_info.goal_id.uuid) == list(gid.uuid):
                        statuses.add(int(g.status))

    if cancel_after is not None:
        end = time.time() + TIMEOUT
        while len(feedback) < int(cancel_after) and time.time() < end:
            poll()
            time.sleep(0.01)
        c = cancel.call(CancelGoal_Request_, goal_info=GoalInfo_(goal_id=gid, stamp=Time_(sec=0, nanosec=0)))
        emit(event="cancel", return_code=c.return_code, canceling=len(c.goals_canceling))
        cancelled = True
    # like rclpy: ask for the result at once; the server answers when the goal ends
    r = result.call(GetResult_Request_, poll=poll, goal_id=gid)
    poll()
    emit(event="result", status=r.status, success=r.result.success, error_code=r.result.error_code,
         error_msg=r.result.error_msg, summary=r.result.summary, feedback=feedback,
         statuses=sorted(statuses), cancelled=cancelled)


def read_one(topic, ty, qos, what):
    """The first sample of `ty` on `topic` within the timeout."""
    r = reader(f"rt/{topic.lstrip('/')}", ty, qos)
    end = time.time() + TIMEOUT
    while time.time() < end:
        for s in r.take(10):
            if isinstance(s, ty):
                return s
        time.sleep(0.02)
    emit(event="error", what=f"nothing on {topic} ({what})")
    sys.exit(6)


def endpoint_types(topic, min_readers):
    """The type names of `topic`'s discovered writers and readers, once `min_readers`
    readers are known (or at the timeout)."""
    from cyclonedds.builtin import (BuiltinDataReader, BuiltinTopicDcpsPublication,
                                    BuiltinTopicDcpsSubscription)
    found = {"writers": {}, "readers": {}}
    readers = {"writers": BuiltinDataReader(DP, BuiltinTopicDcpsPublication),
               "readers": BuiltinDataReader(DP, BuiltinTopicDcpsSubscription)}
    end = time.time() + TIMEOUT
    while time.time() < end and len(found["readers"]) < min_readers:
        for kind, r in readers.items():
            for e in r.take(64):
                if e.topic_name == topic:
                    found[kind][str(e.key)] = e.type_name
        time.sleep(0.05)
    return {"writers": sorted(found["writers"].values()),
            "readers": sorted(found["readers"].values())}


def edges(msg):
    return [[t.header.frame_id, t.child_frame_id] for t in msg.transforms]


def mode_map_view():
    """What RViz shows of the object map: the latched summary, markers and cloud."""
    summary = read_one("/asp/object_map", ObjectMapSummary_, STATUS_QOS, "the map summary")
    emit(event="summary", objects=summary.objects, points=summary.points,
         keys=list(summary.keys), key_ids=list(summary.key_ids))
    markers = read_one("/asp/markers", MarkerArray_, STATUS_QOS, "markers").markers
    emit(event="markers", frame=markers[0].header.frame_id if markers else "",
         actions=[m.action for m in markers],
         boxes=[{"id": m.id, "type": m.type, "frame": m.header.frame_id,
                 "centre": [m.pose.position.x, m.pose.position.y, m.pose.position.z],
                 "size": [m.scale.x, m.scale.y, m.scale.z]}
                for m in markers if m.ns == "objects"],
         labels={str(m.id): m.text for m in markers if m.ns == "labels"})
    cloud = read_one("/asp/map_cloud", PointCloud2_, STATUS_QOS, "the map cloud")
    emit(event="cloud", frame=cloud.header.frame_id, width=cloud.width,
         fields=[f.name for f in cloud.fields], bytes=len(cloud.data),
         point_step=cloud.point_step)


def mode_robot_user(node, goal):
    # the e-stop first, latched, before any node of the graph exists
    stop = writer("rt/asp/estop", Bool_, STATUS_QOS)
    stop.write(Bool_(data=True))
    emit(event="estop")
    # what rviz and robot_state_publisher users read
    emit(event="tf_static", edges=edges(read_one("/tf_static", TFMessage_, STATUS_QOS, "latched")))
    seen, end = set(), time.time() + TIMEOUT
    tf = reader("rt/tf", TFMessage_)
    while time.time() < end and not {("map", "odom"), ("odom", "base_link")} <= seen:
        for s in tf.take(10):
            if isinstance(s, TFMessage_):
                seen.update((a, b) for a, b in edges(s))
        time.sleep(0.02)
    emit(event="tf", edges=sorted(list(e) for e in seen))
    urdf = read_one("/robot_description", String_, STATUS_QOS, "latched").data
    emit(event="robot_description", chars=len(urdf), robot="<robot" in urdf)
    # `ros2 topic info /clock`: the types its writers and readers declare (echo refuses
    # a topic with more than one); every node's client library reads /clock
    emit(event="clock_types", **endpoint_types("rt/clock", min_readers=6))
    # `ros2 param list` and `ros2 param get`
    base = node.strip("/")
    names = ServiceClient(f"{base}/list_parameters", ListParameters_Request_,
                          ListParameters_Response_).call(
        ListParameters_Request_, prefixes=[], depth=0).result.names
    emit(event="parameters", names=list(names))
    values = ServiceClient(f"{base}/get_parameters", GetParameters_Request_,
                           GetParameters_Response_).call(
        GetParameters_Request_, names=list(names)).values
    emit(event="values", values={n: [v.type, v.bool_value, v.integer_value, v.double_value,
                                     v.string_value] for n, v in zip(names, values)})
    # a goal while stopped
    mode_call("/asp/execute_goal", goal)


def mode_lifecycle(node, goal):
    base = node.strip("/")
    get_state = ServiceClient(f"{base}/get_state", GetState_Request_, GetState_Response_)

    def state():
        return get_state.call(GetState_Request_,
                              structure_needs_at_least_one_member=0).current_state.label

    emit(event="state", label=state())
    available = ServiceClient(f"{base}/get_available_transitions",
                              GetAvailableTransitions_Request_,
                              GetAvailableTransitions_Response_).call(
        GetAvailableTransitions_Request_, structure_needs_at_least_one_member=0)
    emit(event="transitions", labels=[d.transition.label for d in available.available_transitions])
    change = ServiceClient(f"{base}/change_state", ChangeState_Request_, ChangeState_Response_)
    # as `ros2 lifecycle set`: the id and label of the transition it listed
    by_label = {d.transition.label: d.transition for d in available.available_transitions}
    r = change.call(ChangeState_Request_, transition=by_label["deactivate"])
    emit(event="deactivate", success=r.success, label=state())
    mode_call("/asp/execute_goal", goal)
    r = change.call(ChangeState_Request_, transition=LcTransition_(id=3, label="activate"))
    emit(event="activate", success=r.success, label=state())


# stretch_core's command groups in position mode (command_groups.py): the joints it takes
# and, for the absolute ones, the ranges of a Stretch 3 (its URDF's limits)
STRETCH_RANGES = {
    "joint_lift": (0.0, 1.1),
    "joint_arm": (0.0, 0.52),
    "wrist_extension": (0.0, 0.52),
    "joint_wrist_yaw": (-1.75, 4.0),
    "joint_wrist_pitch": (-1.57, 0.56),
    "joint_wrist_roll": (-3.14, 3.14),
    "joint_head_pan": (-3.9, 1.5),
    "joint_head_tilt": (-1.53, 0.79),
    "joint_gripper_finger_left": (-0.6, 0.6),
    "gripper_aperture": (-0.1, 0.17),
}
STRETCH_INCREMENTS = {"translate_mobile_base": 0.5, "rotate_mobile_base": 3.1416}
SUCCESSFUL, INVALID_GOAL, INVALID_JOINTS = 0, -1, -2
STATUS_EXECUTING, STATUS_SUCCEEDED, STATUS_ABORTED = 2, 4, 6


def stretch_check(goal):
    """(code, message) of stretch_core's checks of a goal, SUCCESSFUL when it passes."""
    names = list(goal.trajectory.joint_names)
    points = list(goal.trajectory.points)
    for n in names:
        if n not in STRETCH_RANGES and n not in STRETCH_INCREMENTS:
            return INVALID_JOINTS, f"unknown joint {n}"
    if len(set(names)) != len(names):
        return INVALID_JOINTS, f"a joint named twice: {names}"
    if "translate_mobile_base" in names and "rotate_mobile_base" in names:
        return INVALID_JOINTS, "translate_mobile_base and rotate_mobile_base together"
    if not points:
        return INVALID_GOAL, "no points"
    for p in points:
        if len(p.positions) != len(names):
            return INVALID_GOAL, f"{len(p.positions)} positions for {len(names)} joints"
        for n, v in zip(names, p.positions):
            if n in STRETCH_INCREMENTS:
                lim = STRETCH_INCREMENTS[n]
                lo, hi = -lim, lim
            else:
                lo, hi = STRETCH_RANGES[n]
            if not (lo <= v <= hi):
                return INVALID_GOAL, f"{n} = {v} outside [{lo}, {hi}]"
    return SUCCESSFUL, ""


def mode_stretch_driver(action, codes):
    codes = [int(c) for c in codes.split(",")]
    base = f"{action.lstrip('/')}/_action/"
    send_rq = reader(f"rq/{base}send_goalRequest", FJT_SendGoal_Request_)
    send_rr = writer(f"rr/{base}send_goalReply", FJT_SendGoal_Response_)
    result_rq = reader(f"rq/{base}get_resultRequest", FJT_GetResult_Request_)
    result_rr = writer(f"rr/{base}get_resultReply", FJT_GetResult_Response_)
    cancel_rq = reader(f"rq/{base}cancel_goalRequest", CancelGoal_Request_)
    cancel_rr = writer(f"rr/{base}cancel_goalReply", CancelGoal_Response_)
    feedback = writer(f"rt/{base}feedback", FJT_FeedbackMessage_)
    status = writer(f"rt/{base}status", GoalStatusArray_, STATUS_QOS)
    emit(event="ready")
    results, waiting, statuses = {}, [], []
    served = 0
    end = time.time() + TIMEOUT

    def publish_status():
        status.write(GoalStatusArray_(status_list=[
            GoalStatus_(goal_info=GoalInfo_(goal_id=g, stamp=Time_(sec=0, nanosec=0)), status=st)
            for g, st in statuses]))

    answered = set()
    while time.time() < end and (served < len(codes) or set(results) - answered):
        for rq in send_rq.take(10):
            if not isinstance(rq, FJT_SendGoal_Request_):
                continue
            key = bytes(rq.goal_id.uuid)
            now = time.time()
            send_rr.write(FJT_SendGoal_Response_(guid=rq.guid, seq=rq.seq, accepted=True,
                                                 stamp=Time_(sec=int(now), nanosec=0)))
            statuses.append((rq.goal_id, STATUS_EXECUTING))
            publish_status()
            traj = rq.goal.trajectory
            code, message = stretch_check(rq.goal)
            if code == SUCCESSFUL:
                code = codes[served] if served < len(codes) else SUCCESSFUL
                message = "" if code == SUCCESSFUL else "scripted failure"
                served += 1
            t = traj.points[-1].time_from_start if traj.points else Duration_(sec=0, nanosec=0)
            emit(event="goal", joint_names=list(traj.joint_names),
                 positions=[list(p.positions) for p in traj.points],
                 time_from_start=t.sec + t.nanosec * 1e-9, code=code, message=message)
            feedback.write(FJT_FeedbackMessage_(goal_id=rq.goal_id, feedback=FJT_Feedback_(
                header=Header_(stamp=Time_(sec=int(now), nanosec=0), frame_id=""),
                joint_names=list(traj.joint_names),
                desired=traj.points[-1] if traj.points else JointTrajectoryPoint_([], [], [], [], t),
                actual=JointTrajectoryPoint_([], [], [], [], t),
                error=JointTrajectoryPoint_([], [], [], [], t),
                multi_dof_joint_names=[],
                multi_dof_desired=MultiDOFJointTrajectoryPoint_([], [], [], t),
                multi_dof_actual=MultiDOFJointTrajectoryPoint_([], [], [], t),
                multi_dof_error=MultiDOFJointTrajectoryPoint_([], [], [], t))))
            final = STATUS_SUCCEEDED if code == SUCCESSFUL else STATUS_ABORTED
            statuses[-1] = (rq.goal_id, final)
            publish_status()
            results[key] = (final, FJT_Result_(error_code=code, error_string=message))
        for rq in result_rq.take(10):
            if isinstance(rq, FJT_GetResult_Request_):
                waiting.append(rq)
        still = []
        for rq in waiting:
            key = bytes(rq.goal_id.uuid)
            if key in results:
                st, res = results[key]
                result_rr.write(FJT_GetResult_Response_(guid=rq.guid, seq=rq.seq, status=st, result=res))
                answered.add(key)
            else:
                still.append(rq)
        waiting = still
        for rq in cancel_rq.take(10):
            if isinstance(rq, CancelGoal_Request_):
                # every goal ends at once here: nothing is left to cancel
                cancel_rr.write(CancelGoal_Response_(guid=rq.guid, seq=rq.seq, return_code=2,
                                                     goals_canceling=[]))
        time.sleep(0.01)
    # let the last replies reach the client before the participant goes
    time.sleep(1.0)
    if served < len(codes):
        emit(event="error", what=f"served {served} of {len(codes)} goals")
        sys.exit(7)


if __name__ == "__main__":
    mode, *rest = sys.argv[1:]
    {"pub": mode_pub, "sub": mode_sub, "call": mode_call, "state": mode_state,
     "action": mode_action, "robot_user": mode_robot_user,
     "lifecycle": mode_lifecycle, "map_view": mode_map_view,
     "stretch_driver": mode_stretch_driver}[mode](*rest)
