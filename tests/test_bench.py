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
