"""What the agent sees: the camera, the batched renderers (flat and the release's) and the frame history."""

from blocks.render.camera import Camera
from blocks.render.factory import RENDERERS, make_renderer
from blocks.render.history import FrameHistory, standardize
from blocks.render.release import ReleaseRenderer
from blocks.render.renderer import Renderer

__all__ = [
    "RENDERERS",
    "Camera",
    "FrameHistory",
    "ReleaseRenderer",
    "Renderer",
    "make_renderer",
    "standardize",
]
