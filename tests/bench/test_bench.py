import json


def test_env_benchmark_prints_its_figures_as_json(capsys):
    from blocks.bench import main

    figures = main(["env", "--seconds", "0.05"])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"transitions_per_s", "rendered_inputs_per_s", "copy_bound_inputs_per_s"} <= set(last)
    assert all(v > 0 for v in figures.values())


def test_the_network_floor_is_measured_and_bounds_a_bandit_frame():
    from blocks.bench import network_floor

    floor = network_floor(batch=4, device="cpu", seconds=0.05)
    forward, update, bandit = (floor[f"floor_{k}_frames_per_s"] for k in ("forward", "update", "bandit"))
    # Timings only: no order between forward and update is asserted (a busy machine can swap them); a bandit
    # frame needs both, so it is slower than either.
    assert forward > 0 and update > 0 and 0 < bandit < min(forward, update)
    assert abs(1 / bandit - (1 / forward + 1 / update)) < 1e-9
    # On the corpus's own instructions (ids up to the vocabulary's size), padded per batch as the learners pad.
    words = network_floor(batch=4, device="cpu", seconds=0.05, instructions=[[5, 6], [7] * 30, [2047]])
    assert words["floor_update_frames_per_s"] > 0


def test_the_training_benchmark_without_the_corpus_is_one_line_and_status_2(tmp_path, monkeypatch, capsys):
    import urllib.error
    import urllib.request

    import pytest

    from blocks.bench import main

    def offline(*args, **kwargs):
        raise urllib.error.URLError("no network here")

    monkeypatch.setenv("BLOCKS_DATA", str(tmp_path))  # an empty folder: the corpus would be downloaded
    monkeypatch.setattr(urllib.request, "urlopen", offline)
    with pytest.raises(SystemExit) as stopped:
        main(["train", "--seconds", "0.05"])
    err = capsys.readouterr().err.strip().splitlines()
    assert stopped.value.code == 2 and len(err) == 1 and err[0].startswith("error: ")


def test_a_steps_stages_are_timed_on_their_own_and_the_cnn_floor_bounds_a_bandit_frame():
    import torch

    from blocks.bench.stages import cnn_floor, network_stages, print_breakdown
    from blocks.model.policy import PolicyNetwork

    floor = cnn_floor(batch=2, image_size=32, frames=2, seconds=0.02)
    forward, update = floor["cnn_floor_forward_frames_per_s"], floor["cnn_floor_frames_per_s"]
    assert abs(1 / floor["cnn_floor_bandit_frames_per_s"] - (1 / forward + 1 / update)) < 1e-9
    network = PolicyNetwork(30, image_size=32, frames=2)
    images = torch.randint(0, 256, (4, 6, 32, 32), dtype=torch.uint8)
    tokens, lengths = torch.randint(2, 30, (2, 5)), torch.tensor([5, 2])  # two instructions for four frames
    times = network_stages(network, images, tokens, lengths, torch.tensor([-1, 0, 4, 80]), torch.tensor([0, 1, 2, 3]),
                           torch.tensor([0, 1, 4, 2]), seconds=0.02)  # fmt: skip
    assert list(times) == ["standardize", "cnn", "text", "heads_and_loss", "optimizer"]
    assert all(t > 0 for t in times.values())
    figures = print_breakdown("supervised", times, step_seconds=2 * sum(times.values()), frames=4)
    assert abs(figures["supervised_other_ms"] - 1000 * sum(times.values())) < 1e-6
