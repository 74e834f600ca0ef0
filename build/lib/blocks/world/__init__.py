"""The simulator: pure numpy, no torch. Geometry, transitions, rewards, metrics, planner, environments."""

from blocks.world.env import BlocksEnv
from blocks.world.geometry import HORIZON, NUM_ACTIONS, STOP, InvalidActionError, action_id
from blocks.world.metrics import EpisodeResult, distance_error, summarize
from blocks.world.planner import Demonstration, demonstration, plan
from blocks.world.rewards import RewardConfig
from blocks.world.task import Task
from blocks.world.vector_env import VectorBlocksEnv

__all__ = [
    "HORIZON", "NUM_ACTIONS", "STOP", "BlocksEnv", "Demonstration", "EpisodeResult", "InvalidActionError",
    "RewardConfig", "Task", "VectorBlocksEnv", "action_id", "demonstration", "distance_error", "plan", "summarize",
]  # fmt: skip
