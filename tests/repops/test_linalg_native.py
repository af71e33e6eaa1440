"""The native passes of the exact matrix products (trainer/repops/native_src/linalg.c) against
the scalar definition of docs/repops/linalg.md and against the torch-op path (the one CUDA
runs): every instruction path this CPU runs (portable C, AVX2, AVX-512), both engines, both
memory orders of the quantizer, strides, batches, 1 and 2 threads, edge values (+-0,
subnormals, +-inf, NaN payloads, huge and tiny exponent spreads), arbitrary fp32 bit patterns.
An instruction path the CPU lacks is skipped with the reason. Also: the engine calibration
(cache, forcing, bit equality of forced and calibrated engines) and bmm as one batched GEMM."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from trainer.repops import _calib, _native
from trainer.repops import linalg as L
from trainer.repops._fixed import CANONICAL_NAN_BITS, exponent_ref, quantize_ref
from trainer.repops._spec import RepOpsError

ISAS = _native.ISAS


@pytest.fixture(scope="module", autouse=True)
def _library() -> None:
    if _native.build() is None:
        pytest.skip("no C compiler: the native linalg library cannot be built")
    if _native.linalg_library() is None:
        pytest.fail("liblinalg.so was built but does not load")


def _isa_params() -> list[object]:
    return [pytest.param(isa, id=isa) for isa in ISAS]


@pytest.fixture(params=_isa_params())
def isa(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    name = str(request.param)
    lib = _native.linalg_library()
    assert lib is not None
    if not lib.supported(name):
        pytest.skip(f"this CPU does not run the {name} instruction path (cpuid); it is tested where it does")
    monkeypatch.setenv(L.ISA_ENV, name)
    yield name


def bits(t: torch.Tensor) -> torch.Tensor:
    return t.contiguous().view(torch.int32)


def assert_same_bits(a: torch.Tensor, b: torch.Tensor) -> None:
    assert a.shape == b.shape, (a.shape, b.shape)
    diff = bits(a) != bits(b)
    if bool(diff.any()):
        i = tuple(int(v) for v in diff.nonzero()[0])
        raise AssertionError(f"{int(diff.sum())} elements differ, first at {i}: {a[i].item()!r} vs {b[i].item()!r}")


# fmt: off
EDGE_BITS = [
    0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0xFFC00000, 0x7F800001, 0xFFFFFFFF,
    0x00000001, 0x80000001, 0x007FFFFF, 0x807FFFFF, 0x00800000, 0x80800000, 0x7F7FFFFF, 0xFF7FFFFF,
    0x3F800000, 0xBF800000, 0x3FC00000, 0x3F000000, 0x46000000, 0x45FFFFFF,
]
# fmt: on


def from_bits(values: list[int], shape: tuple[int, ...]) -> torch.Tensor:
    return (
        torch.tensor([v - (1 << 32) if v >= 1 << 31 else v for v in values], dtype=torch.int32)
        .view(torch.float32)
        .reshape(shape)
    )


def sample(shape: tuple[int, ...], kind: str, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(shape, generator=g)
    if kind == "spread":
        x = x * torch.exp2(torch.randint(-120, 120, shape, generator=g).float())
    elif kind == "ties":
        x = torch.randint(-(1 << 17), 1 << 17, shape, generator=g).float() * 2.0**-9
    elif kind == "subnormal":
        x = x * 2.0**-140
    elif kind == "huge":
        x = x * 2.0**100
    elif kind == "edge":
        pick = torch.randint(0, len(EDGE_BITS), shape, generator=g)
        edge = from_bits(EDGE_BITS, (len(EDGE_BITS),))[pick]
        x = torch.where(torch.rand(shape, generator=g) < 0.15, edge, x)
    elif kind == "zeros":
        x = torch.where(torch.rand(shape, generator=g) < 0.8, torch.zeros(()), x)
        x = torch.where(torch.rand(shape, generator=g) < 0.5, -x, x)
    return x.contiguous()


KINDS = ("normal", "spread", "ties", "subnormal", "huge", "edge", "zeros")


# --- the quantizer against the scalar definition ----------------------------------------------


def _lines_ref(x: torch.Tensor, p: int) -> tuple[list[list[float]], list[bool], list[list[int]], list[float]]:
    """Per line (row of the 2-D x): grid values q * 2^(e - p), flag, q, 2^(e - p) (scalar)."""
    vals, bad, qs, ulps = [], [], [], []
    for line in x.tolist():
        if any(math.isnan(v) or math.isinf(v) for v in line):
            vals.append([0.0] * len(line))
            qs.append([0] * len(line))
            bad.append(True)
            ulps.append(math.ldexp(1.0, 1 - p))  # the grid of m = 1.0
            continue
        e = exponent_ref(max(abs(v) for v in line))
        q = [quantize_ref(v, e, p) for v in line]
        qs.append(q)
        vals.append([math.ldexp(v, e - p) for v in q])
        bad.append(False)
        m = max(abs(v) for v in line)
        ulps.append(math.ldexp(1.0, (e if m > 0 else 1) - p))
    return vals, bad, qs, ulps


def _quant_f64(x3: torch.Tensor, p: int, isa: str) -> tuple[torch.Tensor, torch.Tensor, int]:
    lib = _native.linalg_library()
    assert lib is not None
    return L._quant_f64_native(lib, x3, p, "test", ISAS.index(isa))


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("order", ["rows", "cols"])
@pytest.mark.parametrize("shape", [(3, 5), (17, 33), (40, 9), (1, 70)])
def test_f64_quantizer_equals_the_scalar_definition(isa: str, kind: str, order: str, shape: tuple[int, int]) -> None:
    x = sample(shape, kind, seed=hash((kind, shape)) % 1000)
    p = 14
    # "cols": the same lines stored side by side (a (L, R) tensor seen transposed)
    x3 = x.unsqueeze(0) if order == "rows" else x.t().contiguous().t().unsqueeze(0)
    q, bad, nbad = _quant_f64(x3, p, isa)
    vals, want_bad, _, _ = _lines_ref(x, p)
    got = q[0].tolist()
    assert [bool(v) for v in bad[0].tolist()] == want_bad
    assert nbad == sum(want_bad)
    for r, (gl, wl) in enumerate(zip(got, vals, strict=True)):
        if want_bad[r]:
            continue
        for g, w in zip(gl, wl, strict=True):
            assert g == w, (r, g, w)
            assert g != 0.0 or math.copysign(1.0, g) == 1.0, (r, "a zero on the grid is +0")


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("order", ["rows", "cols"])
@pytest.mark.parametrize("p", [7, 10, 14])
@pytest.mark.parametrize("copies", [1, 2])
def test_int8_quantizer_equals_the_scalar_definition(isa: str, kind: str, order: str, p: int, copies: int) -> None:
    """copies = 2: the slices also written a second time (the wide layout of the batched product)."""
    lib = _native.linalg_library()
    assert lib is not None
    x = sample((19, 37), kind, seed=p)
    nr, nl = x.shape
    xs = x if order == "rows" else x.t().contiguous().t()
    xv, nb, _, _, sb, sr, sl = L._lines(xs.unsqueeze(0))
    lo, hi, lo2, hi2 = (torch.full((nr, nl), 99, dtype=torch.int8) for _ in range(4))
    bad = torch.empty(nr, dtype=torch.uint8)
    ulp = torch.empty(nr, dtype=torch.float64)
    second = (lo2.data_ptr(), hi2.data_ptr()) if copies == 2 else (None, None)
    n = lib.quant_int8x2(
        xv.data_ptr(), nb, nr, nl, sb, sr, sl, p, lo.data_ptr(), hi.data_ptr(), *second,
        0, nl, 1, bad.data_ptr(), ulp.data_ptr(), ISAS.index(isa), 2,
    )  # fmt: skip
    if copies == 2:
        assert torch.equal(lo2, lo) and torch.equal(hi2, hi)
    else:
        assert bool((lo2 == 99).all()) and bool((hi2 == 99).all())
    _, want_bad, qs, ulps = _lines_ref(x, p)
    assert n == sum(want_bad)
    assert [bool(v) for v in bad.tolist()] == want_bad
    assert ulp.tolist() == ulps
    top = 1 << max(0, p - 8)
    for r in range(nr):
        los, his = lo[r].tolist(), hi[r].tolist()
        assert all(-128 <= v <= 127 for v in los) and all(-top <= v <= top for v in his)
        assert [h * 256 + lw for h, lw in zip(his, los, strict=True)] == qs[r]


def test_int8_quantizer_refuses_grids_it_cannot_split() -> None:
    lib = _native.linalg_library()
    assert lib is not None
    x = torch.ones(4, 4)
    buf = torch.empty(64, dtype=torch.int8)
    aux = torch.empty(8, dtype=torch.float64)
    for p in (6, 15):
        n = lib.quant_int8x2(x.data_ptr(), 1, 4, 4, 0, 4, 1, p, buf.data_ptr(), buf.data_ptr() + 16, None, None,
                             0, 4, 1, aux.data_ptr(), aux.data_ptr(), 0, 1)  # fmt: skip
        assert n == -1


# --- whole products: native == torch-op path == scalar reference --------------------------------


@pytest.mark.parametrize("engine", L.ENGINES)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(("m", "k", "n"), [(1, 1, 1), (3, 8, 5), (9, 33, 17), (20, 7, 40)])
def test_native_equals_reference_and_torch_path(isa: str, engine: str, kind: str, m: int, k: int, n: int) -> None:
    a = sample((m, k), kind, seed=m * 7 + k)
    b = sample((k, n), kind, seed=n * 11 + k)
    want = L.mm_reference(a, b)
    assert_same_bits(L.matmul_exact(a, b, engine, "torch"), want)
    assert_same_bits(L.matmul_exact(a, b, engine, "native"), want)


@settings(max_examples=40, deadline=None)
@given(
    m=st.integers(1, 12),
    k=st.integers(1, 40),
    n=st.integers(1, 12),
    data=st.data(),
)
def test_arbitrary_bit_patterns(m: int, k: int, n: int, data: st.DataObject) -> None:
    lib = _native.linalg_library()
    assert lib is not None
    words = st.one_of(st.integers(0, (1 << 32) - 1), st.sampled_from(EDGE_BITS))
    a = from_bits(data.draw(st.lists(words, min_size=m * k, max_size=m * k)), (m, k))
    b = from_bits(data.draw(st.lists(words, min_size=k * n, max_size=k * n)), (k, n))
    if data.draw(st.booleans()):  # keep most lines finite so the integer sums matter
        a = torch.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0)
        b = torch.nan_to_num(b, nan=1.0, posinf=2.0, neginf=-2.0)
    want = L.mm_reference(a, b)
    for name in ISAS:
        if not lib.supported(name):
            continue
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(L.ISA_ENV, name)
            for engine in L.ENGINES:
                assert_same_bits(L.matmul_exact(a, b, engine, "native"), want)


@pytest.mark.parametrize("engine", L.ENGINES)
def test_strides_and_layouts(isa: str, engine: str) -> None:
    """Transposed A (the weight gradient's x^T), transposed B, sliced (both strides non-unit:
    copied first), storage offsets: the same bits as contiguous operands."""
    a = sample((24, 70), "spread", 1)
    b = sample((70, 18), "edge", 2)
    want = L.mm_reference(a, b)
    big_a = torch.zeros(48, 141)
    big_a[::2, 1::2] = a
    big_b = torch.zeros(3, 70, 40)
    big_b[1, :, 3:21] = b
    for aa in (a, a.t().contiguous().t(), big_a[::2, 1::2]):
        for bb in (b, b.t().contiguous().t(), big_b[1, :, 3:21]):
            assert_same_bits(L.matmul_exact(aa, bb, engine, "native"), want)


@pytest.mark.parametrize("engine", L.ENGINES)
def test_bmm_and_batched_matmul(isa: str, engine: str) -> None:
    a = sample((5, 17, 33), "edge", 3)
    b = sample((5, 33, 9), "normal", 4)
    want = L.bmm_reference(a, b)
    assert_same_bits(L.matmul_exact(a, b, engine, "native"), want)
    assert_same_bits(L.matmul_exact(a.transpose(1, 2).contiguous().transpose(1, 2), b, engine, "native"), want)
    a4, b4 = a.reshape(5, 1, 17, 33), b.reshape(5, 1, 33, 9)
    assert_same_bits(L.matmul_exact(a4, b4, engine, "native"), want.reshape(5, 1, 17, 9))


def test_f64_bmm_is_one_batched_gemm(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, ...]] = []
    real = torch.bmm

    def counting(x: torch.Tensor, y: torch.Tensor, **kw: object) -> torch.Tensor:
        calls.append(tuple(x.shape))
        return real(x, y, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(torch, "bmm", counting)
    a, b = sample((12, 64, 32), "normal", 5), sample((12, 32, 64), "normal", 6)
    out = L.matmul_exact(a, b, "f64", "native")
    assert calls == [(12, 64, 32)]
    monkeypatch.setattr(torch, "bmm", real)
    assert_same_bits(out, L.matmul_exact(a, b, "f64", "torch"))


FORMS = ("split", "wide")


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("kind", KINDS)
def test_int8_forms_equal_reference(isa: str, form: str, kind: str) -> None:
    """Both GEMM layouts of the native int8 engine (three calls, or one call on the wide W_B),
    batched and not, contiguous and transposed operands: the scalar definition's bits."""
    for i, (nb, m, k, n) in enumerate([(1, 1, 1, 1), (1, 9, 33, 17), (3, 20, 7, 40), (4, 5, 64, 3)]):
        a = sample((nb, m, k), kind, seed=40 + i)
        b = sample((nb, k, n), kind, seed=50 + i)
        want = L.bmm_reference(a, b)
        p = L.p_dot(k)
        at = a.transpose(1, 2).contiguous().transpose(1, 2)
        bt = b.transpose(1, 2).contiguous().transpose(1, 2)
        for aa, bb in ((a, b), (at, b), (a, bt), (at, bt)):
            assert_same_bits(L._matmul_int8_native(aa, bb, p, form), want)  # type: ignore[arg-type]
        for t in range(nb):
            assert_same_bits(L._matmul_int8_native(a[t], b[t], p, form), want[t])  # type: ignore[arg-type]


@settings(max_examples=30, deadline=None)
@given(
    nb=st.integers(1, 4),
    m=st.integers(1, 10),
    k=st.integers(1, 30),
    n=st.integers(1, 10),
    ta=st.booleans(),
    tb=st.booleans(),
    data=st.data(),
)
def test_bmm_bit_patterns_layouts_and_batch_invariance(
    nb: int, m: int, k: int, n: int, ta: bool, tb: bool, data: st.DataObject
) -> None:
    """bmm of arbitrary fp32 bit patterns (+-0, subnormals, +-inf, NaN payloads) in either memory
    order: every engine, int8 form and instruction path equals the scalar definition, and entry t
    of the batch equals the mm of that entry alone, bit for bit."""
    lib = _native.linalg_library()
    assert lib is not None
    words = st.one_of(st.integers(0, (1 << 32) - 1), st.sampled_from(EDGE_BITS))
    a = from_bits(data.draw(st.lists(words, min_size=nb * m * k, max_size=nb * m * k)), (nb, m, k))
    b = from_bits(data.draw(st.lists(words, min_size=nb * k * n, max_size=nb * k * n)), (nb, k, n))
    if data.draw(st.booleans()):
        a = torch.nan_to_num(a, nan=1.0, posinf=2.0, neginf=-2.0)
        b = torch.nan_to_num(b, nan=1.0, posinf=2.0, neginf=-2.0)
    want = L.bmm_reference(a, b)
    if ta:
        a = a.transpose(1, 2).contiguous().transpose(1, 2)
    if tb:
        b = b.transpose(1, 2).contiguous().transpose(1, 2)
    p = L.p_dot(k)
    for name in ISAS:
        if not lib.supported(name):
            continue
        with pytest.MonkeyPatch.context() as mp:
            mp.setenv(L.ISA_ENV, name)
            for engine in L.ENGINES:
                out = L.matmul_exact(a, b, engine, "native")
                assert_same_bits(out, want)
                for t in range(nb):
                    assert_same_bits(L.matmul_exact(a[t], b[t], engine, "native"), out[t])
            for form in FORMS:
                assert_same_bits(L._matmul_int8_native(a, b, p, form), want)  # type: ignore[arg-type]


def test_int8_bmm_is_one_gemm_call_per_entry(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch has no batched int8 GEMM: the batch costs one _int_mm call per entry (the wide
    layout), not three; quantizer and combine are one native call each for the whole batch."""
    calls: list[tuple[int, ...]] = []
    real = torch._int_mm

    def counting(x: torch.Tensor, y: torch.Tensor, **kw: object) -> torch.Tensor:
        calls.append((*x.shape, *y.shape))
        return real(x, y, **kw)  # type: ignore[arg-type]

    lib = _native.linalg_library()
    assert lib is not None
    native_calls: list[str] = []
    for fn in ("quant_int8x2", "combine_int8x2"):
        orig = getattr(lib, fn)
        monkeypatch.setattr(lib, fn, lambda *args, _o=orig, _n=fn: native_calls.append(_n) or _o(*args))
    monkeypatch.setattr(torch, "_int_mm", counting)
    a, b = sample((6, 20, 32), "normal", 60), sample((6, 32, 24), "edge", 61)
    out = L.matmul_exact(a, b, "int8", "native")
    assert calls == [(20, 64, 64, 72)] * 6  # W_A (M x 2K) @ wide W_B (2K x 3N)
    assert native_calls == ["quant_int8x2", "quant_int8x2", "combine_int8x2"]
    monkeypatch.undo()
    assert_same_bits(out, L.bmm_reference(a, b))


@pytest.mark.parametrize("engine", L.ENGINES)
def test_bmm_thread_count_and_batch_invariance(isa: str, engine: str) -> None:
    """A batch large enough that the quantizer and combine split over 2 threads: 1 and 2
    threads give the same bits, equal to the torch-op path, and each entry equals its mm."""
    a, b = sample((8, 256, 256), "spread", 62), sample((8, 256, 256), "edge", 63)
    a[3, 5, 7] = math.inf
    saved = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2):
            torch.set_num_threads(t)
            outs.append(L.matmul_exact(a, b, engine, "native"))  # type: ignore[arg-type]
            outs.append(L.matmul_exact(a.transpose(1, 2).contiguous().transpose(1, 2), b, engine, "native"))  # type: ignore[arg-type]
    finally:
        torch.set_num_threads(saved)
    want = L.matmul_exact(a, b, "f64", "torch")
    for out in outs:
        assert_same_bits(out, want)
    for t in (0, 3, 7):
        assert_same_bits(L.matmul_exact(a[t], b[t], engine, "native"), want[t])  # type: ignore[arg-type]


def test_addmm_and_weight_gradient_shapes(isa: str) -> None:
    """addmm's product and the tall-skinny weight-gradient product (K >> M, N, A transposed)
    go through the native passes with the reference's bits."""
    x = sample((300, 6), "normal", 7)  # activations, K = 300 rows
    g = sample((300, 5), "spread", 8)  # output gradient
    assert_same_bits(L.mm(x.t(), g), L.mm_reference(x.t().contiguous(), g))
    bias = sample((5,), "normal", 9)
    assert_same_bits(
        L.addmm(bias, x, sample((6, 5), "normal", 10)), L.addmm_reference(bias, x, sample((6, 5), "normal", 10))
    )


@pytest.mark.parametrize("engine", L.ENGINES)
def test_addmm_and_weight_gradients_take_the_native_passes(engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """addmm's product and the weight-gradient product x^T @ g (K >> M, N, A a transposed view)
    run the native quantizer and one combine. The f64 engine reads the operands' own memory (its
    BLAS takes either layout); the int8 engine reads an operand stored against the layout it
    writes (x^T here, W^T in a forward) from one row-major copy, and a row-major one in place."""
    lib = _native.linalg_library()
    assert lib is not None
    if engine == "int16":
        _int16_takes_one_native_call(lib, monkeypatch)
        return
    seen: list[tuple[str, int]] = []
    quant = "quant_f64" if engine == "f64" else "quant_int8x2"
    comb = "combine_f64" if engine == "f64" else "combine_int8x2"
    for fn in (quant, comb):
        orig = getattr(lib, fn)
        monkeypatch.setattr(lib, fn, lambda *args, _o=orig, _n=fn: seen.append((_n, args[0])) or _o(*args))
    monkeypatch.setenv("REFEREED_MM_ENGINE", engine)
    x = sample((4096, 24), "normal", 70)  # activations: K = 4096 rows
    g = sample((4096, 16), "spread", 71)  # output gradient
    grad_w = L.mm(x.t(), g)
    assert [n for n, _ in seen] == [quant, quant, comb]
    assert (seen[0][1] == x.data_ptr()) == (engine == "f64")
    assert seen[1][1] == g.data_ptr()
    seen.clear()
    w, bias = sample((24, 16), "normal", 72), sample((16,), "edge", 73)
    out = L.addmm(bias, x, w)
    assert [n for n, _ in seen] == [quant, quant, comb]
    assert seen[0][1] == x.data_ptr() and seen[1][1] == w.data_ptr()
    seen.clear()
    wt = sample((16, 24), "normal", 74)  # a forward's W^T: B stored column-major
    out_t = L.addmm(bias, x, wt.t())
    assert [n for n, _ in seen] == [quant, quant, comb]
    assert (seen[1][1] == wt.data_ptr()) == (engine == "f64")
    monkeypatch.undo()
    assert_same_bits(grad_w, L.mm_reference(x.t().contiguous(), g))
    assert_same_bits(out, L.addmm_reference(bias, x, w))
    assert_same_bits(out_t, L.addmm_reference(bias, x, wt.t().contiguous()))


def _int16_takes_one_native_call(lib: _native.Linalg, monkeypatch: pytest.MonkeyPatch) -> None:
    """The int16 engine: the whole product is one native call (quantizer, GEMMs and combine) that
    reads both operands in their own memory, transposed views included (no copy)."""
    seen: list[tuple[int, int]] = []
    orig = lib.mm_i16
    monkeypatch.setattr(lib, "mm_i16", lambda *args: seen.append((args[0], args[7])) or orig(*args))
    monkeypatch.setenv("REFEREED_MM_ENGINE", "int16")
    x = sample((4096, 24), "normal", 70)  # activations: K = 4096 rows
    g = sample((4096, 16), "spread", 71)  # output gradient
    w, bias = sample((24, 16), "normal", 72), sample((16,), "edge", 73)
    wt = sample((16, 24), "normal", 74)  # a forward's W^T: B stored column-major
    grad_w, out, out_t = L.mm(x.t(), g), L.addmm(bias, x, w), L.addmm(bias, x, wt.t())
    assert seen == [(x.data_ptr(), g.data_ptr()), (x.data_ptr(), w.data_ptr()), (x.data_ptr(), wt.data_ptr())]
    monkeypatch.undo()
    assert_same_bits(grad_w, L.mm_reference(x.t().contiguous(), g))
    assert_same_bits(out, L.addmm_reference(bias, x, w))
    assert_same_bits(out_t, L.addmm_reference(bias, x, wt.t().contiguous()))


def test_thread_count_does_not_matter(isa: str) -> None:
    """Large enough that every pass splits over 2 threads (>= 2^18 values per thread)."""
    lib = _native.linalg_library()
    assert lib is not None
    saved = torch.get_num_threads()
    a, b = sample((768, 700), "spread", 11), sample((700, 768), "edge", 12)
    a[5, 7] = math.inf
    try:
        outs = []
        for t in (1, 2):
            torch.set_num_threads(t)
            outs.append(L.matmul_exact(a, b, "f64", "native"))
            outs.append(L.matmul_exact(a.t().contiguous().t(), b, "f64", "native"))
    finally:
        torch.set_num_threads(saved)
    want = L.matmul_exact(a, b, "f64", "torch")
    for out in outs:
        assert_same_bits(out, want)
    # the int8 passes, called directly (the int8 GEMM itself is a plain loop on CPUs without VNNI)
    x = sample((1024, 600), "spread", 13)
    results = []
    for threads in (1, 2):
        lo, hi = torch.empty(1024, 600, dtype=torch.int8), torch.empty(1024, 600, dtype=torch.int8)
        bad, ulp = torch.empty(1024, dtype=torch.uint8), torch.empty(1024, dtype=torch.float64)
        n = lib.quant_int8x2(x.data_ptr(), 1, 1024, 600, 0, 600, 1, 14, lo.data_ptr(), hi.data_ptr(), None, None,
                             0, 600, 1, bad.data_ptr(), ulp.data_ptr(), ISAS.index(isa), threads)  # fmt: skip
        g = torch.Generator().manual_seed(14)
        t3 = [torch.randint(-(1 << 30), 1 << 30, (768, 768), generator=g, dtype=torch.int32) for _ in range(3)]
        ua = torch.exp2(torch.randint(-40, 40, (768,), generator=g).double())
        ub = torch.exp2(torch.randint(-40, 40, (768,), generator=g).double())
        flags = torch.zeros(768, dtype=torch.uint8)
        out = torch.empty(768, 768)
        rc = lib.combine_int8x2(t3[0].data_ptr(), t3[1].data_ptr(), t3[2].data_ptr(), 1, 768, 768, 0, 768,
                                ua.data_ptr(), ub.data_ptr(), flags.data_ptr(), flags.data_ptr(), 0,
                                out.data_ptr(), ISAS.index(isa), threads)  # fmt: skip
        assert n == 0 and rc == 0
        results.append((lo, hi, bad, ulp, out))
    for one, two in zip(results[0], results[1], strict=True):
        assert torch.equal(one.view(torch.int8) if one.dtype != torch.float32 else one.view(torch.int32),
                           two.view(torch.int8) if two.dtype != torch.float32 else two.view(torch.int32))  # fmt: skip
    # the combine against its definition on a few entries: f32((T0 + 2^8 T1 + 2^16 T2) * ua * ub) + 0
    from trainer.repops._fixed import round_f32

    out = results[0][4]
    for i, j in ((0, 0), (5, 700), (767, 767)):
        s = int(t3[0][i, j]) + 256 * int(t3[1][i, j]) + 65536 * int(t3[2][i, j])
        assert out[i, j].item() == round_f32(float(s) * float(ua[i]) * float(ub[j])) + 0.0


def test_non_finite_lines_give_the_canonical_nan(isa: str) -> None:
    a = sample((20, 16), "normal", 13)
    b = sample((16, 24), "normal", 14)
    a[3, 5] = -math.inf
    b[7, 10] = float("nan")
    for engine in L.ENGINES:
        c = L.matmul_exact(a, b, engine, "native")
        nan_mask = bits(c) == CANONICAL_NAN_BITS
        want = torch.zeros(20, 24, dtype=torch.bool)
        want[3, :] = True
        want[:, 10] = True
        assert torch.equal(nan_mask, want)


def test_a_forced_missing_instruction_path_is_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    lib = _native.linalg_library()
    assert lib is not None
    missing = [i for i in ISAS if not lib.supported(i)]
    monkeypatch.setenv(L.ISA_ENV, "sse9")
    with pytest.raises(RepOpsError, match="expected one of"):
        L.native_isa()
    if not missing:
        pytest.skip("this CPU runs every instruction path; nothing missing to force")
    monkeypatch.setenv(L.ISA_ENV, missing[0])
    with pytest.raises(RepOpsError, match="does not run"):
        L.matmul_exact(torch.ones(2, 2), torch.ones(2, 2), "f64", "native")


def test_workspace_reuse_changes_no_bits() -> None:
    """Reused scratch buffers: a product after a larger and a differently shaped one."""
    a1, b1 = sample((64, 80), "normal", 15), sample((80, 48), "spread", 16)
    a2, b2 = sample((9, 5), "edge", 17), sample((5, 7), "normal", 18)
    w1, w2 = L.mm_reference(a1, b1), L.mm_reference(a2, b2)
    for _ in range(2):
        assert_same_bits(L.matmul_exact(a1, b1, "f64", "native"), w1)
        assert_same_bits(L.matmul_exact(a2, b2, "f64", "native"), w2)
    L.release_workspace()
    assert_same_bits(L.matmul_exact(a2, b2, "int8", "native"), w2)


# --- engine choice by calibration ---------------------------------------------------------------


@pytest.fixture
def calib_env(tmp_path: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    monkeypatch.setenv("REFEREED_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("REFEREED_MM_CALIBRATE_ALL", "1")  # int8 a candidate even without VNNI
    monkeypatch.delenv("REFEREED_MM_ENGINE", raising=False)
    _calib.clear_memory()
    yield tmp_path
    _calib.clear_memory()


def test_calibrated_and_forced_engines_agree_bit_for_bit(calib_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = sample((64, 80), "spread", 19), sample((80, 64), "edge", 20)
    assert L.engine_candidates(a, b) == ["f64", "int8", "int16"]
    auto = L.matmul_exact(a, b)
    cache = _calib.cache_file(a.device)
    data = json.loads(cache.read_text())
    cls = _calib.shape_class(a, b)
    assert data["classes"][cls]["engine"] in L.ENGINES
    assert set(data["classes"][cls]["seconds"]) == {"f64", "int8", "int16"}
    for engine in L.ENGINES:
        assert_same_bits(L.matmul_exact(a, b, engine), auto)
        monkeypatch.setenv("REFEREED_MM_ENGINE", engine)
        assert L.default_engine(a, b) == engine
        assert_same_bits(L.matmul_exact(a, b), auto)
    assert_same_bits(auto, L.mm_reference(a, b))


def test_the_cached_choice_is_reused_without_timing(calib_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = sample((64, 64), "normal", 21), sample((64, 64), "normal", 22)
    first = L.default_engine(a, b)
    _calib.clear_memory()  # a new process: only the file remains

    def no_timing(*_: object) -> float:
        raise AssertionError("calibrated again although the cache holds the class")

    monkeypatch.setattr(_calib, "_time_once", no_timing)
    assert L.default_engine(a, b) == first


def test_a_corrupt_or_unwritable_cache_is_survived(calib_env: object, monkeypatch: pytest.MonkeyPatch) -> None:
    a, b = sample((64, 64), "normal", 23), sample((64, 64), "normal", 24)
    path = _calib.cache_file(a.device)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("{not json")
    assert L.default_engine(a, b) in L.ENGINES
    assert json.loads(path.read_text())["version"] == _calib.CACHE_VERSION  # replaced
    _calib.clear_memory()
    monkeypatch.setenv("REFEREED_CACHE_DIR", "/proc/no-such-dir/refereed")  # cannot be created
    assert_same_bits(L.matmul_exact(a, b), L.mm_reference(a, b))


def test_a_bad_forced_engine_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("REFEREED_MM_ENGINE", "fp16")
    with pytest.raises(RepOpsError, match="REFEREED_MM_ENGINE"):
        L.matmul_exact(torch.ones(64, 64), torch.ones(64, 64))
    with pytest.raises(ValueError, match="unknown engine"):
        L.matmul_exact(torch.ones(2, 2), torch.ones(2, 2), "fp16")  # type: ignore[arg-type]


def test_int8_is_a_candidate_only_with_vnni_and_int16_only_on_a_vector_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("REFEREED_MM_CALIBRATE_ALL", raising=False)
    a, b = torch.ones(128, 128), torch.ones(128, 128)
    want = ["f64", "int8"] if L._cpu_has_fast_int8() else ["f64"]
    vector = L.native_isa() != "portable"  # AVX2 or AVX-512: every x86-64 machine of ours
    assert L.engine_candidates(a, b) == [*want, "int16"] if vector else want
    monkeypatch.setenv(L.ISA_ENV, "portable")  # the int16 kernel's scalar loop: slower than a float64 GEMM
    assert L.engine_candidates(a, b) == want
    assert L.engine_candidates(torch.ones(4, 4), torch.ones(4, 4)) == ["f64"]  # tiny: launch overhead


# --- exact sums through the same quantizer (reduce.py) -------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    ("shape", "dims"),
    [((7, 33), [1]), ((33, 7), [0]), ((4, 9, 20), [1]), ((4, 9, 20), [1, 2]), ((4, 9, 20), [0, 1]), ((3000,), [0])],
)
def test_native_sums_equal_reference_and_torch_path(
    isa: str, kind: str, shape: tuple[int, ...], dims: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from trainer.repops import reduce as R

    x = sample(shape, kind, seed=len(shape) * 31 + dims[0])
    assert R._native_grid_sum(x, dims, 20) is not None  # the native pass does run here
    native_sum = R.sum_dim_intlist(x, dims)
    native_mean = R.mean_dim(x, dims)
    assert_same_bits(native_sum, R.sum_dim_intlist_reference(x, dims))
    assert_same_bits(native_mean, R.mean_dim_reference(x, dims))
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert R._native_grid_sum(x, dims, 20) is None
    assert_same_bits(R.sum_dim_intlist(x, dims), native_sum)
    assert_same_bits(R.mean_dim(x, dims), native_mean)


def test_native_sums_of_long_slices_and_threads(isa: str) -> None:
    """p_sum shrinks with the length (33 bits at 2^20): partial sums stay exact in any order."""
    from trainer.repops import reduce as R

    saved = torch.get_num_threads()
    x = sample((64, 1 << 13), "spread", 30)  # 2^19 values, 64 slices: 2 threads
    try:
        outs = []
        for t in (1, 2):
            torch.set_num_threads(t)
            outs.append(R.sum_dim_intlist(x, [1]))
            outs.append(R.sum_dim_intlist(x.t().contiguous(), [0]))
    finally:
        torch.set_num_threads(saved)
    want = R.sum_dim_intlist_reference(x, [1])
    for o in outs:
        assert_same_bits(o, want)


@pytest.mark.parametrize("engine", L.ENGINES)
def test_broadcast_operands_with_zero_strides(isa: str, engine: str) -> None:
    row = sample((1, 40), "spread", 31)
    col = sample((40, 1), "edge", 32)
    a = row.expand(12, 40)  # strides (0, 1)
    b = col.expand(40, 9)  # strides (1, 0)
    want = L.mm_reference(a.contiguous(), b.contiguous())
    assert_same_bits(L.matmul_exact(a, b, engine, "native"), want)
    assert_same_bits(
        L.matmul_exact(b.t(), a.t(), engine, "native"), L.mm_reference(b.t().contiguous(), a.t().contiguous())
    )


def test_a_descheduled_run_does_not_decide_the_calibration(calib_env: object) -> None:
    """The engine that is faster on most rounds wins although two of its runs were slow (a busy
    machine descheduled them): the candidates alternate and each keeps its best round."""
    a, b = sample((64, 64), "normal", 25), sample((64, 64), "normal", 26)
    calls = {"f64": 0, "int8": 0}

    def run(engine: str) -> None:
        calls[engine] += 1
        if engine == "int8":
            time.sleep(0.03 if calls[engine] in (2, 3) else 0.001)
        else:
            time.sleep(0.005)

    choice = _calib.calibrate(a, b, ["f64", "int8"], run)
    assert choice.engine == "int8"
    assert calls == {"f64": _calib.ROUNDS + 1, "int8": _calib.ROUNDS + 1}


def test_the_native_libraries_share_torchs_openmp_runtime() -> None:
    """Both native libraries bind to the libgomp.so.1 torch loaded (one thread pool in the
    process): loading them never maps a second OpenMP runtime."""
    # In a fresh process: in this one other packages (scikit-learn) may have mapped their own
    # hashed libgomp copies, which say nothing about ours.
    # a fresh process that loads the libraries before anything else imports torch
    code = (
        "from pathlib import Path\n"
        "from trainer.repops import _native\n"
        "assert _native.library() is not None and _native.linalg_library() is not None\n"
        "print(len({l.split()[-1] for l in Path('/proc/self/maps').read_text().splitlines() if 'libgomp' in l}))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "1"


# --- the int16 engine (linalg.c, rt_mm_i16) ---------------------------------------------------


@pytest.mark.parametrize("order", ["row-major", "transposed"])
@pytest.mark.parametrize(
    ("nb", "m", "k", "n"),
    [(1, 97, 1025, 257), (1, 200, 513, 300), (3, 13, 511, 9), (2, 6, 1, 8), (1, 1, 2049, 1), (4, 50, 64, 70)],
)
def test_int16_engine_crosses_its_blocks_and_tails(isa: str, order: str, nb: int, m: int, k: int, n: int) -> None:
    """Shapes across the kernel's blocks (96 rows x 256 columns, K by 512) and panel tails (rows
    mod 6, columns mod 8, odd K), batches, both operand layouts, with non-finite rows and columns,
    zeros of both signs and subnormals: the bits of the f64 engine's torch-op path."""
    g = torch.Generator().manual_seed(nb * 1000 + m + k + n)
    a = torch.randn((nb, m, k), generator=g) * torch.exp2(torch.randint(-20, 20, (nb, m, 1), generator=g).float())
    b = torch.randn((nb, k, n), generator=g) * torch.exp2(torch.randint(-20, 20, (nb, 1, n), generator=g).float())
    a.view(-1)[::13] = 0.0
    a.view(-1)[1::17] = -0.0
    b.view(-1)[::11] = 1e-40
    if m > 2 and k > 1:
        a[0, 1, k // 2] = math.nan
    if n > 3:
        b[-1, 0, 3] = -math.inf
    if order == "transposed":
        a, b = a.transpose(1, 2).contiguous().transpose(1, 2), b.transpose(1, 2).contiguous().transpose(1, 2)
    want = L.matmul_exact(a, b, "f64", "torch")
    assert_same_bits(L.matmul_exact(a, b, "int16", "native"), want)
    assert_same_bits(L.matmul_exact(a, b, "int16", "torch"), want)


def test_int16_engine_is_exact_at_its_int32_bound(isa: str) -> None:
    """Every product at its largest magnitude: A's rows on q = -2^14 (values just below -1.0),
    B's columns on q = 16256 (lB = -128, hB = 64), so every qa * lB is +2^21 and each block of 512
    K positions sums to 2^30 in its int32 lanes; a block of 1024 would reach 2^31 and wrap. The
    result is the exact S = K * 2^14 * 16256 rounded once, as the f64 engine gives."""
    k = 4096
    below_one = float(torch.tensor(1.0).nextafter(torch.tensor(0.0)))
    a = torch.full((7, k), -below_one)
    b = torch.full((k, 9), 16256 / 16384 * 0.5)  # e = 0 for the column maxima 0.496...: q = 16256
    want = L.matmul_exact(a, b, "f64", "torch")
    assert float(want[0, 0]) == -k * 16384 * 16256 * 2.0**-29  # S 2^(0 - 14) 2^(-1 - 14) = -2032
    assert_same_bits(L.matmul_exact(a, b, "int16", "native"), want)


def test_int16_engine_threads_change_no_bit(isa: str) -> None:
    """Large enough for both threads to take output blocks and quantizer chunks."""
    a, b = sample((768, 700), "spread", 31), sample((700, 768), "edge", 32)
    a[5, 7] = math.inf
    saved = torch.get_num_threads()
    try:
        outs = []
        for t in (1, 2):
            torch.set_num_threads(t)
            outs.append(L.matmul_exact(a, b, "int16", "native"))
            outs.append(L.matmul_exact(a.t().contiguous().t(), b.t().contiguous().t(), "int16", "native"))
    finally:
        torch.set_num_threads(saved)
    want = L.matmul_exact(a, b, "f64", "torch")
    for out in outs:
        assert_same_bits(out, want)
