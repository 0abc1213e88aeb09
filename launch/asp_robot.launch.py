"""ASP's product nodes on a real robot, next to its own camera driver, MoveIt 2
(move_group), Nav2 (with a map server or SLAM on /map) and gripper controller, as
`asp launch robot` starts them. Frames are rendered by the camera (no render service)
and the verifier sees the gripper state and tool pose (no simulator ground truth).

  ros2 launch launch/asp_robot.launch.py params_file:=/path/to/my_robot.yaml

Put what differs on your robot in params_file, in the ROS 2 parameter-file layout
(see config/*.yaml for every key), for example:

  /**:
    ros__parameters:
      cameras: {topic_prefix: /camera/, reliable: false}
  skill_executor_node:
    ros__parameters:
      interfaces: {move_group_action: /move_action, gripper_action: /xarm_gripper/gripper_action}
  agent_node:
    ros__parameters:
      mobile: true

Arguments: those of _asp_nodes.launch.py (bin_dir, config_dir, params_file, extra_args).
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression

HERE = os.path.dirname(os.path.abspath(__file__))
ROBOT_ARGS = "--set /**.cameras.sim_render=false --set skill_executor_node.observer=none"


def generate_launch_description():
    return LaunchDescription(
        [DeclareLaunchArgument(a, default_value=d) for a, d in [
            ("bin_dir", os.environ.get("ASP_BIN_DIR", "/opt/asp/bin")),
            ("config_dir", os.environ.get("ASP_CONFIG_DIR", "/opt/asp/config")),
            ("params_file", ""),
            ("extra_args", ""),
        ]]
        + [IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(HERE, "_asp_nodes.launch.py")),
            launch_arguments=[
                ("bin_dir", LaunchConfiguration("bin_dir")),
                ("config_dir", LaunchConfiguration("config_dir")),
                ("params_file", LaunchConfiguration("params_file")),
                # the robot's defaults first, so extra_args can still override them
                ("extra_args", PythonExpression(["'" + ROBOT_ARGS + " ' + '", LaunchConfiguration("extra_args"), "'"])),
            ],
        )]
    )
