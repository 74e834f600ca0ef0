"""Where a training step's time goes, stage by stage, and the floor it is read against: the paper's CNN alone.

Each stage is timed on its own, on a real batch, the way a step runs it (forward and backward together where it
has weights): what the stages add up to beside the whole step's time says what the trainer itself costs.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import torch
import torch.nn.functional as F

from blocks.model.policy import ImageEncoder, PolicyNetwork, standardize


def seconds_per_call(work: Callable[[], object], min_seconds: float = 0.5, warmup: int = 2) -> float:
    """Mean wall-clock seconds of ``work()``, repeated for at least ``min_seconds`` after ``warmup`` calls."""
    for _ in range(warmup):
        work()
    calls, start = 0, time.perf_counter()
    while (elapsed := time.perf_counter() - start) < min_seconds or calls < 3:
        work()
        calls += 1
    return elapsed / calls


def cnn_floor(
    batch: int = 32, image_size: int = 120, frames: int = 5, seconds: float = 1.0
) -> dict[str, float]:
    """The paper's CNN alone, float32, channels-last, on standardised ``batch`` stacks: forward frames/s (a
    rollout's) and forward + backward + Adam frames/s (an update's). Nothing a step does beside the CNN is in it,
    so a learner at 100 % of it would spend nothing on pictures, words, heads or the trainer."""
    torch.manual_seed(0)
    encoder = ImageEncoder(3 * frames, image_size)
    optimizer = torch.optim.Adam(encoder.parameters(), lr=1e-4)
    images = torch.randn(batch, 3 * frames, image_size, image_size).contiguous(
        memory_format=torch.channels_last
    )

    def forward() -> None:
        with torch.no_grad():
            encoder(images)

    def update() -> None:
        optimizer.zero_grad()
        encoder(images).square().mean().backward()
        optimizer.step()

    forward_rate = batch / seconds_per_call(forward, seconds)
    update_rate = batch / seconds_per_call(update, seconds)
    return {
        "cnn_floor_forward_frames_per_s": forward_rate,
        "cnn_floor_frames_per_s": update_rate,
        # a bandit frame is one forward in its rollout and one forward + backward + Adam in its update
        "cnn_floor_bandit_frames_per_s": 1 / (1 / forward_rate + 1 / update_rate),
    }


def network_stages(
    network: PolicyNetwork,
    images: torch.Tensor,
    tokens: torch.Tensor,
    lengths: torch.Tensor,
    previous: torch.Tensor,
    block: torch.Tensor,
    direction: torch.Tensor,
    seconds: float = 0.5,
    gradient_clip: float | None = 5.0,
) -> dict[str, float]:
    """Seconds per batch of each network stage of one update on ``images`` (uint8 stacks) and its words:
    standardisation, the CNN (forward + backward), the instruction's LSTM (forward + backward, one row per
    instruction given), the hidden layer, heads and loss (forward + backward), and the optimizer (clip + Adam)."""
    optimizer = torch.optim.Adam(network.parameters(), lr=1e-4)
    standardised = standardize(images)
    with torch.no_grad():
        picture = network.image_encoder(standardised)
        text = network.encode_instruction(tokens, lengths)
    if len(text) != len(
        images
    ):  # one row per distinct instruction: spread over the frames as the learners do
        text = text[torch.arange(len(images)) % len(text)]

    def heads() -> None:
        parts = [picture.detach().requires_grad_(), text.detach().requires_grad_()]
        if network.use_previous_action:
            parts.append(network.embed_previous_action(previous))
        features = F.relu(network.hidden(torch.cat(parts, dim=1)))
        distribution = network.action_distribution(features)
        (-distribution.log_prob_parts(block, direction).mean()).backward()

    def step() -> None:
        if gradient_clip:
            torch.nn.utils.clip_grad_norm_(network.parameters(), gradient_clip)
        optimizer.step()
        optimizer.zero_grad(set_to_none=False)  # every gradient stays: each timed step updates every weight

    for parameter in network.parameters():
        parameter.grad = torch.zeros_like(parameter) if parameter.grad is None else parameter.grad

    times = {
        "standardize": seconds_per_call(lambda: standardize(images), seconds),
        "cnn": seconds_per_call(lambda: network.image_encoder(standardised).sum().backward(), seconds),
        "text": seconds_per_call(
            lambda: network.encode_instruction(tokens, lengths).sum().backward(), seconds
        ),
        "heads_and_loss": seconds_per_call(heads, seconds),
    }
    times["optimizer"] = seconds_per_call(step, seconds)
    return times


def print_breakdown(name: str, times: dict[str, float], step_seconds: float, frames: int) -> dict[str, float]:
    """Print a learner's stages (ms per step and share of the whole step) and return them as figures."""
    print(f"{name}: {1000 * step_seconds:.1f} ms a step of {frames} frames, by stage:")
    figures = {}
    for stage, seconds in times.items():
        print(f"  {stage:<16} {1000 * seconds:7.1f} ms  {seconds / step_seconds:6.1%}")
        figures[f"{name}_{stage}_ms"] = 1000 * seconds
    rest = step_seconds - sum(times.values())
    print(f"  {'trainer, other':<16} {1000 * rest:7.1f} ms  {rest / step_seconds:6.1%}")
    figures[f"{name}_other_ms"] = 1000 * rest
    return figures
