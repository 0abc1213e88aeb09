"""Include: ASP's node binaries as processes (not a ROS package: the binaries are pure Rust
and live in one folder, /opt/asp/bin in the Docker image).

Launch arguments:
  bin_dir      folder of the node binaries      [$ASP_BIN_DIR, else /opt/asp/bin]
  config_dir   folder of the parameter files    [$ASP_CONFIG_DIR, else /opt/asp/config]
  params_file  an extra ROS 2 parameter file read after config_dir (robot-specific
               values: MoveIt/Nav2 names, camera topics, safety limits) ['' = none]
  nodes        comma-separated nodes to start, in order
  extra_args   further arguments for every node, e.g. "--set agent_node.mobile=true"
  respawn      start a node again when it exits (as `asp launch` does)  [true]
  respawn_delay  seconds before it is started again  [1.0]
"""
import os

from launch import LaunchDescription
from launch.actions import DeclareLaunchArgument, OpaqueFunction, ExecuteProcess
from launch.substitutions import LaunchConfiguration

PRODUCT_NODES = "verifier_node,object_map_node,affordance_node,skill_executor_node,go_to_node,agent_node"


def _processes(context):
    bin_dir = LaunchConfiguration("bin_dir").perform(context)
    config_dir = LaunchConfiguration("config_dir").perform(context)
    params_file = LaunchConfiguration("params_file").perform(context)
    extra = LaunchConfiguration("extra_args").perform(context).split()
    scenario = LaunchConfiguration("scenario").perform(context)
    respawn = LaunchConfiguration("respawn").perform(context).lower() in ("true", "1", "yes")
    respawn_delay = float(LaunchConfiguration("respawn_delay").perform(context))
    out = []
    for node in [n.strip() for n in LaunchConfiguration("nodes").perform(context).split(",") if n.strip()]:
        cmd = [os.path.join(bin_dir, node), "--config-dir", config_dir] + extra
        if node == "sim_node" and scenario:
            cmd += ["--scenario", scenario]
        if params_file:
            cmd += ["--ros-args", "--params-file", params_file]
        # SIGINT first (the nodes stop their servers and exit 0), SIGTERM after 10 s; a
        # node that dies is started again: agent_node ends the goal it ran (code 25),
        # holds the robot, and takes goals again once the node's heartbeat is back
        # glibc's malloc (the C and C++ libraries'; the nodes' own allocator is jemalloc),
        # held at its initial mmap threshold and two arenas: image-sized buffers then do
        # not fragment its heap (asp_nodes::launch::MALLOC_ENV says why)
        env = {k: os.environ.get(k, v) for k, v in
               (("MALLOC_MMAP_THRESHOLD_", "131072"), ("MALLOC_ARENA_MAX", "2"))}
        out.append(ExecuteProcess(cmd=cmd, name=node, output="screen", sigterm_timeout="10",
                                  respawn=respawn, respawn_delay=respawn_delay,
                                  additional_env=env))
    return out


def generate_launch_description():
    return LaunchDescription([
        DeclareLaunchArgument("bin_dir", default_value=os.environ.get("ASP_BIN_DIR", "/opt/asp/bin")),
        DeclareLaunchArgument("config_dir", default_value=os.environ.get("ASP_CONFIG_DIR", "/opt/asp/config")),
        DeclareLaunchArgument("params_file", default_value=""),
        DeclareLaunchArgument("nodes", default_value=PRODUCT_NODES),
        DeclareLaunchArgument("extra_args", default_value=""),
        DeclareLaunchArgument("scenario", default_value=""),
        DeclareLaunchArgument("respawn", default_value="true"),
        DeclareLaunchArgument("respawn_delay", default_value="1.0"),
        OpaqueFunction(function=_processes),
    ])
