"""python -m blocks.demo [port=7860] [host=127.0.0.1] [checkpoints=checkpoints] [data_root=<corpus>] [log_dir=logs/demo]

Serves the page where one tries the agents: http://127.0.0.1:7860 by default (keys may also be written demo.port=).
It listens on this machine only unless host= says otherwise, and writes nothing but its log.
"""

from __future__ import annotations

import logging
import sys
from pathlib import Path

from omegaconf import OmegaConf

from blocks.cli import run_key_value
from blocks.errors import ConfigError

DEFAULTS = {
    "port": 7860,
    "host": "127.0.0.1",
    "checkpoints": "checkpoints",
    "data_root": None,
    "log_dir": "logs/demo",
}


def parse(argv: list[str]) -> dict:
    malformed = [a for a in argv if "=" not in a]
    if malformed:
        raise ConfigError(
            f"{malformed[0]!r}: options are key=value, for example port=7861 ({__doc__.splitlines()[0]})"
        )
    settings = [a.removeprefix("demo.") for a in argv]
    cfg = OmegaConf.merge(OmegaConf.create(DEFAULTS), OmegaConf.from_dotlist(settings))
    unknown = set(cfg) - set(DEFAULTS)
    if unknown:
        raise ConfigError(f"unknown option(s) {sorted(unknown)}; known: {', '.join(DEFAULTS)}")
    if not isinstance(cfg.port, int) or not 0 <= cfg.port < 65536:
        raise ConfigError(f"port={cfg.port}: a whole number from 1 to 65535 (0: any free port)")
    return OmegaConf.to_container(cfg)


def main(argv: list[str]) -> None:
    from blocks.demo.app import DemoApp
    from blocks.demo.server import DemoServer

    cfg = parse(argv)
    log_dir = Path(cfg["log_dir"])
    try:
        log_dir.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(log_dir / "demo.log")
    except OSError as error:
        raise ConfigError(
            f"cannot write the log folder {log_dir}: {error.strerror}; choose one with log_dir="
        ) from None
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    logging.getLogger("blocks.demo").addHandler(handler)
    logging.getLogger("blocks.demo").setLevel(logging.INFO)
    app = DemoApp(cfg["data_root"], cfg["checkpoints"])
    try:
        server = DemoServer(app, cfg["host"], cfg["port"])
    except OSError as error:
        raise ConfigError(
            f"cannot listen on {cfg['host']}:{cfg['port']} ({error.strerror}): choose another with port=<number>"
        ) from None
    for agent in app.agents():
        if not agent["available"]:
            print(f"note: agent {agent['name']} is not offered: {agent['missing']}", file=sys.stderr)
    if app.missing("read_and_plan") is None:  # the page's default: loaded now, so the first Run is quick
        app.agent("read_and_plan")
    if cfg["host"] not in ("127.0.0.1", "localhost", "::1"):
        print(f"note: listening on {cfg['host']}: other machines can reach the page", file=sys.stderr)
    print(f"the demo: {server.url} (Ctrl-C stops it); its log: {log_dir / 'demo.log'}", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


if __name__ == "__main__":
    run_key_value(main, __doc__)
