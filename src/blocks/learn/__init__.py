"""Learners (LightningModules) and their data streams (LightningDataModules)."""

from blocks.learn.bandit import BanditLearner
from blocks.learn.base import PolicyLearner, load_learner
from blocks.learn.data import DemonstrationDataModule, RolloutDataModule
from blocks.learn.supervised import SupervisedLearner

__all__ = [
    "BanditLearner", "DemonstrationDataModule", "PolicyLearner", "RolloutDataModule", "SupervisedLearner",
    "load_learner",
]  # fmt: skip
