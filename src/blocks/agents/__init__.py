"""Agents that act in the vector environment: the non-learned baselines (learned policies join later)."""

from blocks.agents.baselines import Agent, DemonstrationAgent, RandomAgent, StopAgent

__all__ = ["Agent", "DemonstrationAgent", "RandomAgent", "StopAgent"]
