"""The learners (LightningModules): what each optimises, given batches from :mod:`blocks.data`."""

from blocks.learn.bandit import BanditLearner
from blocks.learn.base import PolicyLearner
from blocks.learn.distill import DistillationLearner
from blocks.learn.load import load_learner
from blocks.learn.oracle import OracleLearner
from blocks.learn.rollout_learner import RolloutLearner
from blocks.learn.spo import SPOLearner
from blocks.learn.supervised import SupervisedLearner

__all__ = [
    "BanditLearner", "DistillationLearner", "OracleLearner", "PolicyLearner", "RolloutLearner", "SPOLearner",
    "SupervisedLearner", "load_learner",
]  # fmt: skip
