"""Optional native fast paths: the transcendental functions of trainer.repops.mathfn, and the
quantizer and combine passes of the exact matrix products (trainer.repops.linalg).

The C source is `native_src/mathfn.c`: one loop per function, running the same binary64
operation sequence as mathfn.py's torch-op path (so the same bits), compiled without FMA
contraction (`-ffp-contract=off`) and without fast-math. `python trainer/repops/_native.py`
builds it into `native_src/libmathfn.so`; it runs as a plain file with the standard library
only (no torch), so scripts/setup can call it quickly. Nothing happens at import; the
library is loaded lazily on first use, through ctypes.

`library()` returns None when the library is not built or is switched off
(`REFEREED_NATIVE=0`, read on every call); mathfn then runs its torch-op path, which gives
the same bits (tests/repops/test_mathfn_native.py compares them). Its `run(name, ...)`
applies one function's loop to a buffer, split over threads when it is large (each element
depends on its input alone, so the split changes no bit).

`linalg_library()` loads `native_src/liblinalg.so` (built by the same `build()`, for the
baseline instruction set, with AVX2 and AVX-512 loops chosen at run time); None when it is not
built or REFEREED_NATIVE=0. linalg.py then runs its torch-op path, which gives the same bits
(tests/repops/test_linalg_native.py compares every instruction path with it and with the
scalar definition).
"""

from __future__ import annotations

import ctypes
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from trainer import _cbuild

__all__ = [
    "FLAGS",
    "ISAS",
    "KERNELS",
    "LIBRARY",
    "LINALG_FLAGS",
    "LINALG_LIBRARY",
    "LINALG_SOURCE",
    "PARALLEL_MIN",
    "SOURCE",
    "Kernel",
    "Linalg",
    "available",
    "build",
    "kernel",
    "library",
    "linalg_library",
]

SOURCE = Path(__file__).with_name("native_src") / "mathfn.c"
LIBRARY = SOURCE.with_name("libmathfn.so")

# mathfn name -> exported C loop `void rt_<name>_f32(const float *x, float *out, size_t n)`.
KERNELS = ("exp", "log", "log1p", "sqrt", "rsqrt", "tanh", "sigmoid", "erf", "gelu", "gelu_tanh")

# -ffp-contract=off is required for the bits (no FMA), and -ffast-math must never be added:
# see the header of mathfn.c. -fno-math-errno only lets sqrt be a single instruction.
FLAGS = ("-O3", "-fPIC", "-shared", "-pthread", "-ffp-contract=off", "-fno-trapping-math", "-fno-math-errno")
NATIVE_ARCH = "-march=native"

Kernel = Callable[[int, int, int], None]  # (x pointer, out pointer, element count)

# The exact matrix products' quantizer and combine (native_src/linalg.c). Built for the baseline
# instruction set: its AVX2 and AVX-512 loops carry their own target attributes and are chosen
# at run time (cpuid), so one build runs on every x86-64 machine and each path can be forced.
LINALG_SOURCE = SOURCE.with_name("linalg.c")
LINALG_LIBRARY = SOURCE.with_name("liblinalg.so")
LINALG_FLAGS = FLAGS
LINALG_VERSION = 3  # must equal RT_VERSION in linalg.c (an older build is not loaded)
ISAS = ("portable", "avx2", "avx512")  # the instruction paths of linalg.c, by their C index

# A call with fewer elements runs on the calling thread alone (the threshold was measured when a
# part started a pthread, about as costly as 20-40k elements of exp; the parts now run on torch's
# OpenMP pool); a larger one is split over `threads` threads in C.
PARALLEL_MIN = 1 << 15


class _Library:
    def __init__(self, lib: ctypes.CDLL) -> None:
        self.loops: dict[str, Kernel] = {}
        self.addresses: dict[str, int | None] = {}  # for rt_parallel_f32
        for name in KERNELS:
            fn = getattr(lib, f"rt_{name}_f32")
            fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
            fn.restype = None
            self.loops[name] = fn
            self.addresses[name] = ctypes.cast(fn, ctypes.c_void_p).value
        self.parallel = lib.rt_parallel_f32
        self.parallel.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        self.parallel.restype = None

    def run(self, name: str, x_ptr: int, out_ptr: int, n: int, threads: int = 1) -> None:
        """out[i] = name(x[i]) for the n fp32 values at the two addresses, on up to `threads`
        threads (one below PARALLEL_MIN elements)."""
        if n <= 0:
            return
        if threads <= 1 or n < PARALLEL_MIN:
            self.loops[name](x_ptr, out_ptr, n)
        else:
            self.parallel(self.addresses[name], x_ptr, out_ptr, n, threads)


def _torch_first() -> None:
    """Load torch (and so its libgomp.so.1) before a library built with OpenMP: the library's
    libgomp.so.1 then resolves to torch's, and one thread pool runs both. Their loops run on
    torch's threads, which spin between its ops: threads of their own would wait for a core
    (measured: a 131k-element exp took 1.6 ms inside a training step, 0.13 ms alone)."""
    import torch  # noqa: F401


# The loaded library, filled on first use: [] not tried yet, [None] not available.
_holder: list[_Library | None] = []


def _load() -> _Library | None:
    if not _holder:
        found: _Library | None = None
        if LIBRARY.exists():
            _torch_first()
            try:
                found = _Library(ctypes.CDLL(str(LIBRARY)))
            except (OSError, AttributeError):  # not loadable, or built from an older source
                found = None
        _holder.append(found)
    return _holder[0]


class Linalg:
    """The loaded linalg.c: `quant_f64`, `quant_int8x2`, `gridsum_f64`, `combine_f64`,
    `combine_int8x2`, the int16 engine `mm_i16` (its two stages `i16_quantize`, `i16_products`)
    and its K limit `i16_max_k` (see the C file for the arguments) and `supported(isa)`."""

    def __init__(self, lib: ctypes.CDLL) -> None:
        i64, ptr, cint = ctypes.c_int64, ctypes.c_void_p, ctypes.c_int
        if lib.rt_linalg_version() != LINALG_VERSION:
            raise AttributeError("liblinalg.so was built from another version of linalg.c")
        self.quant_f64 = lib.rt_quant_f64
        self.quant_f64.argtypes = [ptr, i64, i64, i64, i64, i64, i64, cint, ptr, i64, i64, i64, ptr, cint, cint]
        self.quant_f64.restype = i64
        self.quant_int8x2 = lib.rt_quant_int8x2
        self.quant_int8x2.argtypes = [
            *(ptr, i64, i64, i64, i64, i64, i64, cint, ptr, ptr, ptr, ptr, i64, i64, i64, ptr, ptr, cint, cint)
        ]
        self.quant_int8x2.restype = i64
        self.gridsum_f64 = lib.rt_gridsum_f64
        self.gridsum_f64.argtypes = [ptr, i64, i64, i64, i64, i64, i64, cint, ptr, ptr, cint, cint]
        self.gridsum_f64.restype = i64
        self.combine_f64 = lib.rt_combine_f64
        self.combine_f64.argtypes = [ptr, i64, i64, i64, i64, i64, ptr, ptr, cint, ptr, cint, cint]
        self.combine_f64.restype = cint
        self.combine_int8x2 = lib.rt_combine_int8x2
        self.combine_int8x2.argtypes = [
            *(ptr, ptr, ptr, i64, i64, i64, i64, i64, ptr, ptr, ptr, ptr, cint, ptr, cint, cint)
        ]
        self.combine_int8x2.restype = cint
        self.mm_i16 = lib.rt_mm_i16
        self.mm_i16.argtypes = [
            *(ptr, i64, i64, i64, i64, i64, i64, ptr, i64, i64, i64, i64, cint),
            *(ptr, ptr, ptr, ptr, ptr, ptr, ptr, cint, cint),
        ]
        self.mm_i16.restype = i64
        self.i16_quantize = lib.rt_i16_quantize
        self.i16_quantize.argtypes = [
            *(ptr, i64, i64, i64, i64, i64, i64, ptr, i64, i64, i64, i64, cint),
            *(ptr, ptr, ptr, ptr, ptr, ptr, cint, cint),
        ]
        self.i16_quantize.restype = i64
        self.i16_products = lib.rt_i16_products
        self.i16_products.argtypes = [ptr, ptr, i64, i64, i64, i64, ptr, ptr, ptr, ptr, cint, ptr, cint, cint, cint]
        self.i16_products.restype = cint
        lib.rt_i16_max_k.restype = i64
        self.i16_max_k = int(lib.rt_i16_max_k())
        probe = lib.rt_linalg_isa_supported
        probe.argtypes = [cint]
        probe.restype = cint
        self._supported = {isa: bool(probe(i)) for i, isa in enumerate(ISAS)}  # cpuid, once
        self._best = next(isa for isa in reversed(ISAS) if self._supported[isa])

    def supported(self, isa: str) -> bool:
        """Whether this CPU runs instruction path `isa` (one of ISAS)."""
        return self._supported[isa]

    def best_isa(self) -> str:
        return self._best


_linalg_holder: list[Linalg | None] = []


# os.environ's own dict (bytes keys on POSIX), read directly: `os.environ.get` encodes the key and
# decodes the value through Python-level methods on every call (about 2 us; the kernels of one
# transformer step read variables several hundred times). The dict is what os.environ's reads and
# writes (monkeypatch.setenv, putenv) go through, so every call still sees the current value.
_ENV_DATA: dict[bytes, bytes] | None = getattr(os.environ, "_data", None)
if not isinstance(_ENV_DATA, dict) or os.name != "posix":
    _ENV_DATA = None


def env(key: str) -> str:
    """os.environ.get(key, "").strip() for an ASCII key, without os.environ's per-call encoding."""
    if _ENV_DATA is None:
        return os.environ.get(key, "").strip()
    raw = _ENV_DATA.get(key.encode())
    return "" if raw is None else os.fsdecode(raw).strip()


def _switched_off() -> bool:
    """REFEREED_NATIVE=0 (read on every call; one dict lookup when the variable is unset)."""
    if _ENV_DATA is not None and b"REFEREED_NATIVE" not in _ENV_DATA:
        return False
    return env("REFEREED_NATIVE") == "0"


def linalg_library() -> Linalg | None:
    """linalg.c loaded, or None when it is not built or REFEREED_NATIVE=0 (read on every call)."""
    if _switched_off():
        return None
    if not _linalg_holder:
        found: Linalg | None = None
        if LINALG_LIBRARY.exists():
            _torch_first()
            try:
                found = Linalg(ctypes.CDLL(str(LINALG_LIBRARY)))
            except (OSError, AttributeError):
                found = None
        _linalg_holder.append(found)
    return _linalg_holder[0]


def library() -> _Library | None:
    """The library, or None when it is unavailable or switched off by REFEREED_NATIVE=0."""
    if _switched_off():
        return None
    return _holder[0] if _holder else _load()


def available() -> bool:
    return library() is not None


def kernel(name: str) -> Kernel | None:
    """The single-threaded loop for mathfn function `name` (one of KERNELS), or None when the
    library is unavailable or switched off by REFEREED_NATIVE=0."""
    lib = library()
    return None if lib is None else lib.loops[name]


def _native_arch_works(cc: list[str]) -> bool:
    """Whether a tiny program built with -march=native compiles and runs on this machine
    (some compiler/CPU pairs pick instructions the CPU lacks: then the build goes without)."""
    probe = "int main(void) { volatile double a = 1.5, b = 2.5; return (int)(a * b) == 3 ? 0 : 1; }\n"
    with tempfile.TemporaryDirectory(prefix="rt-march-") as tmp:
        src, exe = Path(tmp) / "probe.c", Path(tmp) / "probe"
        src.write_text(probe)
        try:
            built = subprocess.run([*cc, "-O2", NATIVE_ARCH, "-o", str(exe), str(src)], capture_output=True)
            return built.returncode == 0 and subprocess.run([str(exe)], capture_output=True).returncode == 0
        except OSError:
            return False


def build(force: bool = False) -> Path | None:
    """Compile the library unless it is newer than its source; None when no compiler exists.

    Raises subprocess.CalledProcessError when the compiler fails.
    """
    cc = _cbuild.compiler()
    if cc is None:
        return None
    if force or not _cbuild.is_fresh(LINALG_LIBRARY, LINALG_SOURCE):
        _cbuild.compile_shared(cc, [*LINALG_FLAGS, *_cbuild.openmp_flags(cc)], LINALG_SOURCE, LINALG_LIBRARY)
        if _linalg_holder and _linalg_holder[0] is None:
            _linalg_holder.clear()
    if not force and _cbuild.is_fresh(LIBRARY, SOURCE):
        return LIBRARY
    flags = [*FLAGS, *_cbuild.openmp_flags(cc)] + ([NATIVE_ARCH] if _native_arch_works(cc) else [])
    _cbuild.compile_shared(cc, flags, SOURCE, LIBRARY)
    if _holder and _holder[0] is None:
        _holder.clear()  # an earlier failed load is forgotten: the next use loads the new library
    return LIBRARY


if __name__ == "__main__":
    built = build()
    if built is None:
        print(
            "trainer.repops: no C compiler (cc, gcc or $CC) found; "
            "the transcendental functions use their torch-op path (same bits, several times slower)"
        )
    else:
        print(f"trainer.repops: native math library at {built}, matrix-product passes at {LINALG_LIBRARY}")
    sys.exit(0)
