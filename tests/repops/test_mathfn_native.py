"""The native loops of trainer/repops/native_src/mathfn.c against mathfn's torch-op path and
the scalar references: the same bits, always (random fp32 bit patterns with every exponent,
subnormals, +-0, +-inf, NaN payloads; sizes 0, 1, 7, 4097; strided inputs; 1 and 2 threads)."""

from __future__ import annotations

import ctypes
import subprocess
import sys
from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

from trainer.repops import _native
from trainer.repops import mathfn as M

Fn = Callable[[torch.Tensor], torch.Tensor]

# name -> (native kernel name, tensor function, scalar reference)
FUNCS: dict[str, tuple[str, Fn, Callable[[float], float]]] = {
    "exp": ("exp", M.exp, M.exp_ref),
    "log": ("log", M.log, M.log_ref),
    "log1p": ("log1p", M.log1p, M.log1p_ref),
    "sqrt": ("sqrt", M.sqrt, M.sqrt_ref),
    "rsqrt": ("rsqrt", M.rsqrt, M.rsqrt_ref),
    "tanh": ("tanh", M.tanh, M.tanh_ref),
    "sigmoid": ("sigmoid", M.sigmoid, M.sigmoid_ref),
    "erf": ("erf", M.erf, M.erf_ref),
    "gelu": ("gelu", M.gelu, M.gelu_ref),
    "gelu_tanh": ("gelu_tanh", lambda t: M.gelu(t, "tanh"), lambda v: M.gelu_ref(v, "tanh")),
}
SIZES = [0, 1, 7, 4097]

# fmt: off
SPECIAL_BITS = [
    0x00000000, 0x80000000,  # +-0
    0x7F800000, 0xFF800000,  # +-inf
    0x7FC00000, 0xFFC00000, 0x7FC00001, 0x7F800001, 0xFFFFFFFF, 0x7FBFFFFF,  # NaN payloads
    0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000,  # subnormals, min normal
    0x7F7FFFFF, 0xFF7FFFFF,  # +-max
    0x3F800000, 0xBF800000, 0x3F3504F3, 0x3F3504F4, 0x3FB504F3,  # +-1, around sqrt(1/2), sqrt(2)
    0x42B17217, 0x42B17218, 0xC2CE8ED0, 0xC2CFF1B5, 0xC2AEAC50,  # exp overflow / underflow edges
    0x3F400000, 0xBF400000, 0x3F3FFFFF, 0xBF3FFFFF,  # the erf split 0.75
    0x41280000, 0x4129FFFF, 0xC1280000,  # 10.5, ~10.625
    0x41200000, 0xC1200000, 0x41200001, 0xC1200001,  # tanh clamp +-10
    0x3F877A26, 0xBF877A26, 0x3F877A27,  # gelu's erf split 0.75*sqrt(2)
    0xC1700000, 0xC1700001, 0xC1780000,  # gelu clamp -15
    0x44300000, 0xC4300000, 0x442F0000,  # +-704 (past the exp64 clamp at 700)
    0x42DC0000, 0xC2DC0000,  # +-110
]
# fmt: on


@pytest.fixture(scope="module", autouse=True)
def _library() -> None:
    built = _native.build()
    if built is None:
        pytest.skip("no C compiler: the native math library cannot be built")
    if _native._load() is None:
        pytest.skip(f"the native math library at {built} does not load")


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("REFEREED_NATIVE", raising=False)
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _bits(t: torch.Tensor) -> np.ndarray:
    assert t.dtype == torch.float32
    return t.detach().contiguous().numpy().view(np.uint32).reshape(-1).copy()


def _inputs(n: int, seed: int) -> torch.Tensor:
    """n fp32 values: every special pattern first, then uniformly random bit patterns (every
    exponent, subnormals, NaN payloads) mixed with values of moderate size."""
    rng = np.random.default_rng(seed)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    middle = rng.uniform(-20.0, 20.0, size=n).astype(np.float32).view(np.uint32)
    bits = np.where(rng.random(n) < 0.5, bits, middle)
    k = min(n, len(SPECIAL_BITS))
    bits[:k] = np.array(SPECIAL_BITS[:k], dtype=np.uint32)
    return torch.from_numpy(bits.view(np.float32))


def _native_out(kernel: str, x: torch.Tensor) -> torch.Tensor:
    fn = _native.kernel(kernel)
    assert fn is not None
    out = torch.empty_like(x)
    if x.numel():
        fn(x.data_ptr(), out.data_ptr(), x.numel())
    return out


def _torch_path(fn: Fn, x: torch.Tensor, monkeypatch: pytest.MonkeyPatch) -> torch.Tensor:
    with monkeypatch.context() as m:
        m.setenv("REFEREED_NATIVE", "0")
        return fn(x)


@pytest.mark.parametrize("n", SIZES)
@pytest.mark.parametrize("name", list(FUNCS))
def test_native_equals_torch_path_and_reference(name: str, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, fn, ref = FUNCS[name]
    x = _inputs(n, seed=n)
    native = _bits(_native_out(kernel, x))
    dispatched = _bits(fn(x))  # contiguous fp32 on the CPU: mathfn takes the native loop
    torch_ops = _bits(_torch_path(fn, x, monkeypatch))
    np.testing.assert_array_equal(native, torch_ops)
    np.testing.assert_array_equal(dispatched, native)
    expected = np.array([M.f32_bits(ref(v)) for v in x.tolist()], dtype=np.uint32)
    np.testing.assert_array_equal(native, expected)
    nan_in = np.isnan(x.numpy())
    assert (native[nan_in] == M.CANONICAL_NAN_BITS).all()


@pytest.mark.parametrize("name", list(FUNCS))
def test_large_random_against_torch_path(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Many more random bit patterns against the torch-op path (the scalar reference is too
    slow for this many; it equals the torch-op path by tests/repops/test_mathfn.py)."""
    kernel, fn, _ = FUNCS[name]
    x = _inputs(1 << 18, seed=12345)
    np.testing.assert_array_equal(_bits(_native_out(kernel, x)), _bits(_torch_path(fn, x, monkeypatch)))


def test_every_kernel_is_used(monkeypatch: pytest.MonkeyPatch) -> None:
    """mathfn dispatches each function to its own loop (a wrong name would still pass the bit
    tests above only if two functions agreed, which they do not)."""
    calls: list[str] = []
    lib = _native._load()
    assert lib is not None
    table = lib.loops
    for kernel in _native.KERNELS:

        def spy(xp: int, op: int, n: int, _k: str = kernel, _real: _native.Kernel = table[kernel]) -> None:
            calls.append(_k)
            _real(xp, op, n)

        monkeypatch.setitem(table, kernel, spy)
    x = _inputs(16, seed=3)
    for kernel, fn, _ in FUNCS.values():
        calls.clear()
        fn(x)
        assert calls == [kernel]


@pytest.mark.parametrize("name", list(FUNCS))
def test_strided_and_other_layouts_fall_back_with_the_same_bits(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    kernel, fn, _ = FUNCS[name]
    base = _inputs(64 * 33, seed=7).reshape(64, 33)
    calls: list[int] = []
    lib = _native._load()
    assert lib is not None
    table = lib.loops
    real = table[kernel]

    def spy(xp: int, op: int, n: int) -> None:
        calls.append(n)
        real(xp, op, n)

    monkeypatch.setitem(table, kernel, spy)
    for view in (base.t(), base[:, ::2], base[::3], base[5:9, 1:30], base[:, :1].expand(64, 8)):
        expected = _bits(_native_out(kernel, view.contiguous()))
        got = fn(view)
        assert got.shape == view.shape
        np.testing.assert_array_equal(_bits(got), expected)
    sliced = base[3:]  # contiguous with a storage offset: native, reading from the offset
    expected = _bits(_native_out(kernel, sliced.clone()))
    calls.clear()
    np.testing.assert_array_equal(_bits(fn(sliced)), expected)
    assert calls == [sliced.numel()]
    calls.clear()
    fn(base.t())  # not contiguous: torch operations
    assert calls == []


def test_switched_off_and_other_devices_take_the_torch_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert _native.kernel("exp") is None and not _native.available()
    assert _native.library() is None
    monkeypatch.delenv("REFEREED_NATIVE")
    assert _native.available()
    x = torch.ones(3, dtype=torch.float64)
    assert M._native_loop("exp", x) is None  # not fp32
    assert M._native_loop("exp", torch.ones(4, 2).t()) is None  # not contiguous


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("name", list(FUNCS))
def test_thread_count_does_not_change_bits(name: str, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """1 and 2 torch threads, below and above the size where the native loop is split."""
    kernel, fn, _ = FUNCS[name]
    torch.set_num_threads(threads)
    for n in (4097, _native.PARALLEL_MIN + 4097):
        x = _inputs(n, seed=99)
        np.testing.assert_array_equal(_bits(fn(x)), _bits(_torch_path(fn, x, monkeypatch)))
        np.testing.assert_array_equal(_bits(fn(x)), _bits(_native_out(kernel, x)))


@pytest.mark.parametrize("threads", [2, 3, 7, 64, 1000])
def test_split_over_threads_is_the_single_loop(threads: int) -> None:
    """rt_parallel_f32 (parts of whole 64-byte lines, the last one short) == one loop."""
    lib = _native.library()
    assert lib is not None
    for n in (_native.PARALLEL_MIN, _native.PARALLEL_MIN + 1, 3 * _native.PARALLEL_MIN + 17):
        x = _inputs(n, seed=n)
        for kernel in _native.KERNELS:
            out = torch.full_like(x, 12345.0)
            lib.run(kernel, x.data_ptr(), out.data_ptr(), n, threads)
            np.testing.assert_array_equal(_bits(out), _bits(_native_out(kernel, x)))


def test_same_bits_in_a_fresh_process_with_one_thread() -> None:
    """A separate process with one torch thread computes the same bits through the library."""
    x = _inputs(4097, seed=5)
    here = {name: _bits(fn(x)).tobytes().hex() for name, (_, fn, _r) in FUNCS.items() if name in ("exp", "gelu")}
    code = (
        "import sys, numpy as np, torch\n"
        "torch.set_num_threads(1)\n"
        "from trainer.repops import mathfn as M, _native\n"
        "assert _native.available()\n"
        "x = torch.from_numpy(np.frombuffer(bytes.fromhex(sys.stdin.read()), dtype=np.float32).copy())\n"
        "for f in (M.exp, M.gelu):\n"
        "    print(f(x).numpy().view(np.uint32).tobytes().hex())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        input=x.numpy().tobytes().hex(),
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.split() == [here["exp"], here["gelu"]]


def test_built_without_fma_contraction() -> None:
    """The binary64 exp64 core equals mathfn's torch-op core bit for bit. A build that fuses
    a*b+c into FMA (missing -ffp-contract=off) differs here in most elements, whereas its fp32
    results matched on 2 million random inputs."""
    lib = ctypes.CDLL(str(_native.LIBRARY))
    fn = lib.rt_exp64_f64
    fn.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t]
    fn.restype = None
    v = np.random.default_rng(0).uniform(-750.0, 750.0, size=4096)
    out = np.empty_like(v)
    fn(v.ctypes.data, out.ctypes.data, v.size)
    want = M._exp64_t(torch.from_numpy(v.copy())).numpy()
    np.testing.assert_array_equal(out.view(np.uint64), want.view(np.uint64))


def test_build_is_idempotent_and_kernels_are_exported() -> None:
    assert _native.build() == _native.LIBRARY
    lib = ctypes.CDLL(str(_native.LIBRARY))
    for kernel in _native.KERNELS:
        assert hasattr(lib, f"rt_{kernel}_f32")
