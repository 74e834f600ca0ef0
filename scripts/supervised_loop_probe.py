"""The picture path's health under two supervised loops, from network.init=release (docs/experiments/release-fidelity.md).

The share of (stack, channel) maps with any activity after each convolution, on 64 training stacks, every quarter
of N updates: `release` is the release's loop (one Adam step per demonstration, 32 steps drawn from a memory of the
last 2,000), `shuffled` ours (shuffled batches of 32). Usage: python scripts/supervised_loop_probe.py 400 release
"""

import collections
import random
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from blocks.learn.data import DemonstrationDataModule
from blocks.model.policy import PolicyNetwork, standardize

torch.set_num_threads(1)
N = int(sys.argv[1])
mode = sys.argv[2]
dm = DemonstrationDataModule(batch_size=32, max_train_examples=1500, seed=0)
steps = dm.steps
# which dataset rows belong to which demonstration, in order
bounds = np.cumsum([0] + [len(p.actions) for p in steps.plans])
probe = steps.collate([steps[i] for i in range(0, len(steps), max(1, len(steps) // 64))][:64])
torch.manual_seed(0)
random.seed(0)
net = PolicyNetwork(len(dm.vocabulary), init="release")
opt = torch.optim.Adam(net.parameters(), lr=1e-3)


def activity():
    with torch.no_grad():
        x = standardize(probe["images"]).contiguous(memory_format=torch.channels_last)
        out = []
        for pad, conv in zip(net.image_encoder.pads, net.image_encoder.convs, strict=True):
            x = F.relu(conv(x if pad is None else F.pad(x, pad)))
            out.append(round((x > 0).flatten(2).any(-1).float().mean().item(), 2))
    return out


memory = collections.deque(maxlen=2000)
order = list(range(len(steps)))
random.shuffle(order)
demo = 0
t = time.time()
for u in range(N):
    if mode == "release":
        memory.extendleft(range(bounds[demo % len(steps.plans)], bounds[demo % len(steps.plans) + 1]))
        demo += 1
        rows = random.sample(list(memory), min(32, len(memory)))
    else:
        rows = order[(u * 32) % len(order) : (u * 32) % len(order) + 32]
    b = steps.collate([steps[i] for i in rows])
    d = net(b["images"], net.encode_instruction(b["tokens"], b["lengths"]), b["previous_action"])
    loss = -d.log_prob_parts(b["block"], b["direction"]).mean()
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(net.parameters(), 5.0)
    opt.step()
    if (u + 1) % (N // 4) == 0:
        print(
            mode,
            u + 1,
            f"loss {loss.item():.3f}",
            "activity",
            activity(),
            f"{time.time() - t:.0f}s",
            flush=True,
        )
