"""blocks.runs.record: a run's record names the versions and installs it ran under, across resumes."""

from __future__ import annotations

import numpy as np


def test_a_runs_record_names_the_versions_that_wrote_it():
    """The dependencies are not pinned: each checkpoint's record keeps Python's and the packages' versions."""
    import platform

    import torch
    from omegaconf import OmegaConf

    from blocks.runs.record import PACKAGES, make_record

    record = make_record(OmegaConf.create({"seed": 42, "data": {"render": "${oc.env:NOWHERE,flat}"}}))
    assert record["config"]["data"]["render"] == "${oc.env:NOWHERE,flat}"  # interpolations kept, not resolved
    environment = record["environment"]
    assert set(environment) == {"python", "platform", *PACKAGES}
    assert environment["python"] == platform.python_version() and environment["torch"] == torch.__version__
    assert environment["numpy"] == np.__version__ and environment["blocks"] is not None
    assert environment["transformers"] is not None  # the goal network's word reader: make install brings it


def test_a_resumed_run_keeps_the_installs_it_ran_under(tmp_path):
    """A run resumed under other versions names both installs and the step the second took over from; resumed under
    the same, it names one; a checkpoint from before records named versions starts the list at its step."""
    import pytorch_lightning as pl
    import torch
    from omegaconf import OmegaConf

    from blocks.runs.record import RECORD_KEY, RunRecord, carried_installs, environment, make_record

    now = environment()
    older = {**now, "torch": "0.0.1"}
    assert carried_installs({"global_step": 7}, now) == [{"from_step": 7, **now}]
    assert carried_installs({RECORD_KEY: {"environment": now}, "global_step": 7}, now) == [
        {"from_step": 0, **now}
    ]
    assert carried_installs({RECORD_KEY: {"environment": older}, "global_step": 7}, now) == [
        {"from_step": 0, **older},
        {"from_step": 7, **now},
    ]

    class Tiny(pl.LightningModule):
        def __init__(self):
            super().__init__()
            self.layer = torch.nn.Linear(2, 1)

        def training_step(self, batch, batch_idx):
            return self.layer(batch[0]).pow(2).mean()

        def configure_optimizers(self):
            return torch.optim.SGD(self.parameters(), lr=0.1)

    data = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(torch.randn(8, 2)), batch_size=2)

    def fit(epochs: int, ckpt_path: str | None = None) -> RunRecord:
        record = RunRecord(make_record(OmegaConf.create({"seed": 1})))
        trainer = pl.Trainer(max_epochs=epochs, callbacks=[record], default_root_dir=tmp_path, logger=False,
                             enable_progress_bar=False, enable_model_summary=False)  # fmt: skip
        trainer.fit(Tiny(), data, ckpt_path=ckpt_path, weights_only=False)
        trainer.save_checkpoint(tmp_path / f"epoch{epochs}.ckpt")
        return record

    fit(1)
    assert fit(2, str(tmp_path / "epoch1.ckpt")).record["installs"] == [{"from_step": 0, **now}]
    saved = torch.load(tmp_path / "epoch2.ckpt", weights_only=False)
    saved[RECORD_KEY]["installs"] = [{"from_step": 0, **older}]  # as if written under another torch
    torch.save(saved, tmp_path / "elsewhere.ckpt")
    fit(3, str(tmp_path / "elsewhere.ckpt"))
    installs = torch.load(tmp_path / "epoch3.ckpt", weights_only=False)[RECORD_KEY]["installs"]
    assert installs == [{"from_step": 0, **older}, {"from_step": 8, **now}]
