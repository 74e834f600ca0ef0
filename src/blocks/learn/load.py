"""Any learner's checkpoint as its LightningModule, whatever its kind (for training on in a notebook)."""

from __future__ import annotations

import pytorch_lightning as pl
import torch

from blocks.errors import CheckpointError
from blocks.learn.bandit import BanditLearner
from blocks.learn.base import PolicyLearner
from blocks.learn.distill import DistillationLearner
from blocks.learn.dqn import DQNLearner
from blocks.learn.goal import GoalLearner
from blocks.learn.oracle import OracleLearner
from blocks.learn.perception import PerceptionLearner
from blocks.learn.spo import SPOLearner
from blocks.learn.supervised import SupervisedLearner
from blocks.learn.target import TargetLearner
from blocks.model.checkpoint import load_file

LEARNERS = {
    cls.kind: cls
    for cls in (
        SupervisedLearner,
        BanditLearner,
        OracleLearner,
        DistillationLearner,
        SPOLearner,
        TargetLearner,
        DQNLearner,
        PerceptionLearner,
        GoalLearner,
    )
}


def load_learner(path: str, map_location: str | torch.device = "cpu") -> PolicyLearner | pl.LightningModule:
    """Any learner's checkpoint as its LightningModule (to train on in a notebook), in eval mode: the policy
    learners', the board reader's and the goal network's.

    To act, :meth:`PolicyAgent.from_checkpoint` or :func:`blocks.model.checkpoint.load_policy` need no Lightning.
    """
    raw = load_file(path, map_location, mmap=True)
    record = raw.get("hyper_parameters") if isinstance(raw, dict) else None
    kind = (record or {}).get("kind")
    if kind not in LEARNERS:
        raise CheckpointError(
            f"{path}: not a blocks learner checkpoint (kind {kind!r}; one of {', '.join(LEARNERS)})"
        )
    return LEARNERS[kind].load_from_checkpoint(path, map_location=map_location, weights_only=True).eval()
