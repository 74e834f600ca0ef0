"""The supervised start of a rollout learner: a shared checkpoint, or SUPERVISED trained in the run's ``pretrain/``."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import hydra
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from blocks.runs.record import RunRecord, make_record
from blocks.runs.resume import resume_path

log = logging.getLogger(__name__)


def pretraining(cfg: DictConfig, vocabulary: list[str]) -> tuple[Any, Any, pl.Trainer, Any]:
    """The supervised initialisation of a rollout learner, as (model, data, trainer, checkpoint callback):
    ``pretrain.epochs`` of SUPERVISED on the demonstrated training examples (``data.demonstration_fraction``),
    clipped at ``pretrain.gradient_clip``, saved under ``pretrain/`` of the run."""
    from blocks.checks import accepted_keys
    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.learn.supervised import SupervisedLearner
    from blocks.runs.callbacks import GracefulStop, ProgressBar

    out = Path(cfg.paths.output_dir) / "pretrain"
    # the corpus, picture and split settings the rollout learner's data shares with the demonstrations
    accepted = accepted_keys("blocks.data.demonstrations.DemonstrationDataModule")
    shared = (accepted - {"batch_size"}).intersection(cfg.data)
    data = DemonstrationDataModule(
        batch_size=cfg.pretrain.batch_size, **{k: cfg.data[k] for k in sorted(shared)}
    )
    model = SupervisedLearner(
        vocabulary,
        OmegaConf.to_container(cfg.model.network, resolve=True),
        lr=cfg.pretrain.lr,
        goal_loss_weight=cfg.model.goal_loss_weight,
    )
    model.hparams["render"] = cfg.data.render  # the record names the picture it learnt from
    trainer_cfg = OmegaConf.merge(
        cfg.trainer,
        {
            "max_epochs": cfg.pretrain.epochs,
            "default_root_dir": str(out),
            "gradient_clip_val": cfg.pretrain.gradient_clip,
            "check_val_every_n_epoch": cfg.pretrain.epochs,
        },
    )
    checkpoint = pl.callbacks.ModelCheckpoint(
        dirpath=out / "checkpoints", filename="pretrain", save_last=True
    )  # last.ckpt: where an interrupted pretraining resumes
    trainer = hydra.utils.instantiate(
        trainer_cfg,
        callbacks=[
            checkpoint, ProgressBar(refresh_rate=10), GracefulStop(), RunRecord(make_record(cfg))
        ],
        logger=pl.loggers.CSVLogger(str(out), name="csv"),
    )  # fmt: skip
    return model, data, trainer, checkpoint


def pretrain_supervised(cfg: DictConfig, vocabulary: list[str]) -> str | None:
    """Run :func:`pretraining`; the path of the checkpoint it wrote. With ``ckpt_path=last`` or ``auto`` (a sweep job run
    again) an interrupted pretraining goes on from its own ``last.ckpt``, and a finished one is used as it is."""
    model, data, trainer, checkpoint = pretraining(cfg, vocabulary)
    log.info("supervised initialisation: %d epochs", cfg.pretrain.epochs)
    resume = resume_path(
        cfg, Path(checkpoint.dirpath).parent, required=False
    )  # a run's first start: none yet
    trainer.fit(model, data, ckpt_path=resume, weights_only=True)
    trainer.strategy.barrier()
    # Lightning names the file pretrain-v1.ckpt when the folder already holds one (a rerun in the same run
    # directory): take the file this run wrote, not an older one with perhaps another network.
    return checkpoint.best_model_path or resume  # resumed after its end: nothing new written


def supervised_start(cfg: DictConfig, vocabulary: list[str]) -> str | None:
    """Where a rollout learner starts: ``pretrain.checkpoint`` (one start shared by a sweep's runs, unless
    ``pretrain.shared=false``: a run whose network differs from it), else ``pretrain.epochs`` of SUPERVISED trained
    here; None without epochs or demonstrations (the paper's 0 %)."""
    if cfg.pretrain.epochs <= 0 or cfg.data.get("demonstration_fraction", 1.0) == 0:
        return None
    shared = cfg.pretrain.get("checkpoint") if cfg.pretrain.get("shared", True) else None
    return shared or pretrain_supervised(cfg, vocabulary)
