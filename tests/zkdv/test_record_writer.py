"""A transcript's lines and hash chain written natively (`trainer.commit._native.RecordWriter`: the record's base64
line written and its SHA-256 taken in one call, on the SHA-NI and the portable path) and a step record encoded from
its plan's CBOR template (`zkdv.transcript.Template`) give the bytes of the Python path: compared by hash."""

from __future__ import annotations

import hashlib
import random
from pathlib import Path

import pytest

from trainer.commit import _native
from trainer.runner.attested import AttestedRun
from trainer.workloads import mlp_digits
from zkdv import torch as zkdv_torch
from zkdv.transcript import TranscriptWriter, read_records

PATHS = ["native", "portable", "python"]


def _native_lib() -> bool:
    return _native.build() is not None and _native._load() is not None and bool(_native._recording[-1])


def _set_path(monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    if path == "python":
        _native._load()  # loaded first: it records which calls it has
        monkeypatch.setattr(_native, "_recording", [False])
    elif path == "portable":
        lib = _native._load()
        assert lib is not None
        lib.rt_set_portable(1)


@pytest.fixture(autouse=True)
def _restore_shani():  # type: ignore[no-untyped-def]
    yield
    lib = _native._load()
    if lib is not None:
        lib.rt_set_portable(0)


def _write(tmp: Path, records: list[dict[str, object]]) -> tuple[str, bytes, int]:
    w = TranscriptWriter(tmp)
    for r in records:
        w.append(r)
    w.close()
    return hashlib.sha256(tmp.read_bytes()).hexdigest(), w.prev, w.bytes_written


@pytest.mark.parametrize("path", PATHS)
def test_lines_and_chain_match_the_python_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, path: str) -> None:
    if path != "python" and not _native_lib():
        pytest.skip("the native library (with rt_write_record) is not built")
    rng = random.Random(7)
    # every CBOR length modulo 3 (base64's padding), empty-ish to a few kilobytes, bytes holding 0x0A and 0x25
    records = [{"type": "step", "n": i, "blob": rng.randbytes(rng.choice([0, 1, 2, 3, 31, 32, 33, 500, 2047, 4100]))}
               for i in range(60)]
    records.append({"type": "check", "detail": "a\n%b%%" * 50})
    monkeypatch.setattr(_native, "_recording", [False])
    want = _write(tmp_path / "reference.cborl", records)
    monkeypatch.undo()
    _set_path(monkeypatch, path)
    got = _write(tmp_path / f"{path}.cborl", records)
    assert got == want
    assert read_records(tmp_path / f"{path}.cborl") == read_records(tmp_path / "reference.cborl")  # the chain holds


@pytest.mark.parametrize("variant", ["template", "dict", "template, python lines"])
def test_a_runs_transcript_is_the_same_with_and_without_the_record_template(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variant: str) -> None:
    """A fixed run (checks every other step, so some records wait behind a check and carry pre_entries after a
    step that did not) gives the same transcript through the step template as through the record dict."""
    def run(folder: Path) -> str:
        w = mlp_digits(steps=8, checkpoint_interval=4, batch_size=8)
        r = AttestedRun(w.step, w.dataset, w.config, w.initial_state(), folder, check_every=2)
        r.advance(w.config.steps)
        r.close()
        return hashlib.sha256((folder / "zkdv" / "records.cborl").read_bytes()).hexdigest()

    used: list[bool] = []
    template = zkdv_torch._StepPlan.template

    def spy(self, pre_entries):  # type: ignore[no-untyped-def]
        got = template(self, pre_entries)
        used.append(got is not None)
        return got

    with monkeypatch.context() as m:
        m.setattr(zkdv_torch._StepPlan, "template", lambda self, pre_entries: None)
        m.setattr(_native, "_recording", [False])
        want = run(tmp_path / "dict")
    if variant == "template, python lines":
        monkeypatch.setattr(_native, "_recording", [False])
    if variant == "dict":
        monkeypatch.setattr(zkdv_torch._StepPlan, "template", lambda self, pre_entries: None)
    else:
        monkeypatch.setattr(zkdv_torch._StepPlan, "template", spy)
    assert run(tmp_path / "got") == want
    if variant != "dict" and _native_lib() and _native._closing[-1]:
        assert used and all(used)
