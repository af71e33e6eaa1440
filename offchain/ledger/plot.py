"""The ledger's figure: cumulative attribution per contributor over the steps, and the attribution graph."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from trainer.ledger.block import Block
from trainer.ledger.graph import attribution_graph, cumulative


def plot(blocks: Sequence[Block], path: Path, labels: Mapping[str, str] | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = dict(labels or {})
    curves = cumulative(blocks)
    names = {d: labels.get(d, d[-6:]) for d in curves}
    fig, (ax, gx) = plt.subplots(1, 2, figsize=(12, 5))
    steps = [b.step for b in blocks]
    for d, ys in curves.items():
        ax.plot(steps, [float(y) for y in ys], marker=".", label=names[d])
    ax.axhline(0, color="grey", lw=0.5)
    ax.set_xlabel("step")
    ax.set_ylabel("cumulative first-order attribution Σ φ")
    ax.set_title("attribution per contributor")
    ax.legend()

    edges = attribution_graph(blocks)
    dids = list(curves)
    angle = {d: 2 * math.pi * i / len(dids) for i, d in enumerate(dids)}
    pos = {d: (math.cos(a), math.sin(a)) for d, a in angle.items()}
    biggest = max((abs(float(w)) for w in edges.values()), default=1.0) or 1.0
    for (a, b), w in edges.items():
        if a == b:
            continue
        (x0, y0), (x1, y1) = pos[a], pos[b]
        colour = "tab:green" if w > 0 else "tab:red"
        gx.annotate(
            "",
            xy=(x1 * 0.85 + x0 * 0.15, y1 * 0.85 + y0 * 0.15),
            xytext=(x0 * 0.85 + x1 * 0.15, y0 * 0.85 + y1 * 0.15),
            arrowprops={"arrowstyle": "->", "color": colour, "lw": 0.5 + 4 * abs(float(w)) / biggest,
                        "connectionstyle": "arc3,rad=0.15"},
        )
    for d, (x, y) in pos.items():
        gx.scatter([x], [y], s=900, color="white", edgecolors="black", zorder=3)
        gx.text(x, y, names[d], ha="center", va="center", fontsize=8, zorder=4)
    gx.set_xlim(-1.4, 1.4)
    gx.set_ylim(-1.4, 1.4)
    gx.set_aspect("equal")
    gx.axis("off")
    gx.set_title("attribution graph (c → later c', width ∝ |Σ φ(c, t)|; green > 0, red < 0)")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path
