"""The import graph of ``src/blocks`` has no circle, between modules or between subpackages, and the layers keep
to their place: the simulator knows nothing of torch, the model nothing of the corpus, agents nothing of training."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"


def module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def import_graph() -> dict[str, set[str]]:
    """Module -> the ``blocks`` modules it imports anywhere in its body (function-level imports included)."""
    modules = {module_name(p): p for p in (SRC / "blocks").rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # "from blocks.x import y" imports blocks.x.y when that is a module, else blocks.x
                for alias in node.names:
                    full = f"{node.module}.{alias.name}"
                    targets.add(full if full in modules else node.module)
        graph[name] = {t for t in targets if t in modules and t != name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def layer(module: str) -> str:
    """The subpackage (``blocks.world``) or top-level module (``blocks.evaluate``) a module belongs to."""
    return ".".join(module.split(".")[:2])


def test_no_module_imports_itself_back():
    assert cycles(import_graph()) == []


def test_no_subpackage_imports_itself_back():
    graph = import_graph()
    layers: dict[str, set[str]] = {}
    for module, targets in graph.items():
        if module == "blocks":  # the package's own __init__ only registers the Gymnasium env
            continue
        layers.setdefault(layer(module), set()).update(layer(t) for t in targets if layer(t) != layer(module))
    layers = {k: v - {"blocks"} for k, v in layers.items()}
    assert cycles(layers) == []


@pytest.mark.parametrize(
    "layer_name, forbidden",
    [
        ("blocks.world", {"blocks.model", "blocks.learn", "blocks.agents", "blocks.corpus", "blocks.render"}),
        ("blocks.model", {"blocks.corpus", "blocks.learn", "blocks.agents", "blocks.evaluate"}),
        ("blocks.agents", {"blocks.learn", "blocks.data", "blocks.runs"}),
        ("blocks.data", {"blocks.learn", "blocks.runs", "blocks.agents", "blocks.evaluate", "blocks.demo"}),
        ("blocks.learn", {"blocks.runs", "blocks.demo"}),
        ("blocks.demo", {"blocks.learn", "blocks.data", "blocks.runs"}),
        ("blocks.report", {"blocks.runs", "blocks.learn", "blocks.data", "blocks.demo"}),
        ("blocks.corpus", {"blocks.model", "blocks.learn", "blocks.agents"}),
        ("blocks.render", {"blocks.model", "blocks.learn", "blocks.agents"}),
        ("blocks.tensor_world", {"blocks.model", "blocks.learn", "blocks.agents", "blocks.corpus"}),
    ],
)
def test_each_layer_keeps_to_its_place(layer_name, forbidden):
    graph = import_graph()
    reached = {layer(t) for m, targets in graph.items() if layer(m) == layer_name for t in targets}
    assert not reached & forbidden


def test_the_simulator_runs_without_torch():
    sources = [p.read_text() for p in (SRC / "blocks" / "world").rglob("*.py")]
    assert not any("import torch" in s for s in sources)


def test_make_install_brings_jupyter_for_the_notebooks():
    """The README says `jupyter lab notebooks/` after `make install` (the dev extras pull the notebooks extra)."""
    import importlib.util

    assert (
        importlib.util.find_spec("jupyterlab") is not None
        and importlib.util.find_spec("nbclient") is not None
    )


def test_every_data_file_the_package_reads_is_in_its_wheel():
    """A file beside the code (the release picture's scene and labels, the demo's page) must be listed in
    pyproject's package-data, or `pip install .` (not editable) installs the code without it."""
    tomllib = pytest.importorskip("tomllib")  # Python 3.11+

    listed = tomllib.loads((SRC.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    data = [p for p in (SRC / "blocks").rglob("*") if p.is_file() and p.suffix not in (".py", ".pyc")]
    assert data  # the scene file at least
    for path in data:
        package = ".".join(path.parent.relative_to(SRC).parts)
        assert path.name in listed.get(package, []), f"{path.relative_to(SRC)} is not in package-data"
