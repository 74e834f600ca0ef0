"""The demo's web server: the page and a small JSON API over :class:`~blocks.demo.app.DemoApp`.

Python's own ``http.server`` (threaded) rather than gradio or FastAPI: the page needs four routes, the package
gains no dependency (gradio brings about a hundred packages, FastAPI an ASGI server and pydantic), and the tests
start it in-process on a free port in a few milliseconds.

GET /                      the page
GET /api/agents            the agents, and why one cannot run
GET /api/board?index=N     a board's start picture and its instruction (index=random for any; &view=release,
                           &agent=<name> for the picture that agent sees)
POST /api/run              {"index": N, "instruction": "...", "agent": "read_and_plan"} -> the episode
POST /api/gif              the same request -> the episode as an animated GIF (python -m blocks.animate's)
"""

from __future__ import annotations

import json
import logging
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from typing import Any
from urllib.parse import parse_qs, urlsplit

from blocks.demo.app import DemoApp, DemoError

MAX_BODY = 64 * 1024  # bytes of a request body: an instruction is at most 1,000 characters
log = logging.getLogger("blocks.demo")


class DemoServer(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, app: DemoApp, host: str = "127.0.0.1", port: int = 7860):
        self.app = app
        self.page = resources.files("blocks.demo").joinpath("page.html").read_bytes()
        super().__init__((host, port), DemoHandler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start_in_thread(self) -> threading.Thread:
        """Serve from a background thread (tests, notebooks); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, daemon=True)
        thread.start()
        return thread


class DemoHandler(BaseHTTPRequestHandler):
    server: DemoServer
    server_version = "blocks-demo"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (the base class's name)
        log.info("%s %s", self.address_string(), format % args)

    def send_body(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def send_json(self, status: int, payload: dict[str, Any] | list[Any]) -> None:
        self.send_body(status, json.dumps(payload).encode(), "application/json")

    def answer(self, work, content_type: str = "application/json") -> None:
        """Run ``work`` and send its result (JSON, or bytes of ``content_type``); a :class:`DemoError` is a 400
        with its message, anything else a 500 that names the log (the server goes on serving either way)."""
        started = time.perf_counter()
        try:
            result = work()
            if isinstance(result, bytes):
                self.send_body(HTTPStatus.OK, result, content_type)
            else:
                self.send_json(HTTPStatus.OK, result)
        except DemoError as error:
            log.info("refused: %s", error)
            self.send_json(HTTPStatus.BAD_REQUEST, {"error": str(error)})
        except Exception as error:  # a bug: the user sees one line, the log keeps the traceback
            log.exception("failed: %s %s", self.command, self.path)
            self.send_json(
                HTTPStatus.INTERNAL_SERVER_ERROR,
                {
                    "error": f"the server failed ({type(error).__name__}: {error}); the traceback is in its log"
                },
            )
        log.info(
            "%s %s answered in %.3f s", self.command, urlsplit(self.path).path, time.perf_counter() - started
        )

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        url = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(url.query, keep_blank_values=True).items()}
        if url.path in ("/", "/index.html"):
            self.send_body(HTTPStatus.OK, self.server.page, "text/html; charset=utf-8")
        elif url.path == "/api/agents":
            self.answer(lambda: {"agents": self.server.app.agents(), "count": len(self.server.app.examples),
                                 "split": self.server.app.split, "presets": self.server.app.presets()})  # fmt: skip
        elif url.path == "/api/board":
            self.answer(
                lambda: self.server.app.board(query.get("index", "0"), query.get("view"), query.get("agent"))
            )
        else:
            self.send_json(HTTPStatus.NOT_FOUND, {"error": f"no page {url.path}"})

    def do_HEAD(self) -> None:  # noqa: N802
        """The page's headers alone (link checkers, curl -I); the API answers only GET and POST."""
        if urlsplit(self.path).path in ("/", "/index.html"):
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(self.server.page)))
            self.end_headers()
        else:
            self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
            self.send_header("Allow", "GET, POST")
            self.end_headers()

    def refuse_method(self) -> None:
        """PUT, DELETE, PATCH, OPTIONS: a JSON 405 naming what the page answers, not http.server's HTML 501."""
        body = json.dumps({"error": f"{self.command} is not served: use GET (the page, /api/agents, /api/board) "
                                    f"or POST /api/run, /api/gif"}).encode()  # fmt: skip
        self.send_response(HTTPStatus.METHOD_NOT_ALLOWED)
        self.send_header("Allow", "GET, HEAD, POST")
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_PUT = do_DELETE = do_PATCH = do_OPTIONS = refuse_method  # noqa: N815

    def do_POST(self) -> None:  # noqa: N802
        if urlsplit(self.path).path not in ("/api/run", "/api/gif"):
            self.send_json(HTTPStatus.NOT_FOUND, {"error": f"no page {urlsplit(self.path).path}"})
            return
        try:
            length = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            length = -1
        if not 0 < length <= MAX_BODY:
            self.send_json(HTTPStatus.BAD_REQUEST, {"error": f"send a JSON body of 1 to {MAX_BODY:,} bytes"})
            self.close_connection = True
            return
        body = self.rfile.read(length)

        def parsed() -> Any:
            try:
                request = json.loads(body.decode("utf-8"))
            except (UnicodeDecodeError, json.JSONDecodeError):
                raise DemoError("the request is not JSON") from None
            except RecursionError:  # "[[[[...]]]]" within the size limit: Python's parser recurses per level
                raise DemoError("the request nests too deeply: send one flat JSON object") from None
            return request

        if urlsplit(self.path).path == "/api/gif":
            self.answer(lambda: self.server.app.gif(parsed()), "image/gif")
        else:
            self.answer(lambda: self.server.app.run(parsed()))
