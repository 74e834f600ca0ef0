"""The world as torch operations on any device: a batch of boards stepped, rewarded and drawn without leaving it.

``blocks.world`` (numpy) stays the reference and the CPU default; this copy of its rules gives the same boards,
rewards and pictures (tested against it) so that on-policy learners can roll out hundreds of boards on a GPU
without copying frames to the host (``data.simulator=torch``).
"""

from blocks.tensor_world.env import TensorBlocksEnv
from blocks.tensor_world.renderer import HostRenderer, TensorRenderer, device_renderer

__all__ = ["HostRenderer", "TensorBlocksEnv", "TensorRenderer", "device_renderer"]
