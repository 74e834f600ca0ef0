"""The configs composed in-process: every model's keys are its learner's, ablations compose, mistakes are named,
and the supervised start of a rollout learner gets the settings it is given."""

from __future__ import annotations

import inspect
import os
import re
from pathlib import Path

import pytest
import pytorch_lightning as pl
import torch
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf, open_dict

from blocks.checks import accepted_keys, check_config
from blocks.cli import one_line, usage_error
from blocks.errors import CheckpointError, ConfigError
from blocks.runs.pretrain import pretraining
from blocks.runs.train import name_checkpoints_by_step

from .conftest import REPO

MODELS = ("supervised", "bandit", "reinforce", "oracle", "distill", "spo", "perception", "goal_predictor", "target",
          "dqn")  # fmt: skip


def composed(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("train", overrides=list(overrides))
    with open_dict(cfg):
        cfg.paths.output_dir = "/tmp/blocks-test-run"
    return cfg


@pytest.mark.parametrize("model", MODELS)
def test_a_models_config_lists_exactly_what_its_learner_reads(model):
    cfg = composed(f"model={model}")
    accepted = accepted_keys(cfg.model._target_)
    given = set(cfg.model) - {"_target_"}
    # Every key of the config is an argument of the learner, and every argument but the vocabulary is in the config.
    assert given == accepted - {"vocabulary"}, (model, given ^ (accepted - {"vocabulary"}))
    signature = inspect.signature(__import__("hydra").utils.get_object(cfg.model._target_))
    assert not any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())


def test_a_misspelt_or_foreign_key_is_named_before_anything_starts():
    cfg = composed("model=oracle")
    with open_dict(cfg):
        cfg.model.entropy_coef = 0.1  # the bandit's, not the oracle learner's
    with pytest.raises(ConfigError, match=r"model.entropy_coef: not a key of OracleLearner \(model=oracle\)|"
                                          r"model.entropy_coef: not a key of OracleLearner"):  # fmt: skip
        check_config(cfg)
    cfg = composed("model=supervised")
    with open_dict(cfg):
        cfg.data.batch_sise = 8
    with pytest.raises(ConfigError, match="data.batch_sise: not a key of DemonstrationDataModule"):
        check_config(cfg)
    cfg = composed("model=supervised", "+network.fusion=film")
    with pytest.raises(ConfigError, match="network.fusion='film' was removed"):
        check_config(cfg)
    cfg = composed("model=bandit", "ckpt_path=/nonexistent/last.ckpt")
    with pytest.raises(CheckpointError, match="ckpt_path=/nonexistent/last.ckpt: no such checkpoint file"):
        check_config(cfg)
    cfg = composed("model=distill")
    with pytest.raises(ConfigError, match="model.teachers: required"):
        check_config(cfg)


def test_hydras_own_errors_fold_into_one_line():
    from hydra.errors import MissingConfigException

    error = MissingConfigException(
        "In 'train': Could not find 'model/dqn'\n\nAvailable options in 'model':\n\tbandit\n\toracle\n"
        "Config search path:\n\tprovider=hydra"
    )
    assert usage_error(error) is error
    assert (
        one_line(error)
        == "In 'train': Could not find 'model/dqn' Available options in 'model': bandit, oracle"
    )
    wrapped = RuntimeError("instantiate failed")
    wrapped.__cause__ = ConfigError("model.lr must be positive, got -1")
    assert str(usage_error(wrapped)) == "model.lr must be positive, got -1"
    assert usage_error(ZeroDivisionError()) is None  # a bug keeps its traceback


@pytest.mark.parametrize(
    "ablation, check",
    [
        (
            "none",
            lambda c: c.data.reward == "shaped" and c.network.use_previous_action and c.pretrain.epochs == 2,
        ),
        ("no_f1", lambda c: c.data.reward == "no_f1"),
        ("no_f2", lambda c: c.data.reward == "no_f2"),
        ("distance_reward", lambda c: c.data.reward == "distance"),
        (
            "no_prev_action",
            lambda c: not c.network.use_previous_action and not c.model.network.use_previous_action,
        ),
        ("no_sup_init", lambda c: c.pretrain.epochs == 0 and c.model.init_checkpoint is None),
    ],
)
def test_ablations_compose_onto_the_bandit(ablation, check):
    cfg = composed("model=bandit", f"ablation={ablation}")
    assert cfg.model._target_ == "blocks.learn.bandit.BanditLearner" and check(cfg)
    assert cfg.data._target_ == "blocks.data.rollouts.RolloutDataModule"
    assert cfg.trainer.gradient_clip_val is None and cfg.model.gradient_clip == 5.0


def test_the_supervised_start_gets_its_clipping_and_the_demonstration_fraction(corpus_root, tmp_path):
    """``pretrain.gradient_clip`` and ``data.demonstration_fraction`` reach the pretraining Trainer and data
    (the bandit's own trainer config has no clipping: the learner clips itself)."""
    cfg = composed(
        "model=bandit", "experiment=smoke", "pretrain.gradient_clip=2.5", "data.demonstration_fraction=0.5",
        f"data.root={corpus_root}", "data.render=release", "data.demonstration_route=release", "data.seed=5",
    )  # fmt: skip
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    model, data, trainer, _ = pretraining(cfg, ["<pad>", "<unk>"])
    assert trainer.gradient_clip_val == 2.5 and trainer.max_epochs == cfg.pretrain.epochs
    assert (
        data.demonstration_fraction == 0.5 and len(data.steps.examples) == 8
    )  # half of the 16 smoke examples
    assert model.hparams.lr == cfg.pretrain.lr and OmegaConf.select(cfg, "trainer.gradient_clip_val") is None
    # every setting the two data modules share arrives (the picture, the route, the seed...), none of the bandit's
    assert (data.render, data.demonstration_route, data.seed) == ("release", "release", 5)
    assert data.batch_size == cfg.pretrain.batch_size and not hasattr(data, "episodes_per_update")


def test_the_supervised_start_logs_and_calls_back_as_the_run_it_starts(corpus_root, tmp_path):
    """conf/pretrain/: the start is trained with the run's own loggers (here CSV and TensorBoard) and callbacks
    (the wall clock included), under ``pretrain/``, keeping its own checkpoint file; pretrain=none has no start.
    A second logger stands for the user's (TensorBoard needs an extra)."""
    from blocks.runs.callbacks import GracefulStop, ProgressBar, WallClock
    from blocks.runs.pretrain import wants_supervised_start

    second = ["+logger.second._target_=pytorch_lightning.loggers.CSVLogger", "+logger.second.name=second",
              "+logger.second.save_dir=${paths.output_dir}"]  # fmt: skip
    cfg = composed("model=bandit", "experiment=smoke", *second, f"data.root={corpus_root}")
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    _, _, trainer, checkpoint = pretraining(cfg, ["<pad>", "<unk>"])
    assert sorted(logger.name for logger in trainer.loggers) == ["csv", "second"]
    assert all(Path(logger.save_dir) == tmp_path / "pretrain" for logger in trainer.loggers)
    kinds = [type(c) for c in trainer.callbacks]
    assert {ProgressBar, WallClock, GracefulStop} <= set(kinds)
    assert [c for c in trainer.callbacks if isinstance(c, pl.callbacks.ModelCheckpoint)] == [checkpoint]
    assert Path(checkpoint.dirpath) == tmp_path / "pretrain" / "checkpoints"
    assert wants_supervised_start(cfg)
    for none in (("model=bandit", "pretrain=none"), ("model=spo",), ("experiment=paper_dqn",),
                 ("experiment=ablations", "ablation=no_sup_init"), ("model=bandit", "data.demonstration_fraction=0")):  # fmt: skip
        assert not wants_supervised_start(composed(*none))


LATER_STAGES = ["oracle_goal", "bandit_member", "distill"]
RECIPES = sorted(p.stem for p in (REPO / "conf" / "experiment").glob("*.yaml"))


@pytest.mark.parametrize("experiment", LATER_STAGES)
def test_a_later_stage_of_a_recipe_needs_the_stage_before(experiment):
    extra = ["model.teachers=[a.ckpt]"] if experiment == "distill" else []
    cfg = composed(f"experiment={experiment}", *extra)
    with pytest.raises(ConfigError, match="model.init_checkpoint: required by experiment"):
        check_config(cfg)


@pytest.mark.parametrize("experiment", [r for r in RECIPES if r not in LATER_STAGES])
def test_every_recipe_composes_and_passes_the_checks(experiment):
    check_config(composed(f"experiment={experiment}"))


@pytest.mark.parametrize("experiment", ["paper_reinforce", "paper_dqn"])
def test_the_papers_baselines_train_at_the_approachs_budget_on_the_release_paths(experiment):
    cfg = composed(f"experiment={experiment}")
    approach = composed("experiment=ablations", "ablation=none")
    assert cfg.data.demonstration_route == approach.data.demonstration_route == "release"
    assert cfg.trainer.max_epochs == approach.trainer.max_epochs == 3
    assert cfg.trainer.val_check_interval == 0.25
    name_checkpoints_by_step(cfg)  # as train.py does
    assert "step" in cfg.callbacks.model_checkpoint.filename  # one file per quarter-epoch validation
    assert ("init_checkpoint" in cfg.model) == (experiment == "paper_reinforce")  # DQN: no supervised start


def test_ckpt_path_last_resumes_this_run_folder_and_refuses_when_it_has_no_checkpoint(tmp_path):
    import torch

    from blocks.runs.pretrain import supervised_start
    from blocks.runs.resume import resume_path

    cfg = composed("model=bandit", "ckpt_path=last")
    auto = composed("model=bandit", "ckpt_path=auto")
    for c in (cfg, auto):
        with open_dict(c):
            c.paths.output_dir = str(tmp_path)
        check_config(c)  # "last" and "auto" are not file names
    with pytest.raises(CheckpointError, match="ckpt_path=last: no .*last.ckpt to resume"):
        resume_path(cfg)  # a new run folder: nothing to resume, said at once instead of starting from zero
    assert resume_path(auto) is None  # a sweep job's first start
    assert resume_path(cfg, required=False) is None  # a run's own pretraining, the first time
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    torch.save({"global_step": 8}, folder / "last.ckpt")
    assert resume_path(cfg) == resume_path(auto) == str(folder / "last.ckpt")
    shared = composed("model=bandit", "pretrain.checkpoint=checkpoints/paper/supervised_start.ckpt")
    assert (
        supervised_start(shared, []) == "checkpoints/paper/supervised_start.ckpt"
    )  # no pretraining: the shared start
    assert supervised_start(composed("model=bandit", "data.demonstration_fraction=0"), []) is None
    with pytest.raises(CheckpointError, match="pretrain.checkpoint"):
        check_config(composed("model=bandit", "pretrain.checkpoint=missing.ckpt"))


def test_a_damaged_last_checkpoint_gives_way_to_the_newest_readable_one(tmp_path, caplog):
    import torch

    from blocks.runs.resume import resume_path

    cfg = composed("model=bandit", "ckpt_path=last")
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for name in ("epoch_000.ckpt", "epoch_001.ckpt"):
        torch.save({"global_step": 8}, folder / name)
    (folder / "epoch_001.ckpt").write_bytes((folder / "epoch_001.ckpt").read_bytes()[:100])  # cut short too
    torch.save({"global_step": 16, "weights": torch.zeros(1000)}, folder / "last.ckpt")
    (folder / "last.ckpt").write_bytes((folder / "last.ckpt").read_bytes()[:2000])  # a kill while writing
    with caplog.at_level("WARNING"):
        assert resume_path(cfg) == str(folder / "epoch_000.ckpt")
    assert "last.ckpt is damaged" in caplog.text and "epoch_000.ckpt" in caplog.text
    # The furthest step wins, whatever the files' times say (a folder copied with cp -r): not the newer epoch 0
    torch.save({"global_step": 12}, folder / "epoch_000_step_000012.ckpt")
    os.utime(folder / "epoch_000_step_000012.ckpt", (1, 1))
    assert resume_path(cfg) == str(folder / "epoch_000_step_000012.ckpt")
    (folder / "epoch_000_step_000012.ckpt").unlink()
    (folder / "epoch_000.ckpt").unlink()
    with pytest.raises(CheckpointError, match="no other checkpoint .* is readable"):
        resume_path(cfg)
    with open_dict(cfg):
        cfg.ckpt_path = str(folder / "last.ckpt")
    with pytest.raises(CheckpointError, match="last.ckpt: not a readable checkpoint, damaged or cut short"):
        resume_path(cfg)


def test_a_rerun_skips_only_a_run_that_finished_and_was_evaluated_as_configured(tmp_path):
    import json

    import torch

    from blocks.runs.resume import finished_record

    cfg = composed("model=bandit", "ckpt_path=last", "trainer.max_epochs=3")
    with open_dict(cfg):
        cfg.paths.output_dir = str(tmp_path)
    last = tmp_path / "last.ckpt"
    torch.save({"global_step": 120}, last)
    assert finished_record(cfg, str(last)) is None  # not evaluated yet
    record = {"split": "dev", "limit": None, "global_step": 120, "max_epochs": 3, "mean_error": 4.2}
    (tmp_path / "final_eval.json").write_text(json.dumps(record))
    assert finished_record(cfg, str(last)) == record
    for key, value in [("trainer.max_epochs", 4), ("final_eval.split", "tune"), ("final_eval.limit", 8),
                       ("ckpt_path", None)]:  # fmt: skip
        other = cfg.copy()
        OmegaConf.update(other, key, value)
        assert finished_record(other, str(last)) is None, key
    torch.save({"global_step": 121}, last)  # the run went on after its evaluation
    assert finished_record(cfg, str(last)) is None


def test_the_no_prev_action_ablation_trains_its_own_supervised_start(tmp_path, monkeypatch):
    """The sweep's shared start reads the previous action; the run without it cannot load it and trains its own."""
    import blocks.runs.pretrain as train_module

    shared = tmp_path / "shared.ckpt"
    shared.write_bytes(b"")
    monkeypatch.setattr(train_module, "pretrain_supervised", lambda cfg, vocabulary: "its own start")
    for ablation, start in [("none", str(shared)), ("no_prev_action", "its own start")]:
        cfg = composed("experiment=ablations", f"ablation={ablation}", f"pretrain.checkpoint={shared}")
        assert train_module.supervised_start(cfg, ["<pad>", "<unk>"]) == start


@pytest.mark.parametrize(
    "override",
    ["trainer.max_epochs=abc", "data.batch_size=0", "data.batch_size=-1", "data.max_train_examples=-1",
     "seed=abc", "pretrain.epochs=-1", "threads=0", "data.max_val_examples=1.5", "final_eval.limit=true"],
)  # fmt: skip
def test_a_bad_training_value_is_one_line_naming_the_key(override):
    key = override.split("=")[0]
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}=.*: must be an integer"):
        check_config(composed("experiment=smoke", override))


@pytest.mark.parametrize(
    "model, override",
    [("bandit", "model.gradient_clip=-1"), ("bandit", "data.horizon=0"), ("bandit", "data.horizon=-3"),
     ("bandit", "data.frames=0"), ("supervised", "model.goal_loss_weight=inf"), ("bandit", "model.entropy_coef=nan"),
     ("bandit", "model.entropy_coef=abc"), ("dqn", "model.gamma=1.5"), ("spo", "model.clip=0"),
     ("supervised", "pretrain.gradient_clip=-0.5"), ("supervised", "trainer.gradient_clip_val=-1"),
     ("goal_predictor", "model.dropout=2"), ("bandit", "model.lr=nan"), ("bandit", "pretrain.lr=0")],
)  # fmt: skip
def test_a_value_that_would_change_or_break_the_run_quietly_is_one_line_naming_the_key(model, override):
    """Accepted before: a negative clip norm, a horizon of 0, an infinite loss weight trained into nonsense; nan
    and 0 frames failed after the first update."""
    key, start = override.split("=")[0], [f"model={model}"] + ["pretrain.epochs=0"] * (model == "spo")
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}=.*: must be (an integer|a finite number)"):
        check_config(composed(*start, override))
    check_config(composed(*start))  # its defaults pass


@pytest.mark.parametrize(
    "override, message",
    [("trainer.devices=abc", "a number of processes"), ("trainer.devices=[0,1]", "a number of processes"),
     ("trainer.devices=true", "a number of processes"), ("+trainer.foo=1", "trainer.foo: not a key of Trainer")],
)  # fmt: skip
def test_a_trainer_value_lightning_would_refuse_with_a_traceback_is_one_line(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        check_config(composed("model=bandit", override))
    check_config(composed("model=bandit", "trainer.devices=auto"))


@pytest.mark.parametrize(
    "override", ["batch_size=0", "limit=abc", "limit=0", "limit=-1", "seed=abc", "threads=0"]
)
def test_a_bad_evaluation_value_is_one_line_naming_the_key(override):
    from blocks.checks import EVAL_INTEGERS, check_integers

    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        cfg = compose("eval", overrides=[override])
    with pytest.raises(ConfigError, match=rf"^{re.escape(override.split('=')[0])}=.*: must be an integer"):
        check_integers(cfg, EVAL_INTEGERS)
    with initialize_config_dir(config_dir=str(REPO / "conf"), version_base="1.3"):
        check_integers(compose("eval", overrides=["limit=5", "seed=3"]), EVAL_INTEGERS)  # good values pass


def test_a_run_validating_within_an_epoch_names_each_checkpoint_by_its_step():
    import hydra
    import torch

    def names(*overrides: str) -> set[str]:
        cfg = composed(*overrides)
        name_checkpoints_by_step(cfg)
        callback = hydra.utils.instantiate(cfg.callbacks.model_checkpoint)
        return {Path(callback.format_checkpoint_name({"epoch": torch.tensor(0), "step": torch.tensor(s)})).name
                for s in (2799, 5598)}  # fmt: skip

    # Two quarter-epoch validations of epoch 0 must not share a file (the second would overwrite the first).
    by_step = {"epoch_000_step_002799.ckpt", "epoch_000_step_005598.ckpt"}
    assert names("model=spo", "+trainer.val_check_interval=0.25") == by_step
    assert names("model=oracle", "+trainer.val_check_interval=350") == by_step
    assert names("model=spo") == {"epoch_000.ckpt"}  # once an epoch: the plain name
    assert names("experiment=paper_dqn") == by_step  # its quarter-epoch validations: the same rule
    given = "callbacks.model_checkpoint.filename='s{step:06d}'"  # a name with the step already: kept as given
    assert names("model=spo", "+trainer.val_check_interval=0.25", given) == {"s002799.ckpt", "s005598.ckpt"}


@pytest.mark.skipif(torch.cuda.is_available(), reason="a machine with a GPU may train on it")
def test_a_gpu_trainer_without_a_gpu_is_one_line():
    from omegaconf import OmegaConf

    from blocks.checks import check_devices

    with pytest.raises(ConfigError, match="no GPU that torch can use"):
        check_devices(OmegaConf.create({"trainer": {"accelerator": "gpu", "devices": 1}}))
    with pytest.raises(ConfigError, match="trainer.devices=0"):
        check_devices(OmegaConf.create({"trainer": {"accelerator": "cpu", "devices": 0}}))
    check_devices(OmegaConf.create({"trainer": {"accelerator": "cpu", "devices": "auto"}}))


def test_eval_help_lists_the_agents_and_no_training_group():
    """``eval.py --help`` names exactly the agents in conf/agent/, and none of the training groups."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "eval.py", "--help"], cwd=REPO, capture_output=True, text=True, check=True
    )
    agents = out.stdout.split("== Agents (agent=...) ==\n")[1].splitlines()[0]
    assert agents.split(", ") == sorted(p.stem for p in (REPO / "conf" / "agent").glob("*.yaml"))
    assert "experiment:" not in out.stdout and "model:" not in out.stdout and "ablation:" not in out.stdout


def test_help_piped_into_a_reader_that_stops_early_ends_quietly():
    """``python eval.py --help | head -1``: the closed pipe is not reported as an unwritable run folder."""
    import subprocess
    import sys

    process = subprocess.Popen(
        [sys.executable, "eval.py", "--help"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    process.stdout.close()  # gone before the command writes its first line
    stderr = process.stderr.read().decode()
    assert process.wait(timeout=120) == 1
    assert "run's folder" not in stderr and "Traceback" not in stderr and "Broken pipe" not in stderr


@pytest.mark.parametrize(
    "module, flag", [("blocks.demo", "--help"), ("blocks.animate", "-h"), ("blocks.render", "--help")]
)
def test_the_key_value_commands_answer_help_with_their_usage(module, flag):
    """``python -m blocks.demo --help`` prints how to call it and exits 0, not 'options are key=value'."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", module, flag], cwd=REPO, capture_output=True, text=True)
    assert out.returncode == 0 and f"python -m {module}" in out.stdout
    assert "key=value" not in out.stderr


def test_a_record_written_before_the_learn_split_names_the_classes_at_their_new_homes():
    """Runs recorded when the data modules lived in blocks.learn resume with the same classes from blocks.data."""
    import hydra

    from blocks.runs.record import current_targets

    old = {
        "data": {"_target_": "blocks.learn.data.RolloutDataModule", "batch_size": 8},
        "callbacks": {"bar": {"_target_": "blocks.learn.callbacks.ProgressBar"}},
        "model": {
            "_target_": "blocks.learn.bandit.BanditLearner",
            "note": "blocks.learn.data.RolloutDataModule",
        },
        "list": [{"_target_": "blocks.learn.goal.GoalDataModule"}],
        "summary": {
            "_target_": "blocks.runs.sweep.SweepSummary"
        },  # before report/ took the tools (2026-12-07)
    }
    new = current_targets(old)
    assert new["data"] == {"_target_": "blocks.data.rollouts.RolloutDataModule", "batch_size": 8}
    assert new["callbacks"]["bar"]["_target_"] == "blocks.runs.callbacks.ProgressBar"
    assert new["model"] == old["model"]  # a learner did not move; a value that is not a target is left alone
    assert new["summary"]["_target_"] == "blocks.report.sweep.SweepSummary"
    for target in (new["data"]["_target_"], new["callbacks"]["bar"]["_target_"], new["list"][0]["_target_"]):
        hydra.utils.get_class(target)  # each names a class that exists


def test_a_fit_prints_no_lightning_advert_or_deprecation_from_inside_lightning(tmp_path, caplog):
    import logging
    import warnings

    import pytorch_lightning as pl
    from pytorch_lightning.loggers import CSVLogger

    from blocks.runs.train import quiet_lightning

    quiet_lightning()
    quiet_lightning()  # idempotent: one filter, however many runs a process starts
    rank_zero = logging.getLogger("pytorch_lightning.utilities.rank_zero")
    assert len(rank_zero.filters) == 1
    with caplog.at_level(logging.INFO, logger="pytorch_lightning"):
        pl.Trainer(logger=CSVLogger(tmp_path), enable_progress_bar=False, default_root_dir=tmp_path)
    assert any("GPU available" in r.getMessage() for r in caplog.records)  # Lightning's other lines stay
    assert not any("Tip" in r.getMessage() for r in caplog.records)
    with warnings.catch_warnings(record=True) as caught:
        warnings.warn("`isinstance(treespec, LeafSpec)` is deprecated, use ...", FutureWarning, stacklevel=1)
        warnings.warn("something else is deprecated", FutureWarning, stacklevel=1)
    assert [str(w.message) for w in caught] == ["something else is deprecated"]
