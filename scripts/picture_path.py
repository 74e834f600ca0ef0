"""Is a policy's picture path alive? The share of (stack, channel) maps with any activity after each convolution.

    python scripts/picture_path.py <checkpoint> [<checkpoint> ...] [--stacks 64]

Reads ``--stacks`` demonstration stacks of the training split, drawn with the picture each checkpoint was trained
on, through each network's three convolutions (after the ReLU). A third convolution at 0.00 means every filter is
dead on every input: the convolutions' gradients are exactly zero and the network is blind for good
(docs/experiments/release-fidelity.md, section 2). The last line is one JSON object per checkpoint.
"""

from __future__ import annotations

import argparse
import json
import os

import torch

from blocks.data.demonstrations import DemonstrationDataModule
from blocks.model.checkpoint import read_checkpoint
from blocks.model.policy import standardize
from blocks.render.factory import render_of


def activity(network: torch.nn.Module, images: torch.Tensor) -> list[float]:
    """Per convolution: the share of (stack, channel) maps with a positive value anywhere (a ReLU's output is
    positive exactly where its input is, so the convolutions' own outputs are read)."""
    outputs: list[torch.Tensor] = []
    hooks = [
        conv.register_forward_hook(lambda _, __, out: outputs.append(out))
        for conv in network.image_encoder.convs
    ]
    try:
        with torch.no_grad():
            network.image_encoder(standardize(images))
    finally:
        for hook in hooks:
            hook.remove()
    return [float((out.flatten(2).amax(dim=2) > 0).float().mean()) for out in outputs]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("checkpoints", nargs="+")
    parser.add_argument("--stacks", type=int, default=64, help="demonstration stacks read (default 64)")
    args = parser.parse_args()
    root = os.environ.get("BLOCKS_DATA")
    results = []
    for path in args.checkpoints:
        checkpoint = read_checkpoint(path)
        render = render_of(checkpoint.hparams)
        data = DemonstrationDataModule(root=root, batch_size=args.stacks, seed=0, render=render,
                                       max_train_examples=args.stacks)  # fmt: skip
        data.setup("fit")
        batch = next(iter(data.train_dataloader()))
        shares = activity(checkpoint.build().eval(), batch["images"])
        print(f"{path} ({render} picture): active maps after conv 1 / 2 / 3: "
              + " / ".join(f"{s:.2f}" for s in shares))  # fmt: skip
        results.append({"checkpoint": path, "render": render, "active": [round(s, 4) for s in shares]})
    print(json.dumps(results))


if __name__ == "__main__":
    main()
