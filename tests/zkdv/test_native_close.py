"""A step's close in one native call (`trainer.commit._native.ClosePlan` through `zkdv.torch._StepPlan`)
against the Python path, on both compression functions: the update from the post- and the pre-state's copies
(the C code subtracts as the RepOps `sub` does: compared with it byte for byte, with signed zeros, subnormals,
infinities and NaN payloads), the tensor commitments, the three state roots, the batch's rolling digest from its
leaves and the probes, whose sums and products the C code computes as the RepOps kernels do (compared with
`ProbeSet` and `Probe` on the RepOps kernels, with signed zeros, subnormals, infinities, NaNs and sums that
overflow float32)."""

from __future__ import annotations

import hashlib

import pytest
import torch

from trainer.commit import _native
from trainer.commit.records import state_root_from_commitments
from trainer.commit.tensor import commit_tensor
from trainer.repops import KERNELS
from zkdv.torch import _layout, _StepPlan
from zkdv.transcript import Probe, ProbeSet, packed_rows, rolling_root

SHAPES = {
    "param/a": (64, 64),
    "param/b": (64,),
    "param/c": (3, 7, 64),
    "param/d": (128, 10),
    "param/e": (10,),
    "param/g": (5, 256),
    "param/i": (1,),
    "param/j": (2, 1),
    "param/k": (4, 64),
    "param/m": (7, 201),
    "param/t": (3, 3),  # sums whose float32 rounding the grid decides (`_ties`)
}
OTHERS = {  # entries that are not probed, between and around the probed ones
    "buffer/steps": (torch.int64, (3,)),
    "optim/m/a": (torch.float32, (64, 64)),
    "optim/flag": (torch.int32, (5,)),
    "param/z": (torch.float32, ()),
}


def _values(seed: int, special: bool, ratio: float) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(seed)
    out = {}
    for n, shape in SHAPES.items():
        t = torch.randn(shape, generator=g) * 10 ** torch.randint(-8, 8, shape, generator=g).float()
        if special:
            flat = t.reshape(-1)
            flat[::7] = -0.0
            flat[3::97] = float("inf")
            flat[5::131] = float("nan")
            flat[11::151] = float("-nan")
            flat[13::59] = 1e-40  # subnormal
            flat[17::61] = -3e-42
            if n == "param/k":
                t[1] = -0.0
                t[2] = float("-inf")
                t[3, :5] = torch.tensor([float("inf"), float("-inf"), 1.0, -0.0, float("nan")])
            if n == "param/m":
                t[0] = 3e38  # every slice's sum overflows float32
                t[1] = 1e-44  # only subnormals
                t[2] = 0.0
                t[3] = -0.0
        out[n] = t
    out["param/t"] = _ties(ratio)
    return out


def _ties(ratio: float) -> torch.Tensor:
    """Rows of one slice (k = 1, m = 3, grid bits p = 50: the grid 2^-49 below a maximum of 1) whose signed
    values are 1, 2^-24 (the sum lies on a float32 tie) and a last value that tips it: 1.5 * 2^-50 rounds up to
    the grid's 2^-49 (the sum rounds up), 2^-51 rounds to 0 (the tie goes to even, 1), -1.5 * 2^-50 down."""
    signs = Probe("param/t", 3, ratio).signs[:3]
    rows = torch.tensor([[1.0, 2.0**-24, 1.5 * 2.0**-50], [1.0, 2.0**-24, 2.0**-51], [1.0, 2.0**-24, -1.5 * 2.0**-50]])
    return rows * signs  # s_i * s_i = 1: the signed values are the rows


def _pre(values: dict[str, torch.Tensor], seed: int, special: bool) -> dict[str, torch.Tensor]:
    """A pre-state's parameters for these post-state values: close to them (small and subnormal differences),
    with, where `special`, the operands whose difference is a special value (inf - inf, NaN payloads of either
    sign on either side, -0 - -0, 0 - -0, the largest finite values of opposite signs)."""
    g = torch.Generator().manual_seed(300 + seed)
    out = {}
    for n, t in values.items():
        old = t - torch.randn(t.shape, generator=g) * 10 ** torch.randint(-44, 8, t.shape, generator=g).float()
        if special:
            flat = old.reshape(-1)
            flat[::5] = t.reshape(-1)[::5]  # the same values: +0 (or NaN for a NaN)
            flat[2::11] = float("inf")
            flat[4::13] = -0.0
            flat[6::17] = torch.tensor([0x7FC12345, -0x0003ABCD], dtype=torch.int32).view(torch.float32).repeat(
                flat[6::17].numel())[: flat[6::17].numel()]  # NaNs with payloads, positive and negative
            flat[8::19] = -3.4028234663852886e38
            flat[9::23] = 2.0**-149  # the smallest subnormal
        out[n] = old
    return out


def _state(values: dict[str, torch.Tensor], seed: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(100 + seed)
    state = {n: torch.randint(-9, 9, shape, generator=g).to(dtype) for n, (dtype, shape) in OTHERS.items()}
    state.update(values)
    return {n: state[n] for n in sorted(state)}  # canonical order: probed and other entries mixed


def _copy(state: dict[str, torch.Tensor]) -> torch.Tensor:
    return torch.cat([t.contiguous().reshape(-1).view(torch.uint8) for t in state.values()])


def _batch(seed: int, rows: int) -> dict[str, torch.Tensor]:
    g = torch.Generator().manual_seed(200 + seed)
    return {
        "x": torch.randn(rows, 3, 5, generator=g),
        "y": torch.randint(-(2**40), 2**40, (rows,), generator=g),
        "m": torch.rand(rows, 7, generator=g) > 0.5,
        "s": torch.randn((), generator=g),
        "b": torch.randint(0, 256, (rows, 2), generator=g).to(torch.uint8),
    }


def _update(post: dict[str, torch.Tensor], pre: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """`new - old` of every parameter with the RepOps kernel (docs/zkdv.md section 3)."""
    sub = KERNELS["aten.sub.Tensor"].fast
    return {n: sub(t, pre[n]) for n, t in post.items() if n.startswith("param/")}


def _python(state: dict[str, torch.Tensor], update: dict[str, torch.Tensor], batch: dict[str, torch.Tensor],
            probes: ProbeSet, window: int, monkeypatch: pytest.MonkeyPatch) -> tuple[list[bytes], bytes, dict]:
    with monkeypatch.context() as m:
        m.setenv("REFEREED_NATIVE", "0")
        groups = []
        for part in (state, update, batch):
            commits = {n: commit_tensor(t, native=False) for n, t in part.items()}
            groups.append(state_root_from_commitments(commits))
            groups.extend(commits[n] for n in part)
        rolling = rolling_root(packed_rows(list(batch.values())), window)
    return groups, rolling, probes({n: state[n] for n in probes.probes})


def _digest(parts: list[bytes], rolling: bytes | None, probes: dict[str, bytes]) -> bytes:
    named = b"".join(n.encode() + b"\0" + v for n, v in probes.items())
    return hashlib.sha256(b"".join(parts) + (rolling or b"") + named).digest()


@pytest.mark.parametrize("ratio", [0.01, 0.05, 0.3, 1.0])
@pytest.mark.parametrize("special", [False, True])
def test_step_close_matches_the_python_path(sha256_impl: str, monkeypatch: pytest.MonkeyPatch, ratio: float,
                                            special: bool) -> None:
    probes = ProbeSet({n: Probe(n, shape[-1], ratio) for n, shape in SHAPES.items()})
    for seed, (rows, window) in enumerate([(16, 8), (1, 1), (5, 40)]):
        values = _values(seed, special, ratio)
        state = _state(values, seed)
        pre = _state(_pre(values, seed, special), seed + 1)
        update = _update(state, pre)
        batch = _batch(seed, rows)
        plan = _StepPlan(_layout(state), _layout(batch), probes, window)
        assert plan.probe_slices, "every probed leaf is float32 in the copy: the probes are native"
        assert plan.span is not None and plan._out is not None, "the parameters are float32, back to back: native"
        got = plan.commit(_copy(state), _copy(pre), _layout(pre), list(batch.values()))
        assert got is not None and got.rolling is not None and got.probes is not None
        assert plan._out.numpy().tobytes() == _copy(update).numpy().tobytes()  # the RepOps sub's bytes
        assert list(got.probes) == list(probes.probes)
        parts = []
        for commits, _, root in got.groups:
            parts.append(root)
            parts.extend(commits.values())
        want_parts, want_rolling, want_probes = _python(state, update, batch, probes, window, monkeypatch)
        assert _digest(parts, got.rolling, got.probes) == _digest(want_parts, want_rolling, want_probes), (
            sha256_impl, ratio, special, seed)
        per_leaf = {n: p(values[n]).numpy().tobytes() for n, p in probes.probes.items()}  # the spec, leaf by leaf
        assert _digest([], None, got.probes) == _digest([], None, per_leaf)
        tie = probes.probes["param/t"]
        if tie.k == 1:  # the grid decided these roundings: 1 + 2^-23, 1 (to even), 1
            want = torch.tensor([1.0 + 2.0**-23, 1.0, 1.0]) * tie.scale
            assert got.probes["param/t"] == want.numpy().tobytes()
        assert (plan.rows, plan.width) == packed_rows(list(batch.values())).shape


def test_step_close_without_native_probes_rolling_or_update(sha256_impl: str) -> None:
    """A probed leaf that is not float32 leaves the probes and the update to the Python path, leaves that
    disagree on their rows the batch record (which refuses them); the commitments and roots are native all the
    same."""
    probes = ProbeSet({"param/a": Probe("param/a", 8, 0.5), "param/b": Probe("param/b", 4, 0.5)})
    state = {"param/a": torch.randn(3, 8, dtype=torch.float64), "param/b": torch.randn(2, 4)}
    pre = {n: t * 0.5 for n, t in state.items()}
    batch = {"x": torch.randn(4, 2), "y": torch.randn(5)}
    plan = _StepPlan(_layout(state), _layout(batch), probes, 2)
    assert plan.span is None
    got = plan.commit(_copy(state), _copy(pre), _layout(pre), list(batch.values()))
    assert got is not None and got.probes is None and got.rolling is None and plan.rows is None
    assert [c for c, _, _ in got.groups] == [
        {n: commit_tensor(t, native=False) for n, t in part.items()} for part in (state, _update(state, pre), batch)]


@pytest.mark.parametrize("case", ["interleaved", "other pre layout"])
def test_step_close_with_the_update_in_python(sha256_impl: str, case: str) -> None:
    """Parameters that do not lie back to back in the copy, or a pre-state of another layout (a state changed
    between steps): the update is the RepOps sub's, entry by entry, and the rest native as before."""
    probes = ProbeSet({"param/a": Probe("param/a", 8, 0.5)})
    state = {"param/a": torch.randn(3, 8), "param/b": torch.randn(2, 4)}
    if case == "interleaved":
        state = {"param/a": state["param/a"], "param/a2": torch.randn(3), "param/b": state["param/b"]}
        state["param/a2"] = state["param/a2"].to(torch.float64)
        pre = {n: t * 0.5 for n, t in state.items()}
    else:
        pre = {"buffer/x": torch.ones(2), **{n: t * 0.5 for n, t in state.items()}}
    batch = {"x": torch.randn(4, 2)}
    plan = _StepPlan(_layout(state), _layout(batch), probes, 1)
    assert (plan.span is None) == (case == "interleaved")
    got = plan.commit(_copy(state), _copy(pre), _layout(pre), list(batch.values()))
    assert got is not None
    assert [c for c, _, _ in got.groups] == [
        {n: commit_tensor(t, native=False) for n, t in part.items()} for part in (state, _update(state, pre), batch)]


def test_step_close_falls_back_without_the_library(monkeypatch: pytest.MonkeyPatch) -> None:
    probes = ProbeSet({"param/a": Probe("param/a", 8, 0.5)})
    state = {"param/a": torch.randn(3, 8)}
    plan = _StepPlan(_layout(state), _layout({}), probes, 1)
    monkeypatch.setenv("REFEREED_NATIVE", "0")
    assert plan.commit(_copy(state), _copy(state), _layout(state), []) is None
    monkeypatch.delenv("REFEREED_NATIVE")
    monkeypatch.setattr(_native, "_closing", [False])  # a library built before rt_step_close
    assert plan.commit(_copy(state), _copy(state), _layout(state), []) is None
