"""The supervised start of a rollout learner (conf/pretrain/): a shared checkpoint, or SUPERVISED trained in the
run's ``pretrain/`` folder with the run's trainer settings, loggers and callbacks."""

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


def instantiate_group(
    group: DictConfig | None, leave_out: str | None = None, **where_taken: Any
) -> list[Any]:
    """Every entry of a config group with a ``_target_`` (the run's callbacks or loggers), built; the one whose
    target ends with ``leave_out`` skipped, and each of ``where_taken`` given to the entries that have that key."""
    return [
        hydra.utils.instantiate(c, **{k: v for k, v in where_taken.items() if k in c})
        for c in (group or {}).values()
        if c is not None and "_target_" in c and not (leave_out and c._target_.endswith(leave_out))
    ]


def pretraining(cfg: DictConfig, vocabulary: list[str]) -> tuple[Any, Any, pl.Trainer, Any]:
    """The supervised initialisation of a rollout learner, as (model, data, trainer, checkpoint callback):
    ``pretrain.epochs`` of SUPERVISED on the demonstrated training examples (``data.demonstration_fraction``),
    clipped at ``pretrain.gradient_clip``, saved under ``pretrain/`` of the run."""
    from blocks.checks import accepted_keys
    from blocks.data.demonstrations import DemonstrationDataModule
    from blocks.learn.supervised import SupervisedLearner

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
        # the run's own, less its checkpointing (the start keeps its own file), writing under pretrain/
        callbacks=[
            checkpoint,
            *instantiate_group(cfg.get("callbacks"), ".ModelCheckpoint"),
            RunRecord(make_record(cfg)),
        ],
        logger=instantiate_group(cfg.get("logger"), save_dir=str(out)),
    )
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


def starts_from_another_network(cfg: DictConfig, ckpt_path: str | None) -> bool:
    """Whether the learner begins from another network's weights (``model.init_checkpoint``) and none is named,
    on a fresh start: the fits :func:`supervised_start` decides for."""
    return "init_checkpoint" in cfg.model and not cfg.model.init_checkpoint and not ckpt_path


def wants_supervised_start(cfg: DictConfig) -> bool:
    """The one rule for a supervised start: ``pretrain=supervised`` with epochs, and demonstrations to learn from
    (the paper's 0 % has none). ``pretrain=none`` (w/o sup. init, DQN, SPO) has no epochs."""
    return cfg.pretrain.epochs > 0 and cfg.data.get("demonstration_fraction", 1.0) != 0


def supervised_start(cfg: DictConfig, vocabulary: list[str]) -> str | None:
    """Where a learner that starts from another network starts: ``pretrain.checkpoint`` (one start shared by a
    sweep's runs, unless ``pretrain.shared=false``: a run whose network differs from it), else
    ``pretrain.epochs`` of SUPERVISED trained here; None when :func:`wants_supervised_start` says no."""
    if not wants_supervised_start(cfg):
        return None
    shared = cfg.pretrain.get("checkpoint") if cfg.pretrain.get("shared", True) else None
    return shared or pretrain_supervised(cfg, vocabulary)
