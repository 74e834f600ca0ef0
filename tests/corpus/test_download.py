"""The downloader against a local HTTP server on 127.0.0.1: good files, a corrupted one, a missing one."""

from __future__ import annotations

import functools
import hashlib
import shutil
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import pytest

from blocks.corpus import download as dl


class QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture
def server(tmp_path):
    """Serves ``tmp_path/served`` laid out like the release: Assets/<split>.json, Assets/Resources/<logo>.png."""
    served = tmp_path / "served"
    (served / "Resources").mkdir(parents=True)
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(QuietHandler, directory=str(served)))
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield served, f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture
def fake_checksums(monkeypatch):
    """Small stand-in files with their checksums, so the test runs without the real corpus."""
    contents = {"devset.json": b"[]", "textures/sri.png": b"not really a png"}
    table = {name: hashlib.sha256(data).hexdigest() for name, data in contents.items()}
    monkeypatch.setattr(dl, "SHA256", table)
    return contents


def test_downloads_and_verifies(server, fake_checksums, tmp_path):
    served, url = server
    (served / "devset.json").write_bytes(fake_checksums["devset.json"])
    (served / "Resources" / "sri.png").write_bytes(fake_checksums["textures/sri.png"])
    root = tmp_path / "cache"
    assert dl.ensure_file("devset.json", root, url).read_bytes() == b"[]"
    assert dl.ensure_file("textures/sri.png", root, url).read_bytes() == fake_checksums["textures/sri.png"]
    assert not list(root.rglob("*.part"))


def test_corrupted_download_is_rejected_and_not_kept(server, fake_checksums, tmp_path):
    served, url = server
    (served / "devset.json").write_bytes(b"[{}]")  # differs from the checksum
    root = tmp_path / "cache"
    with pytest.raises(dl.CorpusError, match="checksum mismatch for devset.json"):
        dl.ensure_file("devset.json", root, url)
    assert not (root / "devset.json").exists() and not list(root.rglob("*.part"))


def test_unreachable_file_names_it_and_says_what_to_do(server, fake_checksums, tmp_path):
    _, url = server  # nothing served: 404
    with pytest.raises(dl.CorpusError, match=r"could not download devset.json .*copy the file"):
        dl.ensure_file("devset.json", tmp_path / "cache", url)


def test_a_mistyped_data_root_is_named_and_not_created(server, fake_checksums, tmp_path, monkeypatch):
    _, url = server  # nothing served: the download fails
    typo = tmp_path / "blcoks" / "data"
    monkeypatch.setenv("BLOCKS_DATA", str(typo))
    with pytest.raises(dl.CorpusError, match=r"^BLOCKS_DATA=.*blcoks/data: no such folder \(mistyped\?\)"):
        dl.ensure_file("devset.json", None, url)
    assert not (tmp_path / "blcoks").exists()


@pytest.mark.parametrize("where", ["BLOCKS_DATA", "data.root"])
def test_a_data_root_that_is_a_file_is_one_line(fake_checksums, tmp_path, monkeypatch, where):
    (tmp_path / "corpus.zip").write_bytes(b"PK")
    monkeypatch.setenv(
        "BLOCKS_DATA", str(tmp_path / "corpus.zip") if where == "BLOCKS_DATA" else str(tmp_path)
    )
    root = None if where == "BLOCKS_DATA" else tmp_path / "corpus.zip"
    with pytest.raises(dl.CorpusError, match=rf"^{where}=.*corpus.zip: a file, not a folder"):
        dl.ensure_file("devset.json", root)


def test_a_corpus_file_that_is_a_folder_or_unreadable_is_one_line(fake_checksums, tmp_path, monkeypatch):
    (tmp_path / "devset.json").mkdir()
    with pytest.raises(dl.CorpusError, match=r"devset.json: not a file \(a folder\?\)"):
        dl.ensure_file("devset.json", tmp_path)
    (tmp_path / "devset.json").rmdir()
    (tmp_path / "devset.json").write_bytes(b"[]")

    def denied(path):  # what a file of mode 000 gives a user without root's override
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(dl, "sha256_of", denied)
    with pytest.raises(dl.CorpusError, match=r"devset.json: cannot be read \(Permission denied\)"):
        dl.ensure_file("devset.json", tmp_path)


def test_corrupt_file_on_disk_is_reported(fake_checksums, tmp_path):
    (tmp_path / "devset.json").write_bytes(b"[1]")
    with pytest.raises(dl.CorpusError, match="corrupt or not the released file"):
        dl.ensure_file("devset.json", tmp_path)


def test_unknown_file_is_refused(tmp_path):
    with pytest.raises(dl.CorpusError, match="unknown corpus file"):
        dl.ensure_file("secret.json", tmp_path)


def test_real_files_through_the_server(server, corpus_root, tmp_path):
    """Copies of the real files download with the real checksums; a corrupted copy is refused."""
    served, url = server
    shutil.copy(corpus_root / "devset.json", served / "devset.json")
    shutil.copy(corpus_root / "textures" / "toyota.png", served / "Resources" / "toyota.png")
    root = tmp_path / "cache"
    assert (
        dl.ensure_file("devset.json", root, url).stat().st_size
        == (corpus_root / "devset.json").stat().st_size
    )
    dl.ensure_file("textures/toyota.png", root, url)
    data = bytearray((corpus_root / "textures" / "sri.png").read_bytes())
    data[100] ^= 0xFF
    (served / "Resources" / "sri.png").write_bytes(bytes(data))
    with pytest.raises(dl.CorpusError, match="checksum mismatch for sri.png"):
        dl.ensure_file("textures/sri.png", root, url)


def test_release_urls_follow_the_pattern():
    assert dl.release_url("devset.json").endswith(
        f"/{dl.RELEASE_COMMIT}/BlockWorldSimulator/Assets/devset.json"
    )
    assert dl.release_url("textures/sri.png").endswith("/BlockWorldSimulator/Assets/Resources/sri.png")
