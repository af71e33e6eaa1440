"""Capture's graph pass that turns in-place ATen calls into pure ones, and refuses randomness.

make_fx with torch's core decompositions keeps a few in-place calls: decompositions written
with `mul_`/`add_`/`copy_` into fresh tensors (BCE-with-logits, SiLU's backward, group norm's
backward), `num_batches_tracked.add_(1)`, and `native_batch_norm` in training mode, which
updates its running statistics in place although its schema does not say so. A program is
pure dataflow, so each is rewritten to its out-of-place overload and every later reader of the
mutated tensor reads the new value instead:

- `op_(a, ...)` becomes `op(a, ...)`; `copy_(dst, src)` becomes a fresh copy of `src` with
  dst's shape and dtype; `native_batch_norm(..., running_mean, running_var, training=True, ...)`
  becomes `_native_batch_norm_legit_functional`, whose outputs 3 and 4 are the new statistics.
- The rewrite is refused (CaptureError) when it could change a value: the mutated tensor is a
  step input (the step may not change its state in place), or another view of the same storage
  is read after the mutation.

Operators tagged `nondeterministic_seeded` (rand, randn, bernoulli, dropout's mask, ...) are
refused: a step's randomness must come from its batch (see `trainer.program.dropout`).
"""

from __future__ import annotations

import operator
import os
import re
from collections.abc import Callable

import torch
from torch import fx

from trainer.program.errors import CaptureError

_BN = torch.ops.aten.native_batch_norm.default
_BN_FUNCTIONAL = torch.ops.aten._native_batch_norm_legit_functional.default
_COPY_ = torch.ops.aten.copy_.default
_EMPTY = (torch.ops.aten.empty_permuted.default, torch.ops.aten.empty.memory_format, torch.ops.aten.empty_like.default)

RANDOM_HINT = (
    "a training step may not draw random numbers (every honest trainer must compute the same bits); "
    "pass randomness in the batch instead: use trainer.program.KeyedDropout for dropout, whose mask "
    "trainer.program.dropout_masks draws from (seed, step, module) with the keyed generator"
)


Where = Callable[[fx.Node], str]


def stack_where(node: fx.Node) -> str:
    """The user's source line that made `node`: the last frame of its recorded stack outside torch
    (capture passes its own, better locator; this one serves direct callers)."""
    trace_text = node.meta.get("stack_trace") or ""
    frames = re.findall(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)', trace_text)
    if not frames:
        return "an unknown place"
    own = [f for f in frames if f"{os.sep}torch{os.sep}" not in f[0]]
    path, line, fn, code = (own or frames)[-1]
    return f"{path}:{line} in {fn}: {code.strip()}"


def _overload(n: fx.Node) -> torch._ops.OpOverload | None:
    return n.target if n.op == "call_function" and isinstance(n.target, torch._ops.OpOverload) else None


def _writes_first(op: torch._ops.OpOverload) -> bool:
    args = op._schema.arguments
    return bool(args) and args[0].alias_info is not None and args[0].alias_info.is_write


def _returns_alias(op: torch._ops.OpOverload) -> bool:
    rets = op._schema.returns
    return bool(rets) and rets[0].alias_info is not None


def _functional_of(op: torch._ops.OpOverload) -> torch._ops.OpOverload | None:
    name = op._schema.name.split("::")[-1]
    if not name.endswith("_"):
        return None
    packet = getattr(torch.ops.aten, name[:-1], None)
    if packet is None:
        return None
    return getattr(packet, op._overloadname or "default", None)


def refuse_random(graph: fx.Graph, where: Where = stack_where) -> None:
    """CaptureError naming the first random operator and the user's line that called it."""
    for n in graph.nodes:
        op = _overload(n)
        if op is not None and torch.Tag.nondeterministic_seeded in op.tags:
            raise CaptureError(f"{op} at {where(n)}: {RANDOM_HINT}")


def remove_mutations(graph: fx.Graph, where: Where = stack_where) -> None:
    """Rewrite every in-place call of `graph` to a pure one (see the module docstring); `where`
    names a node's source line in errors."""
    nodes = list(graph.nodes)
    pos = {n: i for i, n in enumerate(nodes)}
    storage: dict[fx.Node, fx.Node] = {}
    inputs = {n for n in nodes if n.op in ("placeholder", "get_attr")}

    def base(n: fx.Node) -> fx.Node:
        return storage.get(n, n)

    def read_later(node: fx.Node, after: int) -> bool:
        return any(pos.get(u, -1) > after for u in node.users)

    def check_mutation(target: fx.Node, at: fx.Node, op: object) -> None:
        s = base(target)
        if s in inputs:
            raise CaptureError(
                f"{op} at {where(at)} changes the step's input {s.target!r} in place; a step returns new values "
                "instead of changing its inputs"
            )
        aliases = [m for m, b in storage.items() if b is s and m is not target] + ([s] if s is not target else [])
        if any(read_later(m, pos[at]) for m in aliases):
            raise CaptureError(
                f"{op} at {where(at)} changes a tensor in place while another view of it is read later; "
                "capture cannot make that pure (write the step without the in-place call)"
            )

    def redirect(old: fx.Node, new: fx.Node, after: int) -> None:
        for u in list(old.users):
            if pos.get(u, -1) > after:
                u.replace_input_with(old, new)

    for n in nodes:
        op = _overload(n)
        if n.op == "call_function" and op is None and n.args and isinstance(n.args[0], fx.Node):
            src = n.args[0]  # getitem: a slot of a multi-output view op (split) shares its storage
            src_op = _overload(src)
            if src_op is not None and _returns_alias(src_op):
                storage[n] = base(src)
            continue
        if op is None:
            continue
        if op in _EMPTY:
            n = _zeros_for_empty(graph, n, where)
            continue
        if op is _BN and n.args[5] and (n.args[3] is not None or n.args[4] is not None):
            _rewrite_batch_norm(graph, n, pos, check_mutation, redirect, where)
            continue
        if not _writes_first(op):
            if _returns_alias(op) and n.args and isinstance(n.args[0], fx.Node):
                storage[n] = base(n.args[0])
            continue
        target = n.args[0]
        assert isinstance(target, fx.Node)
        if op is _COPY_:
            check_mutation(target, n, op)
            new = _fresh_copy(graph, n, target, n.args[1], where)
        else:
            functional = _functional_of(op)
            if functional is None:
                raise CaptureError(f"{op} at {where(n)} changes a tensor in place and has no out-of-place form")
            view_op = _returns_alias(functional)
            if not view_op:
                check_mutation(target, n, op)
            with graph.inserting_before(n):
                new = graph.call_function(functional, n.args, n.kwargs)
            new.meta = dict(n.meta)
            if view_op:
                storage[new] = base(target)
        pos[new] = pos[n]
        redirect(target, new, pos[n])
        n.replace_all_uses_with(new)
        graph.erase_node(n)


def _zeros_for_empty(graph: fx.Graph, n: fx.Node, where: Where) -> fx.Node:
    """An uninitialised tensor (its readers use only its shape, or overwrite it) as zeros."""
    val = n.meta.get("val")
    if val is None:
        raise CaptureError(f"{n.target} at {where(n)} has no traced value")
    with graph.inserting_before(n):
        new = graph.call_function(torch.ops.aten.full.default, (list(val.shape), 0), {"dtype": val.dtype})
    new.meta = dict(n.meta)
    n.replace_all_uses_with(new)
    graph.erase_node(n)
    return new


def _fresh_copy(graph: fx.Graph, n: fx.Node, dst: fx.Node, src: object, where: Where) -> fx.Node:
    """The value `copy_(dst, src)` leaves in dst, as a new tensor: src broadcast to dst's shape
    and converted to dst's dtype."""
    dval, sval = dst.meta.get("val"), src.meta.get("val") if isinstance(src, fx.Node) else None
    if not isinstance(src, fx.Node) or dval is None or sval is None:
        raise CaptureError(f"aten.copy_ at {where(n)}: source or destination is not a traced tensor")
    with graph.inserting_before(n):
        cur = src
        if tuple(sval.shape) != tuple(dval.shape):
            cur = graph.call_function(torch.ops.aten.expand.default, (cur, list(dval.shape)))
            cur.meta = {**n.meta, "val": sval.expand(dval.shape)}
        if sval.dtype != dval.dtype:
            new = graph.call_function(torch.ops.aten._to_copy.default, (cur,), {"dtype": dval.dtype})
        else:
            new = graph.call_function(torch.ops.aten.clone.default, (cur,))
    new.meta = dict(n.meta)
    return new


def _rewrite_batch_norm(
    graph: fx.Graph,
    n: fx.Node,
    pos: dict[fx.Node, int],
    check_mutation: Callable[[fx.Node, fx.Node, object], None],
    redirect: Callable[[fx.Node, fx.Node, int], None],
    where: Where,
) -> None:
    """native_batch_norm(training=True) with running statistics -> the functional overload;
    later readers of running_mean / running_var read its outputs 3 / 4."""
    rm, rv = n.args[3], n.args[4]
    if not isinstance(rm, fx.Node) or not isinstance(rv, fx.Node):
        raise CaptureError(f"{n.target} at {where(n)}: training batch norm needs both running_mean and running_var")
    check_mutation(rm, n, n.target)
    check_mutation(rv, n, n.target)
    with graph.inserting_before(n):
        new = graph.call_function(_BN_FUNCTIONAL, n.args, n.kwargs)
        new.meta = {**n.meta, "val": (*n.meta["val"], rm.meta["val"], rv.meta["val"])}
        slots = []
        for k, stat in ((3, rm), (4, rv)):
            g = graph.call_function(operator.getitem, (new, k))
            g.meta = {**n.meta, "val": stat.meta["val"]}
            slots.append(g)
    for m in (new, *slots):
        pos[m] = pos[n]
    redirect(rm, slots[0], pos[n])
    redirect(rv, slots[1], pos[n])
    n.replace_all_uses_with(new)
    graph.erase_node(n)
