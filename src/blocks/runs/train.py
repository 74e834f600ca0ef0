"""What ``train.py`` does: check the config, compose the objects it names, pretrain if asked, fit, evaluate."""

from __future__ import annotations

import logging
import warnings
from typing import Any

import hydra
import pytorch_lightning as pl
from omegaconf import DictConfig, OmegaConf

from blocks.checks import accepted_keys, check_config
from blocks.engine import tune_process
from blocks.runs.final_eval import final_evaluation
from blocks.runs.pretrain import instantiate_group, starts_from_another_network, supervised_start
from blocks.runs.record import RunRecord, make_record, restore_hydra_record, resumed_config
from blocks.runs.resume import finished_record, resume_path, stopped_pretraining

log = logging.getLogger(__name__)


def name_checkpoints_by_step(cfg: DictConfig) -> None:
    """Put the step in the checkpoint file name when the run validates more than once an epoch: with one name
    per epoch every validation would overwrite the one before (no version counter), the tune-best among them."""
    checkpoint = OmegaConf.select(cfg, "callbacks.model_checkpoint")
    interval = OmegaConf.select(cfg, "trainer.val_check_interval")
    if checkpoint is None or interval is None or (isinstance(interval, float) and interval == 1.0):
        return
    if "{step" not in checkpoint.filename:
        checkpoint.filename = f"{checkpoint.filename}_step_{{step:06d}}"
        log.info("trainer.val_check_interval=%s: checkpoints named %s", interval, checkpoint.filename)


class _NoAdvert(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not str(record.msg).startswith("💡 Tip")


def quiet_lightning() -> None:
    """Drop two lines Lightning prints on every fit that a user can do nothing about: an advertisement for its
    cloud logger, and a deprecation torch 2.13 raises inside Lightning's own code (``LeafSpec``)."""
    warnings.filterwarnings(
        "ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning
    )
    rank_zero = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    if not any(isinstance(f, _NoAdvert) for f in rank_zero.filters):
        rank_zero.addFilter(_NoAdvert())


def train(cfg: DictConfig) -> dict[str, float]:
    """Fit the configured learner, then evaluate its selected checkpoint; returns the last logged metrics."""
    quiet_lightning()
    check_config(cfg)
    ckpt_path = resume_path(cfg)
    recorded = ckpt_path or stopped_pretraining(cfg)
    if recorded:  # go on with the run's own configuration, not with what this command line alone composes
        cfg = resumed_config(cfg, recorded)
        restore_hydra_record(cfg)
        check_config(cfg)
    name_checkpoints_by_step(cfg)
    tune_process(cfg.get("threads"))
    finished = finished_record(cfg, ckpt_path)
    if finished is not None:
        log.info("%s: finished and evaluated already (final_eval.json); nothing to do", cfg.paths.output_dir)
        return {k: float(v) for k, v in finished.items() if isinstance(v, (int, float))}
    pl.seed_everything(cfg.seed, workers=True)

    datamodule = hydra.utils.instantiate(cfg.data)
    extra: dict[str, Any] = {}
    if "vocabulary" in (accepted_keys(cfg.model._target_) or ()):  # the learners that read instructions
        extra["vocabulary"] = datamodule.vocabulary.to_list()
    if starts_from_another_network(cfg, ckpt_path):
        extra["init_checkpoint"] = supervised_start(cfg, extra["vocabulary"])
        pl.seed_everything(cfg.seed, workers=True)
    model = hydra.utils.instantiate(cfg.model, **extra, _convert_="all")
    if "render" in cfg.data:
        model.hparams["render"] = cfg.data.render  # the record names the picture it learnt from

    trainer: pl.Trainer = hydra.utils.instantiate(
        cfg.trainer,
        callbacks=[*instantiate_group(cfg.get("callbacks")), RunRecord(make_record(cfg))],
        logger=instantiate_group(cfg.get("logger")),
    )
    trainer.fit(model, datamodule, ckpt_path=ckpt_path, weights_only=True)
    metrics = {k: float(v) for k, v in trainer.callback_metrics.items()}
    log.info("final metrics: %s", metrics)
    final_evaluation(cfg, trainer, model)
    return metrics
