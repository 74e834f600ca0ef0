"""Learners (LightningModules) and their data streams (LightningDataModules)."""

from blocks.learn.bandit import BanditLearner
from blocks.learn.base import PolicyLearner
from blocks.learn.data import DemonstrationDataModule, RolloutDataModule
from blocks.learn.distill import DistillationLearner
from blocks.learn.load import load_learner
from blocks.learn.on_policy import RolloutLearner
from blocks.learn.oracle import OracleLearner
from blocks.learn.spo import SPOLearner
from blocks.learn.supervised import SupervisedLearner

__all__ = [
    "BanditLearner", "DemonstrationDataModule", "DistillationLearner", "OracleLearner", "PolicyLearner",
    "RolloutDataModule", "RolloutLearner", "SPOLearner", "SupervisedLearner", "load_learner",
]  # fmt: skip
