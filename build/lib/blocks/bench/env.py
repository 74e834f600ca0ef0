"""The world alone: transitions and pictures per second, numpy and torch (``python -m blocks.bench env``)."""

from __future__ import annotations

import numpy as np

from blocks.bench.common import no_textures, random_tasks, rate


def bench_env(batch: int = 4096, render_batch: int = 32, seconds: float = 2.0) -> dict[str, float]:
    from blocks.render.history import FrameHistory
    from blocks.render.release import ReleaseRenderer
    from blocks.render.renderer import Renderer
    from blocks.world.geometry import STOP
    from blocks.world.vector_env import VectorBlocksEnv

    rng = np.random.default_rng(0)
    tasks = random_tasks(64)
    batch_tasks = [tasks[i % len(tasks)] for i in range(batch)]
    env = VectorBlocksEnv()  # shaped reward: problem + F1 + F2

    def transitions() -> int:
        env.reset(batch_tasks)
        for _ in range(env.horizon):
            env.step(rng.integers(STOP, size=batch))  # moves only: every board stays active for 40 steps
        return batch * env.horizon

    transitions_per_s = rate(transitions, seconds)

    logos = not no_textures()
    renderers = {"flat": Renderer(logos=logos), "release": ReleaseRenderer(logos=logos)}
    renderer = renderers["flat"]
    history = FrameHistory(render_batch)
    small = VectorBlocksEnv()
    small.reset(tasks[:render_batch])
    frames = np.empty((render_batch, 3, renderer.size, renderer.size), np.uint8)
    moves = np.random.default_rng(2)

    def rendered_inputs(picture: str = "flat", step: bool = False) -> int:
        if step:  # an episode's next boards: one block moved on each, so some patches are new to the cache
            small.step(moves.integers(STOP, size=render_batch))
            if small.done.all():
                small.reset(tasks[:render_batch])
        renderers[picture].render(small.positions, small.present, small.logo, out=frames)
        history.push(frames)
        history.stack()  # the model reads this view directly
        return render_batch

    def rendered_inputs_materialised() -> int:
        renderer.render(small.positions, small.present, small.logo, out=frames)
        history.push(frames)
        np.ascontiguousarray(history.stack())
        return render_batch

    source = np.random.default_rng(1).integers(0, 255, history.stack().shape, np.uint8)
    target = np.empty_like(source)

    def copy_bound() -> int:
        np.copyto(target, source)
        return render_batch

    figures = bench_tensor_env(tasks, batch, render_batch, seconds)
    figures |= {
        "transitions_per_s": transitions_per_s,
        "rendered_inputs_per_s": rate(rendered_inputs, seconds),
        "release_rendered_inputs_per_s": rate(lambda: rendered_inputs("release"), seconds),
        "moving_rendered_inputs_per_s": rate(lambda: rendered_inputs("flat", step=True), seconds),
        "release_moving_rendered_inputs_per_s": rate(lambda: rendered_inputs("release", step=True), seconds),
        "rendered_materialised_inputs_per_s": rate(rendered_inputs_materialised, seconds),
        "copy_bound_inputs_per_s": rate(copy_bound, seconds),
    }
    print(f"batched transitions (batch {batch}, shaped reward, no rendering): {transitions_per_s:,.0f} /s")
    print(
        f"rendered agent inputs (batch {render_batch}, 15x{renderer.size}x{renderer.size} uint8 history stack): "
        f"{figures['rendered_inputs_per_s']:,.0f} /s "
        f"({figures['rendered_materialised_inputs_per_s']:,.0f} /s when the stack is copied out)"
    )
    flat, release = figures["moving_rendered_inputs_per_s"], figures["release_moving_rendered_inputs_per_s"]
    same = figures["release_rendered_inputs_per_s"] / figures["rendered_inputs_per_s"]
    print(
        f"the release's picture (data.render=release): {figures['release_rendered_inputs_per_s']:,.0f} /s on the "
        f"same boards ({same:.0%} of flat); boards that move a block each call: {release:,.0f} /s against flat "
        f"{flat:,.0f} /s ({release / flat:.0%})"
    )
    print(f"plain numpy copy of the same bytes: {figures['copy_bound_inputs_per_s']:,.0f} inputs/s")
    return figures


def bench_tensor_env(tasks: list, batch: int, render_batch: int, seconds: float) -> dict[str, float]:
    """The torch world (``data.simulator=torch``) on the GPU when there is one: transitions and pictures."""
    import torch

    from blocks.render.renderer import Renderer
    from blocks.tensor_world import TensorBlocksEnv, TensorRenderer
    from blocks.world.geometry import STOP

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    renderer = TensorRenderer(Renderer(logos=False) if no_textures() else Renderer(), device)
    env = TensorBlocksEnv(device=device)
    batch_tasks = [tasks[i % len(tasks)] for i in range(batch)]
    generator = torch.Generator(device).manual_seed(0)

    def transitions() -> int:
        env.reset(batch_tasks)
        for _ in range(env.horizon):
            env.step(torch.randint(STOP, (batch,), device=device, generator=generator))
        sync()
        return batch * env.horizon

    env.reset(batch_tasks)
    positions, present, logo = env.positions, env.present, env.logo

    def pictures() -> int:
        renderer.render(positions, present, logo)
        sync()
        return batch

    figures = {
        "tensor_transitions_per_s": rate(transitions, seconds),
        "tensor_pictures_per_s": rate(pictures, seconds),
    }
    print(
        f"torch world on {device}: {figures['tensor_transitions_per_s']:,.0f} transitions/s (batch {batch}, shaped "
        f"reward), {figures['tensor_pictures_per_s']:,.0f} pictures/s (batch {batch})"
    )
    return figures
