"""A ledger run off chain: contributors with different data train the digits MLP, one builder builds
every block, and the ledger goes to the store (docs/ledger.md).

The four kinds of contributor of the issue's demo: `clean` (its own slice of the training set),
`noisy` (another slice, 40% of its labels replaced by keyed random ones), `copy` (the clean
contributor's data, batches drawn with its own seed) and `poison` (a slice whose labels are all
shifted by one). Validation batches come from the held-out test split, one per step, drawn by
the keyed schedule. `run` is the computation end to end, off chain, with real RepOps bits;
`offchain.ledger.agents` runs the same ledger on chain (bonds, commits, reveals, builders' roots, claims).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F

from offchain.ledger.published import PublishedStep, publish
from offchain.store.store import Store
from trainer.data.dataset import Dataset, digits
from trainer.ledger.block import Block, Genesis, PayoutRule
from trainer.ledger.did import did_of
from trainer.ledger.ledger import Ledger, StepInputs, batch_commitment, earlier_batches
from trainer.ledger.programs import LedgerPrograms
from trainer.program import SGDConfig
from trainer.program.models import MLP, MLPConfig
from trainer.program.optim import OptimizerConfig
from trainer.workloads import keyed_init

Tensor = torch.Tensor
KINDS = ("clean", "noisy", "copy", "poison")
# Gaming strategies (docs/ledger.md, section 7): on the clean contributor's data, each commits another
# gradient than its own: zeros, its own with the signs flipped, or a copy of another contributor's gradient
# revealed at the previous step (`strategy_gradient`; zeros at step 1, when nothing is revealed yet).
STRATEGIES = ("zeros", "flipped", "copied")


@dataclass(frozen=True)
class Contributor:
    kind: str
    did: str
    data: Dataset
    seed: int


@dataclass(frozen=True)
class ScenarioConfig:
    steps: int = 24
    batch: int = 32
    validation_batch: int = 128
    seed: int = 1
    chain_id: int = 31337
    optimizer: OptimizerConfig = field(default_factory=lambda: SGDConfig(lr=0.5, momentum=0.5))
    shapley_every: int = 4
    recompute_every: int = 0  # builders recompute about one contribution in this many (0: never)
    kinds: tuple[str, ...] = KINDS
    payout: PayoutRule = field(default_factory=PayoutRule)


@dataclass(frozen=True)
class ScenarioResult:
    head: bytes
    genesis: Genesis
    contributors: tuple[Contributor, ...]
    blocks: tuple[Block, ...]
    final_state: dict[str, Tensor]
    train_seconds: float


def _keyed_labels(seed: int, n: int) -> list[int]:
    out = []
    for i in range(n):
        h = hashlib.sha256(b"NOIS" + seed.to_bytes(32, "big") + i.to_bytes(32, "big")).digest()
        out.append(int.from_bytes(h[:8], "big"))
    return out


def contributors(config: ScenarioConfig, addresses: Sequence[str]) -> tuple[Contributor, ...]:
    """The scenario's contributors on `addresses` (one per kind, in `config.kinds` order)."""
    train = digits("train")
    n = len(train)
    if len(addresses) < len(config.kinds):
        raise ValueError(f"{len(config.kinds)} contributors need {len(config.kinds)} addresses")
    slices = [list(range(k, n, 3)) for k in range(3)]  # three disjoint slices
    out = []
    for i, kind in enumerate(config.kinds):
        if kind in ("clean", "copy", *STRATEGIES):
            rows = [train.examples[j] for j in slices[0]]
        elif kind == "noisy":
            noise = _keyed_labels(config.seed, len(slices[1]))
            rows = []
            for r, j in enumerate(slices[1]):
                ex = train.examples[j]
                y = ex["y"] if noise[r] % 10 >= 4 else torch.tensor(noise[r] // 10 % 10)
                rows.append({"x": ex["x"], "y": y.to(torch.int64)})
        elif kind == "poison":
            rows = [{"x": train.examples[j]["x"], "y": (train.examples[j]["y"] + 1) % 10} for j in slices[2]]
        else:
            raise ValueError(f"unknown contributor kind {kind!r}; known: {', '.join(KINDS + STRATEGIES)}")
        out.append(Contributor(kind, did_of(config.chain_id, addresses[i]), Dataset(f"{kind}", rows), 100 + i))
    return tuple(out)


def strategy_gradient(
    kind: str, previous: Callable[[int], Mapping[str, Tensor] | None] | None = None
) -> Callable[[int, Mapping[str, Tensor]], Mapping[str, Tensor]] | None:
    """The gradient a contributor of `kind` commits at step t instead of its own `g` (None: its own).
    `previous(t)` is the gradient the copied contributor revealed at step t - 1 (None if none)."""
    if kind not in STRATEGIES:
        return None
    if kind == "zeros":
        return lambda t, g: {k: torch.zeros_like(v) for k, v in g.items()}
    if kind == "flipped":
        return lambda t, g: {k: -v for k, v in g.items()}
    if previous is None:
        raise ValueError("a copied gradient needs the gradient it copies (previous)")

    def copied(t: int, g: Mapping[str, Tensor]) -> Mapping[str, Tensor]:
        theirs = previous(t)
        return {k: torch.zeros_like(v) for k, v in g.items()} if theirs is None else dict(theirs)

    return copied


def validation_batches(config: ScenarioConfig) -> list[dict[str, Tensor]]:
    """The client's validation batches of steps 1 .. T, from the held-out test split."""
    test = digits("test")
    return [test.batch(config.seed, t, config.validation_batch) for t in range(1, config.steps + 1)]


def programs(config: ScenarioConfig, n: int) -> tuple[LedgerPrograms, dict[str, Tensor], list[dict[str, Tensor]]]:
    torch.manual_seed(0)  # the module's throwaway default init only; the state is keyed
    model = MLP(MLPConfig())
    validation = validation_batches(config)
    example = digits("train").batch(config.seed, 0, config.batch)
    lp = LedgerPrograms(model, F.cross_entropy, config.optimizer, n, example, validation[0])
    state = lp.model_state()
    from trainer.program import build_step

    keyed = keyed_init(build_step(model, F.cross_entropy, config.optimizer), config.seed)
    state.update({k: v for k, v in keyed.items() if k.startswith("param/")})
    return lp, state, validation


@dataclass(frozen=True)
class Setup:
    """Everything the scenario's ledger starts from: its contributors, programs, initial state, validation
    batches (the client's, secret until revealed step by step) and genesis."""

    contributors: tuple[Contributor, ...]
    programs: LedgerPrograms
    initial_state: dict[str, Tensor]
    validation: list[dict[str, Tensor]]
    genesis: Genesis


def setup(config: ScenarioConfig, addresses: Sequence[str]) -> Setup:
    """The scenario's ledger before step 1 (what `run` trains off chain and the chain agents post)."""
    people = contributors(config, addresses)
    lp, state0, validation = programs(config, len(people))
    genesis = Ledger.create_genesis(
        lp,
        chain_id=config.chain_id,
        name="digits-mlp-ledger",
        initial_state=state0,
        validation_commitments=[batch_commitment(v) for v in validation],
        shapley_every=config.shapley_every,
        recompute_every=config.recompute_every,
        payout=config.payout,
    )
    return Setup(people, lp, state0, validation, genesis)


def run(
    store: Store,
    config: ScenarioConfig | None = None,
    addresses: Sequence[str] | None = None,
    *,
    progress: Callable[[Block], None] | None = None,
    tamper: Callable[[int, Mapping[str, Tensor]], Mapping[str, Tensor]] | None = None,
) -> ScenarioResult:
    """Train the scenario's ledger and publish it to `store`."""
    import time

    config = config or ScenarioConfig()
    addresses = addresses or [f"0x{0x1000 + i:040x}" for i in range(len(config.kinds))]
    s = setup(config, addresses)
    people, lp, state0, validation, genesis = s.contributors, s.programs, s.initial_state, s.validation, s.genesis
    ledger = Ledger(lp, genesis)
    start = time.perf_counter()
    state, parent = state0, genesis.model_id
    published: list[PublishedStep] = []
    for t in range(1, config.steps + 1):
        cs = [ledger.contribute(p.did, state, [p.data.batch(p.seed, t, config.batch)]) for p in people]
        inputs = StepInputs(cs, validation[t - 1])
        built = ledger.build(t, parent, state, inputs, earlier_batches(p.block for p in published))
        published.append(PublishedStep(inputs, built.block))
        state, parent = built.state, built.block.hash
        if tamper is not None:
            state = dict(tamper(t, state))
        if progress is not None:
            progress(built.block)
    seconds = time.perf_counter() - start
    head = publish(store, genesis, lp.pair, state0, validation, published)
    return ScenarioResult(head, genesis, people, tuple(p.block for p in published), state, seconds)
