"""Agents that act in the vector environment: the non-learned baselines here; learned ones in `policy` and `goal`."""

from blocks.agents.baselines import Agent, DemonstrationAgent, RandomAgent, StopAgent

__all__ = ["Agent", "DemonstrationAgent", "RandomAgent", "StopAgent"]
