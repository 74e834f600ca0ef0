"""Any learner's checkpoint as its LightningModule, whatever its kind (for training on in a notebook)."""

from __future__ import annotations

import torch

from blocks.errors import CheckpointError
from blocks.learn.bandit import BanditLearner
from blocks.learn.base import PolicyLearner
from blocks.learn.distill import DistillationLearner
from blocks.learn.dqn import DQNLearner
from blocks.learn.oracle import OracleLearner
from blocks.learn.spo import SPOLearner
from blocks.learn.supervised import SupervisedLearner
from blocks.learn.target import TargetLearner
from blocks.model.checkpoint import read_checkpoint

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
    )
}


def load_learner(path: str, map_location: str | torch.device = "cpu") -> PolicyLearner:
    """Any learner's checkpoint as its LightningModule (to train on in a notebook), in eval mode.

    To act, :meth:`PolicyAgent.from_checkpoint` or :func:`blocks.model.checkpoint.load_policy` need no Lightning.
    """
    kind = read_checkpoint(path, map_location).hparams.get("kind")
    if kind not in LEARNERS:
        raise CheckpointError(f"{path} is not a blocks learner checkpoint (kind {kind!r})")
    return LEARNERS[kind].load_from_checkpoint(path, map_location=map_location, weights_only=True).eval()
