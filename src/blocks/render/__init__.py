"""What the agent sees: the camera, the batched renderer and the frame history."""

from blocks.render.camera import Camera
from blocks.render.history import FrameHistory, standardize
from blocks.render.renderer import Renderer

__all__ = ["Camera", "FrameHistory", "Renderer", "standardize"]
