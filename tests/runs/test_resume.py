"""blocks.runs.resume: a run stopped after an epoch, mid-epoch or by a signal, and resumed, ends as one never
stopped."""

from __future__ import annotations

import pytest
import torch

from blocks.data.demonstrations import DemonstrationDataModule
from blocks.data.rollouts import RolloutDataModule
from blocks.learn.bandit import BanditLearner


@pytest.mark.parametrize("kind", ["supervised", "goal_predictor"])
def test_a_run_stopped_after_an_epoch_and_resumed_ends_with_the_same_weights(kind, corpus_root, tmp_path):
    """Each epoch's order is a function of (seed, epoch): a resumed run does not replay epoch 0's order."""
    import pytorch_lightning as pl

    from blocks.data.goals import GoalDataModule
    from blocks.learn.goal import GoalLearner
    from blocks.learn.supervised import SupervisedLearner

    def fit(max_epochs: int, ckpt_path: str | None = None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        if kind == "supervised":
            dm = DemonstrationDataModule(root=str(corpus_root), batch_size=8, max_train_examples=6, seed=3)
            learner = SupervisedLearner(dm.vocabulary.to_list())
        else:
            dm = GoalDataModule(root=str(corpus_root), batch_size=4, max_train_examples=24, seed=3)
            learner = GoalLearner(dm.vocabulary.to_list())
        every_epoch = pl.callbacks.ModelCheckpoint(
            tmp_path, "{epoch}", save_top_k=-1, save_on_train_epoch_end=True
        )
        trainer = pl.Trainer(max_epochs=max_epochs, logger=False, enable_progress_bar=False, limit_val_batches=0,
                             enable_model_summary=False, callbacks=[every_epoch])  # fmt: skip
        trainer.fit(learner, train_dataloaders=dm.train_dataloader(), ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    whole = fit(3)
    resumed = fit(3, ckpt_path=str(tmp_path / "epoch=0.ckpt"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


@pytest.mark.parametrize("interval, stop_after", [(0.25, 2), (0.5, 0), (0.25, 7)])
def test_a_run_stopped_mid_epoch_validates_every_check_through_later_resumes(interval, stop_after, corpus_root,
                                                                            tmp_path):  # fmt: skip
    """Stopped with SIGTERM (right after a validation, between two, at an epoch's end), resumed to its end, then
    resumed again for one more epoch: the run validates at the same steps, and ends with the same weights, as one
    that was never stopped. (The stop's checkpoint once counted the batch fetched but not trained, and the last
    validation of every later resume was dropped.)"""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.runs.callbacks import GracefulStop

    validated: list[tuple[int, int]] = []

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.current_epoch == 0 and batch_idx == stop_after:
                os.kill(os.getpid(), signal.SIGTERM)

    class Validations(pl.Callback):
        def on_validation_end(self, trainer, module):
            validated.append((trainer.current_epoch, trainer.global_step))

    def fit(folder, max_epochs, extra=(), ckpt_path=None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                               max_val_examples=2, seed=3)  # fmt: skip
        learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(folder, "{epoch}-{step}", save_top_k=-1, save_last=True)
        trainer = pl.Trainer(max_epochs=max_epochs, logger=False, enable_progress_bar=False, num_sanity_val_steps=0,
                             val_check_interval=interval, enable_model_summary=False,
                             callbacks=[checkpoints, GracefulStop(), Validations(), *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    fit(tmp_path / "whole", 2)
    whole = fit(tmp_path / "whole", 3, ckpt_path=str(tmp_path / "whole" / "last.ckpt"))
    reference, validated[:] = list(validated), []
    assert len(reference) == 3 * round(1 / interval)  # 8 batches an epoch, a check every 2 or 4
    with pytest.raises(SystemExit):
        fit(tmp_path / "stopped", 2, [SendSignal()])
    last = str(tmp_path / "stopped" / "last.ckpt")
    fit(tmp_path / "stopped", 2, ckpt_path=last)
    resumed = fit(tmp_path / "stopped", 3, ckpt_path=last)
    assert validated == reference
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)


@pytest.mark.parametrize(
    "kind, signum",
    [("supervised", "SIGINT"), ("supervised_replay", "SIGTERM"), ("bandit", "SIGTERM"), ("bandit", "SIGINT")],
)
def test_an_interrupt_saves_last_ckpt_and_the_resumed_run_ends_as_one_never_stopped(kind, signum, corpus_root,
                                                                                     tmp_path):  # fmt: skip
    """Ctrl-C, or a cluster's SIGTERM, in the middle of an epoch (and of a rollout's update): the update finishes,
    last.ckpt is written, the process exits 128 + the signal; resumed, the run ends with the same weights."""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.learn.supervised import SupervisedLearner
    from blocks.runs.callbacks import GracefulStop

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if trainer.current_epoch == 0 and batch_idx == 2:
                os.kill(os.getpid(), getattr(signal, signum))

    def fit(folder, extra=(), ckpt_path=None) -> dict[str, torch.Tensor]:
        pl.seed_everything(0)
        if kind.startswith("supervised"):
            dm = DemonstrationDataModule(root=str(corpus_root), batch_size=8, max_train_examples=6, seed=3,
                                         sampling="replay" if kind == "supervised_replay" else "shuffle")  # fmt: skip
            learner = SupervisedLearner(dm.vocabulary.to_list())
        else:
            dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                                   seed=3)  # fmt: skip
            learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(folder, save_last=True)
        trainer = pl.Trainer(max_epochs=2, logger=False, enable_progress_bar=False, limit_val_batches=0,
                             enable_model_summary=False, callbacks=[checkpoints, GracefulStop(), *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)
        return {k: v.clone() for k, v in learner.state_dict().items()}

    whole = fit(tmp_path / "whole")
    before = signal.getsignal(signal.SIGINT)
    with pytest.raises(SystemExit) as stopped:
        fit(tmp_path / "stopped", [SendSignal()])
    assert stopped.value.code == 128 + getattr(signal, signum)
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are given back
    last = torch.load(tmp_path / "stopped" / "last.ckpt", weights_only=True)
    assert last["epoch"] == 0 and last["global_step"] == (
        3 if kind.startswith("supervised") else 2
    )  # whole updates only
    resumed = fit(tmp_path / "stopped", ckpt_path=str(tmp_path / "stopped" / "last.ckpt"))
    assert all(torch.equal(whole[k], resumed[k]) for k in whole)
    # The resumed run's own last checkpoint replaced the interrupted one: no stale last.ckpt beside a last-v1.ckpt.
    assert not list((tmp_path / "stopped").glob("last-v*.ckpt"))
    final = torch.load(tmp_path / "stopped" / "last.ckpt", weights_only=True)
    assert (
        final["global_step"] == torch.load(tmp_path / "whole" / "last.ckpt", weights_only=True)["global_step"]
    )


def test_the_progress_bar_of_a_run_resumed_mid_epoch_shows_its_epoch_and_total(corpus_root, tmp_path):
    """Lightning skips ``on_train_epoch_start`` after a resume in mid-epoch: its own bar read ``4/?``."""
    import os
    import signal

    import pytorch_lightning as pl

    from blocks.runs.callbacks import GracefulStop, ProgressBar

    seen: list[tuple[object, str, int]] = []

    class SendSignal(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            if batch_idx == 2:
                os.kill(os.getpid(), signal.SIGTERM)

    class Look(pl.Callback):
        def on_train_batch_end(self, trainer, module, outputs, batch, batch_idx):
            bar = trainer.progress_bar_callback.train_progress_bar
            seen.append((bar.total, bar.desc, bar.n))

    def fit(extra, ckpt_path=None) -> None:
        pl.seed_everything(0)
        dm = RolloutDataModule(root=str(corpus_root), batch_size=2, chunks_per_update=2, max_train_examples=8,
                               max_val_examples=2, seed=3)  # fmt: skip
        learner = BanditLearner(dm.vocabulary.to_list(), lr=1e-3)
        checkpoints = pl.callbacks.ModelCheckpoint(tmp_path, save_last=True)
        trainer = pl.Trainer(max_epochs=1, logger=False, num_sanity_val_steps=0, enable_model_summary=False,
                             limit_val_batches=0, callbacks=[checkpoints, GracefulStop(), ProgressBar(refresh_rate=1),
                                                             *extra])  # fmt: skip
        trainer.fit(learner, datamodule=dm, ckpt_path=ckpt_path, weights_only=True)

    with pytest.raises(SystemExit):
        fit([SendSignal()])
    fit([Look()], ckpt_path=str(tmp_path / "last.ckpt"))
    assert seen and all(total == 8 and desc.startswith("Epoch 0") for total, desc, _ in seen)
    first = seen[0][2]  # it goes on counting from where the run stopped (after the update in progress)
    assert first >= 4 and [n for *_, n in seen] == list(range(first, 9))
