"""Engine choice for the exact matrix products by measurement (docs/repops/linalg.md, "Engines").

Every engine gives the same bits, so the choice is about speed alone. The first product of a
*shape class* (device, threads, batched or not, size and aspect buckets) times each candidate
engine on its own operands (one warm-up and two timed calls each, the minimum counts) and keeps
the fastest; the choice is stored in a JSON file under the user's cache folder
($REFEREED_CACHE_DIR, else $XDG_CACHE_HOME/refereed, else ~/.cache/refereed), one file per
machine and torch build (a hash of the CPU model and flags, the GPU name, the torch version and
build configuration, and the native library's version). Never inside the repository. A cache
that cannot be read or written is ignored (the choice then lives in memory only); a corrupt one
is replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

__all__ = ["Choice", "cache_dir", "cache_file", "choose", "clear_memory", "machine_key", "shape_class"]

CACHE_VERSION = 3  # 3: the int16 engine is a candidate (2: the int8 engine copies a transposed operand first)
_memory: dict[str, dict[str, str]] = {}  # cache file path -> {class: engine}
# linalg.default_engine's choices by every input they depend on (shapes, device, threads, variables, cache
# file); emptied whenever a table changes (calibrate, clear_memory), so they always agree with the tables
choices: dict[tuple[object, ...], str] = {}


@dataclass(frozen=True, slots=True)
class Choice:
    shape_class: str
    engine: str
    seconds: dict[str, float]


def cache_dir() -> Path:
    explicit = os.environ.get("REFEREED_CACHE_DIR", "").strip()
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(xdg) if xdg else Path.home() / ".cache") / "refereed"


def _cpu_identity() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return "unknown"
    model = flags = ""
    for line in text.splitlines():
        if line.startswith("model name") and not model:
            model = line.split(":", 1)[1].strip()
        if line.startswith("flags") and not flags:
            flags = " ".join(sorted(line.split(":", 1)[1].split()))
    return f"{model}|{flags}"


_keys: dict[str, str] = {}  # device -> machine key, computed once per process


def machine_key(device: torch.device) -> str:
    """A hash naming this machine and torch build (and the GPU for a CUDA device)."""
    if str(device) in _keys:
        return _keys[str(device)]
    from trainer.repops import _native

    parts = [
        f"v{CACHE_VERSION}",
        _cpu_identity(),
        torch.__version__,
        torch.__config__.show(),
        f"linalg{_native.LINALG_VERSION}",
        f"native={_native.linalg_library() is not None}",
    ]
    if device.type == "cuda":
        parts.append(torch.cuda.get_device_name(device))
    _keys[str(device)] = hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]
    return _keys[str(device)]


_files: dict[tuple[str, str, str, str], Path] = {}  # (env values cache_dir reads, device) -> cache file


def cache_file(device: torch.device) -> Path:
    """The cache file of this machine and device. Every product looks it up, so the Path is kept
    per value of the variables that cache_dir reads (still read on every call: a test that
    changes them gets its own file)."""
    from trainer.repops._native import env

    key = (env("REFEREED_CACHE_DIR"), env("XDG_CACHE_HOME"), env("HOME"), str(device))
    found = _files.get(key)
    if found is None:
        found = _files[key] = cache_dir() / f"repops-mm-engines-{machine_key(device)}.json"
    return found


def shape_class(a: torch.Tensor, b: torch.Tensor) -> str:
    """Products that time alike: same device, threads, batched or not, log2(M N K) bucket, and
    aspect (K long against M and N, e.g. a weight gradient; K short; or neither)."""
    m, k, n = a.shape[-2], a.shape[-1], b.shape[-1]
    nb = math.prod(a.shape[:-2])
    size = round(math.log2(max(1, nb * m * n * k)))
    aspect = "long-k" if k >= 8 * max(m, n) else "short-k" if 8 * k <= min(m, n) else "even"
    return f"{a.device.type}/t{torch.get_num_threads()}/{'bmm' if nb > 1 else 'mm'}/s{size}/{aspect}"


def _load(path: Path) -> dict[str, str]:
    if str(path) in _memory:
        return _memory[str(path)]
    table: dict[str, str] = {}
    try:
        data = json.loads(path.read_text())
        if data.get("version") == CACHE_VERSION:
            table = {str(k): str(v["engine"]) for k, v in data.get("classes", {}).items()}
    except (OSError, ValueError, AttributeError, KeyError, TypeError):
        table = {}
    _memory[str(path)] = table
    return table


def _store(path: Path, choice: Choice) -> None:
    """Merge one choice into the file (atomic replace); errors leave the memory copy only."""
    with contextlib.suppress(OSError, ValueError):
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            data = json.loads(path.read_text())
            if data.get("version") != CACHE_VERSION:
                raise ValueError
        except (OSError, ValueError, AttributeError):
            data = {"version": CACHE_VERSION, "classes": {}}
        data.setdefault("classes", {})[choice.shape_class] = {"engine": choice.engine, "seconds": choice.seconds}
        data["torch"] = torch.__version__
        fd, tmp = tempfile.mkstemp(prefix=".engines-", suffix=".json", dir=path.parent)
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1, sort_keys=True)
        os.replace(tmp, path)


def clear_memory() -> None:
    """Forget the in-memory copies (the next product reads the files again)."""
    _memory.clear()
    choices.clear()


ROUNDS = 5  # timed rounds per candidate, after one warm-up round


def _time_once(run: Callable[[], object], device: torch.device) -> float:
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    run()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return time.perf_counter() - start


def calibrate(a: torch.Tensor, b: torch.Tensor, candidates: Sequence[str], run: Callable[[str], object]) -> Choice:
    """Time each candidate on these operands and store the fastest for their shape class.

    The candidates alternate within each round (a burst of load then falls on all of them), and
    each keeps its best of ROUNDS rounds after a warm-up: one descheduled run (measured: 16 ms
    instead of 0.1 ms on a busy 2-core machine) then cannot decide the choice."""
    seconds = dict.fromkeys(candidates, math.inf)
    for r in range(ROUNDS + 1):
        for e in candidates:
            t = _time_once(lambda e=e: run(e), a.device)  # type: ignore[misc]
            if r:
                seconds[e] = min(seconds[e], t)
    choice = Choice(shape_class(a, b), min(candidates, key=lambda e: seconds[e]), seconds)
    path = cache_file(a.device)
    _load(path)[choice.shape_class] = choice.engine
    choices.clear()
    _store(path, choice)
    return choice


def choose(a: torch.Tensor, b: torch.Tensor, candidates: Sequence[str], run: Callable[[str], object]) -> str:
    """The cached engine of this shape class if it is one of `candidates`, else calibrate now."""
    known = _load(cache_file(a.device)).get(shape_class(a, b))
    if known is not None and known in candidates:
        return known
    return calibrate(a, b, candidates, run).engine
