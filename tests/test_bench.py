import json


def test_env_benchmark_prints_its_figures_as_json(capsys):
    from blocks.bench import main

    figures = main(["env", "--seconds", "0.05"])
    last = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert {"transitions_per_s", "rendered_inputs_per_s", "copy_bound_inputs_per_s"} <= set(last)
    assert all(v > 0 for v in figures.values())
