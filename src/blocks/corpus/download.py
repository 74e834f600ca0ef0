"""Find the corpus files on disk, or fetch them from the public release and verify their checksums.

The corpus is never shipped with the package: it lives under a data root (config ``data.root``, default
``$BLOCKS_DATA`` or ``~/.cache/blocks``). Any file missing there is downloaded from the original release at
a pinned commit and accepted only if its SHA-256 matches the table below.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from blocks.errors import UsageError

RELEASE_COMMIT = "798cba83f9151ca2a05817a485286131bf9dccca"
RELEASE_BASE_URL = (
    f"https://raw.githubusercontent.com/clic-lab/blocks/{RELEASE_COMMIT}/BlockWorldSimulator/Assets"
)

SPLIT_FILES = {"train": "trainset.json", "dev": "devset.json", "test": "testset.json"}

SHA256 = {
    "trainset.json": "ac46032db6b51fb7241af3087927a6570feff4909f69e57b2f916120b5f749ab",
    "devset.json": "3d0f74384ab2d1b05da003b7571154556ada97f4310776347ff5b6a27cb924da",
    "testset.json": "7427bc6a8c8118edcdb8ef171ad959901cdb4b3c4b09e8d23695cc5214796266",
    "textures/adidas.png": "c4c647b02f2c9b83f66a9e77fc2d2e47c3e2e30762e4d1ef760a8e7a7bbbdd32",
    "textures/bmw.png": "36b0a0d0bd112782941e17965c7ace27020ad11519dce507931fd3cec7f6d02c",
    "textures/burgerking.png": "bcfde597fd22caf362edfd5fdd7cdad1a1af0ff444ebb4fbf65854e08da542fe",
    "textures/cocacola.png": "12464a7950691c20133405fd7ced3c06c1303aa25241508a6cdd943ec2c16632",
    "textures/esso.png": "ef4dba127de43b39c322a19fa7ddf21f4e537f4a0e5b37012a31c684bfd3797c",
    "textures/heineken.png": "96870f3df073e5a496a651f89b51f44d576b50425e36d24772cb8574c000d825",
    "textures/hp.png": "81d68be29570bc217f0e76cb9f59d6f0cbe3b4da3989c7a2cbb55db0bdfe953b",
    "textures/mcdonalds.png": "3cf4019ccd2671afbfe69185ef1f726351e78d3923c281785461e152ae028696",
    "textures/mercedesbenz.png": "64a38cd2664a650e2b942a77e903c14454f00d4ee68e34e34c094057b20a7816",
    "textures/nvidia.png": "0c36b0c154f7aa8a1215824a79cca2ddede7332992bdfa9ed8554fef71835ea0",
    "textures/pepsi.png": "8f3bde4dd5966ce423876ed5335ada1dd6c3510e3e6384e6595b7567232cb3cf",
    "textures/shell.png": "9518c61a5bbdeb5090789026bc0b158ab1eb0cff57aabc57e5cb60663596cff4",
    "textures/sri.png": "9985a9d73c4da4414e2b0fb08a5a5406f2cb355339eb7cd33ab7797f364ae7ed",
    "textures/starbucks.png": "e9cd1423bb11f864ffe69218832cf0c48b6813a5ece5a2dec5f0f4d7b2491d86",
    "textures/stella.png": "674aad8dce2d2dedf8adb0fada8c07363ada851ca98a69b0ebb8418c3040c88a",
    "textures/target.png": "d3ebe8cfcc6df3dc730d06fc6d93985e5cb504dc63ada258b7d5173eaa095889",
    "textures/texaco.png": "6ae6b2049aa5224828101c0a0144686447fd8bc60f3753e0fd05cacce52f8966",
    "textures/toyota.png": "de43618752b82dfe275b44a64b32b89e6a0e5391fff23d4008d98224127cd40a",
    "textures/twitter.png": "e9b4e88775c367ec859abb0dd724fa05d14e5635bebb6f983df164d89f34722c",
    "textures/ups.png": "c3b385a0fe6912e6624539d179c983a1c21c039688fbeda8758feeb20a4be4c4",
}


class CorpusError(UsageError, RuntimeError):
    """The corpus is missing, corrupt or malformed; the message says which file and what to do."""


def default_data_root() -> Path:
    """``$BLOCKS_DATA`` if set, else a cache folder in the user's home."""
    env = os.environ.get("BLOCKS_DATA")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "blocks"


def release_url(name: str, base_url: str = RELEASE_BASE_URL) -> str:
    """Public address of a corpus file: split JSONs sit in Assets/, textures in Assets/Resources/."""
    if name.startswith("textures/"):
        return f"{base_url}/Resources/{name.removeprefix('textures/')}"
    return f"{base_url}/{name}"


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def download(url: str, destination: Path, expected_sha256: str, timeout: float = 60.0) -> Path:
    """Fetch ``url`` to ``destination`` with a progress bar; keep it only if the checksum matches. Folders made for
    it are removed again when it fails (a mistyped data root is not left behind)."""
    made = [folder for folder in destination.parents if not folder.exists()]  # innermost first
    try:
        destination.parent.mkdir(parents=True, exist_ok=True)
    except OSError as error:
        raise CorpusError(f"cannot make the corpus folder {destination.parent}: {error.strerror}") from None
    try:
        return _fetch(url, destination, expected_sha256, timeout)
    except BaseException:
        for folder in made:
            with contextlib.suppress(OSError):
                folder.rmdir()
        raise


def _fetch(url: str, destination: Path, expected_sha256: str, timeout: float) -> Path:
    with tempfile.NamedTemporaryFile(dir=destination.parent, delete=False, suffix=".part") as tmp:
        tmp_path = Path(tmp.name)
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=f"download {destination.name}") as bar:
                    for chunk in iter(lambda: response.read(1 << 16), b""):
                        tmp.write(chunk)
                        bar.update(len(chunk))
        except (urllib.error.URLError, OSError, TimeoutError) as error:
            tmp.close()
            tmp_path.unlink(missing_ok=True)
            raise CorpusError(
                f"could not download {destination.name} from {url} ({error}). Without network access, copy the "
                f"file into {destination.parent} by hand or point data.root / BLOCKS_DATA at a folder that has it."
            ) from error
    actual = sha256_of(tmp_path)
    if actual != expected_sha256:
        tmp_path.unlink(missing_ok=True)
        raise CorpusError(
            f"checksum mismatch for {destination.name} downloaded from {url}: expected {expected_sha256}, got "
            f"{actual}. The download is corrupt or the source changed; nothing was saved. Try again, or place a "
            "verified copy in the data root."
        )
    shutil.move(str(tmp_path), destination)
    return destination


def ensure_file(name: str, root: Path | str | None = None, base_url: str = RELEASE_BASE_URL) -> Path:
    """Path of corpus file ``name`` (e.g. ``devset.json``, ``textures/sri.png``), downloading it if missing.

    A file already on disk is trusted only after its checksum is verified once per process.
    """
    if name not in SHA256:
        raise CorpusError(f"unknown corpus file {name!r}; known files: {', '.join(sorted(SHA256))}")
    root = Path(root).expanduser() if root is not None else default_data_root()
    env = os.environ.get("BLOCKS_DATA")
    where = "BLOCKS_DATA" if env and Path(env).expanduser() == root else "data.root"
    if root.exists() and not root.is_dir():
        raise CorpusError(
            f"{where}={root}: a file, not a folder; point it at the folder that holds the corpus"
        )
    path = root / name
    if not path.exists():
        try:
            return download(release_url(name, base_url), path, SHA256[name])
        except CorpusError as error:
            if not root.exists():  # the download failed and left nothing: say the folder itself is missing
                raise CorpusError(f"{where}={root}: no such folder (mistyped?); {error}") from None
            raise
    if not path.is_file():
        raise CorpusError(f"{path}: not a file (a folder?) where the corpus file {name} should be; remove it")
    key = (str(path.resolve()), path.stat().st_mtime_ns)
    if key not in _verified:
        try:
            actual = sha256_of(path)
        except OSError as error:
            raise CorpusError(f"{path}: cannot be read ({error.strerror}); check its permissions") from None
        if actual != SHA256[name]:
            raise CorpusError(
                f"{path} is corrupt or not the released file (sha256 {actual}, expected {SHA256[name]}). "
                "Delete it to have it downloaded again, or replace it with a verified copy."
            )
        _verified.add(key)
    return path


_verified: set[tuple[str, int]] = set()


def ensure_corpus(
    root: Path | str | None = None, base_url: str = RELEASE_BASE_URL, include_test: bool = False
) -> Path:
    """Make sure every corpus file (the held-out test split only if asked) is present and verified."""
    names = [n for n in SHA256 if include_test or n != SPLIT_FILES["test"]]
    for name in names:
        ensure_file(name, root, base_url)
    return Path(root).expanduser() if root is not None else default_data_root()
