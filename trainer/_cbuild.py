"""Building the small C libraries behind the native fast paths (trainer/commit, trainer/repops).

Stdlib only, so `python trainer/<pkg>/_native.py` can build without importing torch.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path


def compiler() -> list[str] | None:
    """`$CC` (split like a shell would), else `cc` or `gcc` from PATH; None when there is none."""
    if os.environ.get("CC", "").strip():
        cmd = shlex.split(os.environ["CC"])
        return cmd if shutil.which(cmd[0]) else None
    for name in ("cc", "gcc"):
        found = shutil.which(name)
        if found:
            return [found]
    return None


def is_fresh(library: Path, source: Path) -> bool:
    """Whether `library` exists and is at least as new as `source`."""
    return library.exists() and library.stat().st_mtime_ns >= source.stat().st_mtime_ns


def compile_shared(cc: Sequence[str], flags: Sequence[str], source: Path, library: Path) -> None:
    """Compile `source` into `library` through a temporary file in the same folder and a rename,
    so a reader never loads half a library. Raises subprocess.CalledProcessError on failure."""
    fd, tmp = tempfile.mkstemp(prefix=f".{library.stem}-", suffix=library.suffix, dir=library.parent)
    os.close(fd)
    try:
        subprocess.run([*cc, *flags, "-o", tmp, str(source)], check=True)
        os.chmod(tmp, 0o755)
        os.replace(tmp, library)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


_openmp: dict[tuple[str, ...], bool] = {}


def openmp_flags(cc: Sequence[str]) -> list[str]:
    """["-fopenmp"] when `cc` builds and runs an OpenMP program, else [] (the pragmas are then
    ignored and the loops run on the calling thread: same results, one core)."""
    key = tuple(cc)
    if key not in _openmp:
        probe = "#include <omp.h>\nint main(void) { return omp_get_max_threads() > 0 ? 0 : 1; }\n"
        with tempfile.TemporaryDirectory(prefix="rt-omp-") as tmp:
            src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
            src.write_text(probe)
            try:
                built = subprocess.run([*cc, "-fopenmp", "-o", str(exe), str(src)], capture_output=True)
                ok = built.returncode == 0 and subprocess.run([str(exe)], capture_output=True).returncode == 0
            except OSError:
                ok = False
        _openmp[key] = ok
    return ["-fopenmp"] if _openmp[key] else []
