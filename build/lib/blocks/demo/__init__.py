"""A local page to try the agents: ``python -m blocks.demo`` (or ``make demo``), then http://127.0.0.1:7860."""

from blocks.demo.app import AGENTS, DemoApp, DemoError
from blocks.demo.server import DemoServer

__all__ = ["AGENTS", "DemoApp", "DemoError", "DemoServer"]
