"""``train.py`` end to end on a few examples: every model under DDP, resuming, sweeps, and bad configs."""

from __future__ import annotations

import contextlib
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from blocks.agents.policy import PolicyAgent
from blocks.learn import load_learner
from blocks.report.export import best_checkpoint, validations

from ..conftest import REPO

pytestmark = pytest.mark.slow  # every test here runs train.py or eval.py in a subprocess


def train_env(root: Path, corpus: Path) -> dict[str, str]:
    return {**os.environ, "BLOCKS_DATA": str(corpus), "PROJECT_ROOT": str(root), "HYDRA_FULL_ERROR": "0"}


def run_train(args: list[str], root: Path, corpus: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = train_env(root, corpus)
    out = subprocess.run(
        [sys.executable, "train.py", *args], cwd=REPO, env=env, capture_output=True, text=True
    )
    if check and out.returncode != 0:
        raise AssertionError(f"train.py {' '.join(args)} failed:\n{out.stderr[-4000:]}")
    return out


def val_errors(run: Path, key: str = "val/mean_error") -> list[float]:
    with open(run / "csv" / "version_0" / "metrics.csv") as handle:
        rows = list(csv.DictReader(handle))
    return [float(r[key]) for r in rows if r.get(key)]


@pytest.mark.parametrize(
    "model, extra", [("supervised", []), ("bandit", []), ("bandit", ["data.simulator=torch"]), ("reinforce", []),
                     ("oracle", []), ("spo", ["pretrain.epochs=0"])]
)  # fmt: skip
def test_smoke_experiment_on_two_processes(model, extra, corpus_root, tmp_path):
    run = tmp_path / "run"
    # The goal agent's validation too: the linear goal head on demonstrations, the goal map on rollouts.
    goal = {"supervised": ["network.goal_head=true"], "oracle": ["network.goal_map=true"]}.get(model, [])
    out = run_train(
        [f"model={model}", "trainer.devices=2", "experiment=smoke", f"hydra.run.dir={run}", *goal, *extra],
        tmp_path,
        corpus_root,
    )
    # the run ends with the tune-selected checkpoint evaluated on dev, printed beside the paper's figures
    paper = {"supervised": "4.65 / 4.45", "bandit": "3.60 / 3.09", "reinforce": "5.57 / 5.29"}.get(model, "-")
    assert f"| {model} |" in out.stdout and paper in out.stdout and (run / "final_eval.json").is_file()
    assert (run / "checkpoints" / "last.ckpt").is_file() and len(val_errors(run)) == 2
    if goal:
        assert len(val_errors(run, "val/goal_agent_mean_error")) == 2
    if model == "supervised":
        env = {**os.environ, "BLOCKS_DATA": str(corpus_root), "PROJECT_ROOT": str(tmp_path)}
        command = ["eval.py", "agent=goal", f"ckpt_path={run / 'checkpoints' / 'last.ckpt'}", "limit=4"]
        out = subprocess.run([sys.executable, *command], cwd=REPO, env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr[-3000:]
        assert '"agent": "goal", "n": 4' in out.stdout
    assert (run / "train_ddp_process_1.log").exists()  # the second rank ran inside the same run folder
    if model == "spo":  # no supervised start (its schedule imitates); the ranks kept the same weights
        hparams = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["hyper_parameters"]
        assert hparams["kind"] == "spo" and not (run / "pretrain").exists()
    elif model != "supervised":
        assert (run / "pretrain" / "checkpoints" / "pretrain.ckpt").is_file()
        hparams = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["hyper_parameters"]
        assert hparams["kind"] == ("oracle" if model == "oracle" else "bandit")
        if model == "oracle":  # a learner records only what it reads: no bandit keys
            assert "return_to_go" not in hparams and "entropy_coef" not in hparams
        else:
            assert hparams["return_to_go"] == (model == "reinforce")
        agent = PolicyAgent.from_checkpoint(
            str(run / "checkpoints" / "last.ckpt")
        )  # any kind loads in one call
        assert agent.policy.frames == 5


def test_resume_from_last_checkpoint_continues_at_the_right_step(corpus_root, tmp_path):
    first, second = tmp_path / "first", tmp_path / "second"
    run_train(
        ["model=bandit", "experiment=smoke", "trainer.max_epochs=1", f"hydra.run.dir={first}"],
        tmp_path,
        corpus_root,
    )
    before = torch.load(first / "checkpoints" / "last.ckpt", weights_only=False)
    assert before["global_step"] == 2 and before["epoch"] == 0  # 2 rollouts of 8 episodes, one update each
    run_train(
        ["model=bandit", "experiment=smoke", "trainer.max_epochs=2", f"ckpt_path={first}/checkpoints/last.ckpt",
         "+resume.override=true", f"hydra.run.dir={second}"], tmp_path, corpus_root,
    )  # fmt: skip
    after = torch.load(second / "checkpoints" / "last.ckpt", weights_only=False)
    assert after["global_step"] == 4 and after["epoch"] == 1
    assert after["frames_seen"] > before["frames_seen"]
    assert not (second / "pretrain").exists()  # the weights come from the checkpoint, not a new pretraining
    assert after["RolloutDataModule"] == {
        "epoch": 1,
        "consumed": 16,
    }  # the stream's place, saved by Lightning


def test_resume_from_a_mid_epoch_checkpoint_finishes_that_epoch(corpus_root, tmp_path):
    """Validating (and checkpointing) twice an epoch, then resuming from the middle: the epoch ends at its
    16th batch (2 updates of 8 pieces) as it would have, validates there and saves its last checkpoint. No file
    name is given: each validation's checkpoint must be named by its step, or the second overwrites the first."""
    first, second = tmp_path / "first", tmp_path / "second"
    mid_epoch = [
        "model=bandit",
        "experiment=smoke",
        "trainer.max_epochs=1",
        "+trainer.val_check_interval=0.5",
    ]
    s001, s002 = "epoch_000_step_000001.ckpt", "epoch_000_step_000002.ckpt"
    run_train([*mid_epoch, f"hydra.run.dir={first}"], tmp_path, corpus_root)
    middle = torch.load(first / "checkpoints" / s001, weights_only=False)
    assert middle["RolloutDataModule"] == {"epoch": 0, "consumed": 8} and middle["global_step"] == 1
    # Both validations are on record with their scores; --best exports the lower one.
    scored = validations(first)
    assert [p.name for p, _ in scored] == [s001, s002]
    assert [round(s, 4) for _, s in scored] == [round(e, 4) for e in val_errors(first)]
    command = ["-m", "blocks.report.export", "--best", str(first), str(tmp_path / "best.ckpt")]
    out = subprocess.run([sys.executable, *command], cwd=REPO, capture_output=True, text=True, check=True)
    assert f"best: {best_checkpoint(first)[0].name}" in out.stdout
    assert f"{s001}: val/mean_error " in out.stdout  # the score's name as the run monitored it
    assert load_learner(str(tmp_path / "best.ckpt")).kind == "bandit"
    run_train(
        [*mid_epoch, f"ckpt_path={first}/checkpoints/{s001}", f"hydra.run.dir={second}"],
        tmp_path,
        corpus_root,
    )
    end = torch.load(second / "checkpoints" / "last.ckpt", weights_only=False)
    assert end["global_step"] == 2 and end["RolloutDataModule"] == {"epoch": 0, "consumed": 16}
    assert (second / "checkpoints" / s002).is_file() and len(val_errors(second)) == 1


def every_step(run: Path) -> list[str]:
    """Overrides that also keep a checkpoint after every update, under ``run/steps`` (``s0007.ckpt``)."""
    extra = "+callbacks.every."
    return [f"{extra}_target_=pytorch_lightning.callbacks.ModelCheckpoint", f"{extra}dirpath={run / 'steps'}",
            f"{extra}every_n_train_steps=1", f"{extra}save_top_k=-1", f"{extra}filename='s{{step:04d}}'",
            f"{extra}monitor=null", f"{extra}auto_insert_metric_name=false"]  # fmt: skip


def weights_at(run: Path, step: int) -> dict[str, torch.Tensor]:
    return torch.load(run / "steps" / f"s{step:04d}.ckpt", weights_only=False)["state_dict"]


def test_two_ranks_resumed_mid_epoch_go_on_as_a_run_never_stopped(corpus_root, tmp_path):
    """model=supervised trainer.devices=2 resumed from a mid-epoch checkpoint: both ranks go on with the rest of
    their own shards (it was an IndexError in Lightning's DistributedSamplerWrapper), and the updates after the
    resume are the uninterrupted run's. Compared to float rounding: two processes may round one weight a unit in
    the last place apart (memory layout), and such a difference grows over hundreds of updates; a batch skipped
    or repeated moves the weights by about 1e-3."""
    whole, stopped, resumed = tmp_path / "whole", tmp_path / "stopped", tmp_path / "resumed"
    args = ["model=supervised", "experiment=smoke", "trainer.devices=2", "trainer.max_epochs=1",
            "+trainer.val_check_interval=0.5", "final_eval.split=null"]  # fmt: skip
    run_train([*args, *every_step(whole), f"hydra.run.dir={whole}"], tmp_path, corpus_root)
    run_train([*args, f"hydra.run.dir={stopped}"], tmp_path, corpus_root)
    middle = sorted((stopped / "checkpoints").glob("epoch_000_step_*.ckpt"))[0]
    state = torch.load(middle, weights_only=False)
    k = state["global_step"]
    assert state["DemonstrationDataModule"]["consumed"] == k > 0
    run_train([*args, *every_step(resumed), "+resume.override=true", f"ckpt_path={middle}", f"hydra.run.dir={resumed}"], tmp_path,
              corpus_root)  # fmt: skip
    end = torch.load(resumed / "checkpoints" / "last.ckpt", weights_only=False)
    assert (
        end["global_step"] == 2 * k
        and sorted(p.name for p in (resumed / "steps").glob("*.ckpt"))[0] == f"s{k + 1:04d}.ckpt"
    )
    for step in (k + 1, k + 2, k + 3):
        a, b = weights_at(whole, step), weights_at(resumed, step)
        for key, weight in a.items():
            assert torch.allclose(weight, b[key], atol=1e-5), (step, key)
    moved = max((weights_at(whole, k + 2)[key] - weights_at(whole, k + 1)[key]).abs().max() for key in a)
    assert moved > 1e-4  # one update moves the weights far more than the tolerance


def test_a_time_limit_ends_the_first_epoch_and_keeps_a_checkpoint(corpus_root, tmp_path):
    """``+trainer.max_time`` must stop a run inside its first epoch (an epoch of the full corpus is 11,200
    batches): a ``trainer.min_epochs`` would silently override it. The stop validates and saves ``last.ckpt``."""
    run = tmp_path / "run"
    run_train(
        ["model=oracle", "network.goal_head=true",
         "experiment=smoke", "data.max_train_examples=256", "trainer.max_epochs=1", "+trainer.max_time=00:00:00:01",
         f"hydra.run.dir={run}"], tmp_path, corpus_root,
    )  # fmt: skip
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert last["RolloutDataModule"]["consumed"] < 64 * 4  # 32 rollouts x 2 updates x 4 chunks in the epoch
    assert len(val_errors(run)) == 1


def test_an_interrupted_supervised_start_resumes_with_ckpt_path_auto(corpus_root, tmp_path):
    """A sweep job stopped after its pretraining's first epoch, before any rollout checkpoint: run again, it
    trains the second pretraining epoch only, then the rollouts."""
    run = tmp_path / "run"
    base = [
        "model=bandit",
        "experiment=smoke",
        "trainer.max_epochs=1",
        f"hydra.run.dir={run}",
        "ckpt_path=auto",
    ]
    run_train([*base, "pretrain.epochs=1"], tmp_path, corpus_root)
    first = torch.load(run / "pretrain" / "checkpoints" / "last.ckpt", weights_only=False)
    for path in [*(run / "checkpoints").iterdir(), run / "final_eval.json"]:
        path.unlink()  # as if the job had been stopped right after its pretraining
    out = run_train([*base, "pretrain.epochs=2", "+resume.override=true"], tmp_path, corpus_root)
    assert "resuming" in out.stderr + out.stdout
    second = torch.load(run / "pretrain" / "checkpoints" / "last.ckpt", weights_only=False)
    assert (first["epoch"], second["epoch"]) == (0, 1) and second["global_step"] == 2 * first["global_step"]
    hparams = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["hyper_parameters"]
    assert Path(hparams["initialised_from"]).parent == run / "pretrain" / "checkpoints"
    assert not (run / "pretrain" / "checkpoints" / "pretrain-v1.ckpt").exists()
    for path in [*(run / "checkpoints").iterdir(), run / "final_eval.json"]:
        path.unlink()  # stopped again, now after a finished pretraining: it is used as it is
    run_train([*base, "pretrain.epochs=2"], tmp_path, corpus_root)
    third = torch.load(run / "pretrain" / "checkpoints" / "last.ckpt", weights_only=False)
    assert third["global_step"] == second["global_step"]
    start = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["hyper_parameters"][
        "initialised_from"
    ]
    assert Path(start).is_file() and Path(start).parent == run / "pretrain" / "checkpoints"


def test_resume_continues_the_run_as_recorded_and_refuses_a_contradiction(corpus_root, tmp_path):
    """``ckpt_path=last`` alone continues with the run's own settings (not the defaults) and leaves its record in
    .hydra/config.yaml; an override that contradicts the record is one line naming both values, exit 2; with
    ``+resume.override=true`` it is taken; more epochs are taken as given (training on changes no history)."""
    run = tmp_path / "run"
    first = ["experiment=smoke", "trainer.max_epochs=1", "data.max_train_examples=8", "final_eval.limit=2"]
    run_train([*first, f"hydra.run.dir={run}"], tmp_path, corpus_root)
    out = run_train([f"hydra.run.dir={run}", "ckpt_path=last"], tmp_path, corpus_root)
    assert "finished and evaluated already" in out.stderr + out.stdout  # max_epochs 1 from the record, not 30
    recorded = (run / ".hydra" / "config.yaml").read_text()
    assert "max_train_examples: 8" in recorded and "max_epochs: 1" in recorded
    out = run_train([f"hydra.run.dir={run}", "ckpt_path=last", "data.max_train_examples=16"], tmp_path,
                    corpus_root, check=False)  # fmt: skip
    assert out.returncode == 2
    assert "data.max_train_examples=16 given, the run's record says data.max_train_examples=8" in out.stderr
    assert (
        len(out.stderr.strip().splitlines()) == 1 and (run / ".hydra" / "config.yaml").read_text() == recorded
    )
    # The run's own overrides and Hydra settings stay; each later command (refused or not) is logged beside them.
    assert (run / ".hydra" / "overrides.yaml").read_text().splitlines() == [f"- {o}" for o in first]
    assert "ckpt_path=last" not in (run / ".hydra" / "hydra.yaml").read_text()
    later = sorted((run / ".hydra" / "later").glob("*/overrides.yaml"))
    assert len(later) == 2 and "data.max_train_examples=16" in later[1].read_text()
    run_train([f"hydra.run.dir={run}", "ckpt_path=last", "trainer.max_epochs=2"], tmp_path, corpus_root)
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert last["epoch"] == 1 and last["run_record"]["config"]["data"]["max_train_examples"] == 8
    assert (
        last["run_record"]["environment"]["torch"] == torch.__version__
    )  # the versions a seed repeats under
    assert json.loads((run / "final_eval.json").read_text())["environment"]["numpy"] == np.__version__
    run_train([f"hydra.run.dir={run}", "ckpt_path=last", "trainer.max_epochs=3", "data.max_train_examples=16",
               "+resume.override=true"], tmp_path, corpus_root)  # fmt: skip
    last = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert last["epoch"] == 2 and last["run_record"]["config"]["data"]["max_train_examples"] == 16


def test_sigterm_in_the_supervised_start_saves_it_and_the_resumed_run_ends_as_one_never_stopped(corpus_root,
                                                                                               tmp_path):  # fmt: skip
    """The first minutes of every rollout learner are its supervised start: SIGTERM there writes the start's
    last.ckpt and exits 143 (a scheduler sees the job as stopped, not done); ``ckpt_path=last`` goes on from it,
    and the run ends with the weights of a run never stopped."""
    import signal
    import time

    args = ["model=bandit", "experiment=smoke", "pretrain.epochs=2", "data.max_train_examples=96",
            "trainer.max_epochs=1", "final_eval.split=null", "threads=1"]  # fmt: skip
    whole, stopped = tmp_path / "whole", tmp_path / "stopped"
    run_train([*args, f"hydra.run.dir={whole}"], tmp_path, corpus_root)
    env = train_env(tmp_path, corpus_root)
    log = tmp_path / "stopped.log"
    with open(log, "w") as sink:
        process = subprocess.Popen([sys.executable, "train.py", *args, f"hydra.run.dir={stopped}"], cwd=REPO,
                                   env=env, stdout=sink, stderr=subprocess.STDOUT, text=True)  # fmt: skip
        deadline = time.time() + 120
        while (
            "Epoch 0:" not in log.read_text() and time.time() < deadline
        ):  # the supervised start's first batches
            time.sleep(0.1)
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=300)
    output = log.read_text()
    assert process.returncode == 128 + signal.SIGTERM, output[-3000:]
    assert (stopped / "pretrain" / "checkpoints" / "last.ckpt").is_file()
    assert not (stopped / "pretrain" / "checkpoints" / "pretrain.ckpt").exists()  # stopped inside the start
    assert f"resume with hydra.run.dir={stopped} ckpt_path=last" in output  # the form that resumes the run
    start = stopped / "pretrain" / "checkpoints" / "last.ckpt"
    refused = run_train([*args, f"ckpt_path={start}", f"hydra.run.dir={tmp_path / 'wrong'}"], tmp_path, corpus_root,
                        check=False)  # fmt: skip
    assert refused.returncode == 2 and "a supervised checkpoint (a run's supervised start" in refused.stderr
    run_train([f"hydra.run.dir={stopped}", "ckpt_path=last"], tmp_path, corpus_root)
    # Where it went on: the same updates and data position as the run never stopped, then the bandit stage to its
    # end. The weights are compared update by update after a resume in the two-rank test above (processes may
    # round a unit in the last place apart, which grows over the hundreds of updates this run makes).
    ends = [torch.load(run / "checkpoints" / "last.ckpt", weights_only=False) for run in (whole, stopped)]
    starts = [torch.load(run / "pretrain" / "checkpoints" / "pretrain.ckpt", weights_only=False)
              for run in (whole, stopped)]  # fmt: skip
    assert (
        ends[0]["global_step"] == ends[1]["global_step"]
        and ends[0]["state_dict"].keys() == ends[1]["state_dict"].keys()
    )
    assert starts[0]["global_step"] == starts[1]["global_step"]
    assert starts[0]["DemonstrationDataModule"] == starts[1]["DemonstrationDataModule"]


def test_sigterm_to_the_launching_process_of_two_ranks_stops_both_at_the_same_update(corpus_root, tmp_path):
    """SIGTERM reaches rank 0 alone (a scheduler signalling the job's main process): both ranks agree before the
    next update, rank 0 writes last.ckpt, and both exit 143; nothing is left waiting in a collective, and the run
    resumes to its end."""
    import signal
    import time

    args = ["model=supervised", "experiment=smoke", "trainer.devices=2", "data.max_train_examples=96",
            "trainer.max_epochs=2", "final_eval.split=null", "threads=1"]  # fmt: skip
    run = tmp_path / "run"
    env = train_env(tmp_path, corpus_root)
    log = tmp_path / "run.log"
    with open(log, "w") as sink:
        process = subprocess.Popen([sys.executable, "train.py", *args, f"hydra.run.dir={run}"], cwd=REPO, env=env,
                                   stdout=sink, stderr=subprocess.STDOUT, text=True, start_new_session=True)  # fmt: skip
        try:
            deadline = time.time() + 180
            while "Epoch 0:" not in log.read_text() and time.time() < deadline:
                time.sleep(0.1)
            time.sleep(1.0)
            process.send_signal(signal.SIGTERM)  # the launching process only
            process.wait(timeout=120)
            deadline = time.time() + 30
            while time.time() < deadline:  # rank 1 gone too
                try:
                    os.killpg(process.pid, 0)
                except ProcessLookupError:
                    break
                time.sleep(0.2)
            else:
                raise AssertionError(
                    "a rank is still running after rank 0 stopped:\n" + log.read_text()[-3000:]
                )
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
    assert process.returncode == 128 + signal.SIGTERM, log.read_text()[-3000:]
    stopped = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert stopped["global_step"] > 0
    run_train([f"hydra.run.dir={run}", "ckpt_path=last"], tmp_path, corpus_root)
    end = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert end["epoch"] == 1 and end["global_step"] > stopped["global_step"]


def test_a_rerun_in_the_same_folder_starts_from_its_own_pretraining(corpus_root, tmp_path):
    """Lightning names a second pretraining file pretrain-v1.ckpt; the run must use it, not the older one (here
    with another network, which would not even load); the run's own last.ckpt is replaced, never left stale beside
    a last-v1.ckpt; a start with another network fails naming the key."""
    run = tmp_path / "run"
    base = ["model=bandit", "experiment=smoke", "trainer.max_epochs=1", f"hydra.run.dir={run}"]
    run_train(base, tmp_path, corpus_root)
    run_train([*base, "network.goal_head=true"], tmp_path, corpus_root)
    assert (run / "pretrain" / "checkpoints" / "pretrain-v1.ckpt").is_file()
    assert not (run / "checkpoints" / "last-v1.ckpt").exists()
    hparams = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)["hyper_parameters"]
    assert hparams["network"]["goal_head"] and hparams["initialised_from"].endswith("pretrain-v1.ckpt")
    out = run_train(
        ["model=oracle", "experiment=smoke", f"model.init_checkpoint={run}/checkpoints/last.ckpt",
         f"hydra.run.dir={tmp_path / 'mismatch'}"], tmp_path, corpus_root, check=False,
    )  # fmt: skip
    assert out.returncode == 2 and "network.goal_head" in out.stderr


def test_distillation_from_shipped_networks(corpus_root, tmp_path):
    """model=distill on a smoke run: the KL to the teachers is logged and the checkpoint acts without them."""
    run = tmp_path / "run"
    teachers = "[checkpoints/paper/approach.ckpt,checkpoints/paper/supervised_start.ckpt]"
    run_train(
        ["model=distill", "experiment=smoke", "trainer.max_epochs=1", f"model.teachers={teachers}",
         f"hydra.run.dir={run}"], tmp_path, corpus_root,
    )  # fmt: skip
    with open(run / "csv" / "version_0" / "metrics.csv") as handle:
        kl = [float(r["train/teacher_kl"]) for r in csv.DictReader(handle) if r.get("train/teacher_kl")]
    assert kl and all(k >= 0 for k in kl)
    agent = PolicyAgent.from_checkpoint(str(run / "checkpoints" / "last.ckpt"))
    assert len(agent.policies) == 1 and agent.policy.frames == 5


def test_multirun_sweep_with_spawned_ddp(corpus_root, tmp_path):
    run_train(
        ["-m", "model=bandit", "experiment=smoke", "trainer=ddp_spawn", "seed=1,2"], tmp_path, corpus_root
    )
    (sweep,) = (tmp_path / "logs" / "train" / "multiruns").iterdir()
    for job in ("0", "1"):
        assert (sweep / job / "checkpoints" / "last.ckpt").is_file()
    assert val_errors(sweep / "0") and val_errors(sweep / "1")


def test_spo_rolls_out_batches_on_the_device_on_two_processes(corpus_root, tmp_path):
    """model=spo, 4 examples a batch in the torch world, two ranks: the ranks take the same optimizer steps on
    summed gradients (the learner checks that their weights agree after each epoch), then the usual final eval."""
    run = tmp_path / "run"
    args = ["model=spo", "experiment=smoke", "pretrain.epochs=0", "data.batch_size=4", "data.simulator=torch",
            "trainer.devices=2", f"hydra.run.dir={run}"]  # fmt: skip
    out = run_train(args, tmp_path, corpus_root)
    assert "| spo |" in out.stdout and (run / "final_eval.json").is_file() and len(val_errors(run)) == 2
    checkpoint = torch.load(run / "checkpoints" / "last.ckpt", weights_only=False)
    assert checkpoint["hyper_parameters"]["kind"] == "spo" and checkpoint["frames_seen"] > 0


@pytest.mark.parametrize(
    "args, message",
    [
        (
            ["model=a2c"],
            "error: In 'train': Could not find 'model/a2c' Available options in 'model': bandit,",
        ),
        (["model=bandit", "ablation=no_f3"], "error: In 'train': Could not find 'ablation/no_f3'"),
        (
            ["model.lrr=0.1"],
            "error: Could not override 'model.lrr'. To append to your config use +model.lrr=0.1",
        ),
        (["model=oracle", "+model.entropy_cof=0.1"], "error: model.entropy_cof: not a key of OracleLearner"),
        (
            ["model=bandit", "ckpt_path=/nonexistent/last.ckpt"],
            "error: ckpt_path=/nonexistent/last.ckpt: no such",
        ),
        (["model=spo", "pretrain.epochs=2"], "error: model=spo learns from scratch"),
        (["model.lr=nan"], "error: model.lr=nan: must be a finite number above 0"),
        (["model.lr=inf"], "error: model.lr=inf: must be a finite number above 0"),
        (["model.lr=abc"], "error: model.lr='abc': must be a finite number above 0"),
        (["model=bandit", "+foo=1"], "error: +foo=1: foo is not a key of this command's config"),
        (["trainer.devices=0"], "error: trainer.devices=0: at least 1"),
        (["data.render=glossy"], "error: data.render='glossy': unknown picture; one of flat, release"),
        (
            ["ckpt_path=logs/seed=2/last.ckpt"],
            """error: ckpt_path=logs/seed=2/last.ckpt: a value holding '=' must be quoted, as in 'ckpt_path="logs/""",
        ),
    ],
)
def test_a_users_mistake_is_one_line_and_exit_status_2(args, message, corpus_root, tmp_path):
    out = run_train([*args, f"hydra.run.dir={tmp_path / 'run'}"], tmp_path, corpus_root, check=False)
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert out.stderr.startswith(message) and "Traceback" not in out.stderr


def test_a_run_folder_that_cannot_be_written_is_one_line(corpus_root, tmp_path):
    """Hydra makes the folder and its log file before the task starts: a file in the way is one line, exit 2."""
    (tmp_path / "a_file").write_text("")
    out = run_train(["experiment=smoke", f"hydra.run.dir={tmp_path / 'a_file' / 'run'}"], tmp_path, corpus_root,
                    check=False)  # fmt: skip
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert out.stderr.startswith("error: cannot write the run's folder: Not a directory")
    # A folder whose log file cannot be opened (as in one of mode 555 to a user without root's override): logging's
    # "Unable to configure handler 'file'" wraps the refusal, 53 lines before.
    (tmp_path / "old_run" / "train.log").mkdir(parents=True)
    out = run_train(["experiment=smoke", f"hydra.run.dir={tmp_path / 'old_run'}"], tmp_path, corpus_root,
                    check=False)  # fmt: skip
    assert out.returncode == 2 and out.stderr.strip().splitlines() == [out.stderr.strip()]
    assert (
        out.stderr.startswith("error: cannot write the run's folder: Is a directory")
        and "train.log" in out.stderr
    )


TINY = ["data.max_train_examples=16", "data.max_val_examples=8", "data.batch_size=8", "data.val_batch_size=8",
        "pretrain.epochs=1", "pretrain.batch_size=8", "final_eval.limit=8"]  # fmt: skip


def test_ablation_sweep_runs_two_at_a_time_resumes_and_writes_one_table(corpus_root, tmp_path):
    """experiment=ablations through the joblib launcher; the same command again resumes each run."""
    args = ["-m", "experiment=ablations", "ablation=none,no_f1", f"paths.log_dir={tmp_path / 'logs'}", *TINY]
    out = run_train([*args, "trainer.max_epochs=1"], tmp_path, corpus_root)
    sweep = tmp_path / "logs" / "ablations"
    assert "2 finished runs" in out.stdout
    rows = (sweep / "summary.csv").read_text().splitlines()
    assert rows[0].startswith("value,seed,mean_error") and len(rows) == 3
    assert (
        "| no_f1 | 42 |" in (sweep / "summary.md").read_text()
        and "4.33" in (sweep / "summary.md").read_text()
        and "| dev, 8 examples (limit 8) |" in (sweep / "summary.md").read_text()
    )
    for picture in ("curves.png", "paper.png"):
        assert (sweep / picture).read_bytes()[:4] == b"\x89PNG"
    again = run_train([*args, "trainer.max_epochs=2"], tmp_path, corpus_root)
    assert again.stderr.count("resuming") + again.stdout.count("resuming") == 2
    from blocks.report.curves import read_run

    columns = read_run(sweep / "ablation=none,seed=42")  # both sessions' logs
    validated = ~np.isnan(columns["val/mean_error"])
    assert set(columns["epoch"][validated]) == {0.0, 1.0}  # the resumed run went on into its second epoch
    record = sweep / "ablation=no_f1,seed=42" / "final_eval.json"
    evaluated = record.read_text()
    # Both runs finished and were evaluated: a third call neither fits nor evaluates them again.
    third = run_train([*args, "trainer.max_epochs=2"], tmp_path, corpus_root)
    assert (third.stderr + third.stdout).count("finished and evaluated already") == 2
    assert record.read_text() == evaluated and "2 finished runs" in third.stdout


def test_figure4_sweep_on_submitit_local_mode(corpus_root, tmp_path):
    """The submitit launcher (local mode, as on a SLURM cluster without one); at 0 % no supervised start."""
    run_train(
        ["-m", "experiment=figure4", "data.demonstration_fraction=0,1.0", "hydra/launcher=submitit_local",
         f"paths.log_dir={tmp_path / 'logs'}", "trainer.max_epochs=1", *TINY],
        tmp_path, corpus_root,
    )  # fmt: skip
    sweep = tmp_path / "logs" / "figure4"
    nothing = sweep / "fraction=0,seed=42"
    assert (nothing / "final_eval.json").is_file() and not (nothing / "pretrain").exists()
    assert (sweep / "fraction=1.0,seed=42" / "pretrain").is_dir()
    table = (sweep / "summary.md").read_text()
    assert "| 0 | 42 |" in table and "5.45" in table and "3.60" in table
