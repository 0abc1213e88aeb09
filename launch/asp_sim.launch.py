"""ASP on the embedded simulator: sim_node (camera topics, /tf, /map, MoveGroup,
NavigateToPose, GripperCommand, planning scene, and the sim-only ground truth) and every
product node, as `asp launch sim` starts them.

  ros2 launch launch/asp_sim.launch.py
  ros2 launch launch/asp_sim.launch.py scenario:=scenarios/tabletop/apple_in_bowl.yaml
  ros2 action send_goal --feedback /asp/execute asp_interfaces/action/ExecuteGoal "{goal: 'put the apple in the bowl'}"

Arguments: those of _asp_nodes.launch.py (bin_dir, config_dir, params_file, extra_args),
plus scenario (a scenario file relative to config_dir; '' = sim_node.world).
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, IncludeLaunchDescription
from launch.launch_description_sources import PythonLaunchDescriptionSource
from launch.substitutions import LaunchConfiguration, PythonExpression

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = "sim_node,verifier_node,object_map_node,affordance_node,skill_executor_node,go_to_node,agent_node"
# as `asp launch sim` sets them: the nodes stamp with the simulator's /clock, the
# agent may drive the simulated robot's base, and the cameras stream at 5 Hz as a
# robot's do (the nodes read the streams, not the render service)
SIM_ARGS = (
    "--set /**.use_sim_time=true --set agent_node.mobile=true"
    " --set sim_node.camera.rate_hz=5.0 --set /**.cameras.sim_render=false"
)


def generate_launch_description():
    passed = ["bin_dir", "config_dir", "params_file", "scenario"]
    return LaunchDescription(
        [DeclareLaunchArgument(a, default_value=d) for a, d in [
            ("bin_dir", os.environ.get("ASP_BIN_DIR", "/opt/asp/bin")),
            ("config_dir", os.environ.get("ASP_CONFIG_DIR", "/opt/asp/config")),
            ("params_file", ""),
            ("extra_args", ""),
            ("scenario", ""),
        ]]
        + [IncludeLaunchDescription(
            PythonLaunchDescriptionSource(os.path.join(HERE, "_asp_nodes.launch.py")),
            launch_arguments=[(a, LaunchConfiguration(a)) for a in passed] + [
                ("nodes", NODES),
                # the simulation's defaults first, so extra_args can still override them
                ("extra_args", PythonExpression(["'" + SIM_ARGS + " ' + '", LaunchConfiguration("extra_args"), "'"])),
            ],
        )]
    )
