"""`zkdv.transcript.encode`: a record's canonical CBOR. Its fast path (the plain encoding of a copy with every
map in canonical key order, for records without floats) must give the bytes of `cbor2.dumps(record,
canonical=True)`, which the spec names (docs/zkdv.md section 4); compared on random records and on the kinds of
records a run writes."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any

import cbor2
from hypothesis import given, settings
from hypothesis import strategies as st

from zkdv.transcript import _MIXED, Slot, Template, _in_key_order, cbor_uint, encode

_plain = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70), st.binary(max_size=40),
    st.text(max_size=30),
)
_keys = st.one_of(st.text(max_size=3), st.text(min_size=20, max_size=300), st.sampled_from(
    ["type", "step", "pre", "post", "post_entries", "update", "update_entries", "loss", "probes", "batch", "a", "é",
     "😀", "prev", "snapshot", "check", "overlap", "rolling"]))
_records = st.recursive(
    _plain,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.dictionaries(_keys, inner, max_size=6),
                            st.tuples(inner, inner)),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _records, max_size=10))
def test_fast_path_gives_the_canonical_bytes(record: dict[str, Any]) -> None:
    assert _in_key_order(record) is not _MIXED
    assert encode(record) == cbor2.dumps(record, canonical=True)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(_keys, st.one_of(_records, st.floats(allow_nan=True), st.lists(st.floats(), max_size=3),
                                        st.dictionaries(st.integers(), _plain, max_size=3)), max_size=8))
def test_floats_and_other_keys_are_encoded_canonically(record: dict[str, Any]) -> None:
    assert encode(record) == cbor2.dumps(record, canonical=True)


def _slotted(value: Any, data: st.DataObject, slots: list[Any]) -> Any:
    """`value` with some of its bytes, integers, booleans and texts turned into slots (their values kept in
    `slots`, by slot index): raw slots for bytes, encoded ones for the rest."""
    kind = type(value)
    if kind is dict:
        return {k: _slotted(v, data, slots) for k, v in value.items()}
    if kind is list or kind is tuple:
        return [_slotted(v, data, slots) for v in value]
    if kind in (bytes, int, bool, str) and data.draw(st.booleans()):
        slots.append(value)
        if kind is bytes:
            return Slot(len(slots) - 1, len(value))
        return Slot(len(slots) - 1)
    return value


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(_keys, _records, max_size=10), st.data())
def test_a_template_filled_gives_the_canonical_bytes(record: dict[str, Any], data: st.DataObject) -> None:
    """Template(record with slots).fill(values) is encode(record): raw slots take the bytes, the others their CBOR
    (cbor_uint for a non-negative integer)."""
    slots: list[Any] = []
    template = Template(_slotted(record, data, slots))
    values = [v if type(v) is bytes else cbor_uint(v) if type(v) is int and 0 <= v < 2**64 else cbor2.dumps(v)
              for v in slots]
    assert template.fill(values) == encode(record) == cbor2.dumps(record, canonical=True)


def test_cbor_uint_at_every_width() -> None:
    for n in (0, 1, 23, 24, 255, 256, 65535, 65536, 2**32 - 1, 2**32, 2**64 - 1):
        assert cbor_uint(n) == cbor2.dumps(n)


def test_the_records_of_a_run() -> None:
    step = {
        "type": "step", "step": 12, "overlap": "unchecked", "check": {"state": False, "update": True},
        "snapshot": True, "batch": {"root": b"\x01" * 32, "rows": 64, "width": 264, "rolling": b"\x02" * 32},
        "pre": b"\x03" * 32, "post": b"\x04" * 32, "post_entries": [bytes([i]) * 32 for i in range(8)],
        "update": b"\x05" * 32, "update_entries": [bytes([i]) * 32 for i in range(4)], "loss": b"\x00\x00\x80\x3f",
        "probes": {"param/fc1.weight": b"\x06" * 512, "param/fc2.weight": b"\x07" * 40}, "prev": b"\x08" * 32,
        "pre_entries": [b"\x09" * 32],
    }
    check = {"type": "check", "step": 3, "state": True, "update": True, "base": 0, "replayed": 3, "ok": False,
             "detail": "step 3: the committed post-state differs", "prev": b"\x00" * 32}
    root = {"type": "root", "config": {"sampling": {"state": 0.01, "update": 0.5}}, "prev": b"\x00" * 32}
    for record in (step, check, root, OrderedDict(reversed(list(step.items())))):
        assert encode(record) == cbor2.dumps(dict(record), canonical=True)
    assert _in_key_order(root) is _MIXED  # a float: the canonical encoder decides its width


def test_the_optimizer_description_is_reencoded_exactly_when_its_bytes_would_differ() -> None:
    """zkdv keeps the last description's bytes while the next one is the same value for value (`_exact`):
    0.0 and -0.0, 1 and True, 1 and 1.0 are different descriptions, whose encodings differ."""
    from zkdv.torch import _exact

    base = {"kind": "sgd", "lr": 0.1, "momentum": 0.0, "nesterov": False, "betas": [0.9, 0.999]}
    same = {"kind": "sgd", "lr": 0.1, "momentum": 0.0, "nesterov": False, "betas": [0.9, 0.999]}
    assert _exact(base) == _exact(same) and encode(base) == encode(same)
    for k, v in [("momentum", -0.0), ("nesterov", 0), ("lr", 0.1000000001), ("betas", (0.9, 0.999)),
                 ("momentum", float("nan")), ("kind", "SGD"), ("betas", [0.9, 1])]:
        other = {**base, k: v}
        assert _exact(other) != _exact(base)  # re-encoded (a tuple for a list gives the same bytes: harmless)


def test_the_done_flag_wakes_every_waiter() -> None:
    import threading

    from zkdv.torch import _Done

    done = _Done()
    woke: list[int] = []
    threads = [threading.Thread(target=lambda i=i: (done.wait(), woke.append(i))) for i in range(4)]
    for t in threads:
        t.start()
    assert not done.is_set() and not woke
    done.set()
    done.set()  # a second set changes nothing
    for t in threads:
        t.join(timeout=10)
    assert done.is_set() and sorted(woke) == [0, 1, 2, 3]
    done.wait()  # set: returns at once
