"""The policy: one backbone shared by every learner, and its factored action distribution. Knows no corpus files."""

from blocks.model.distribution import FactoredActionDistribution, from_action, to_action
from blocks.model.policy import PolicyNetwork

__all__ = ["FactoredActionDistribution", "PolicyNetwork", "from_action", "to_action"]
