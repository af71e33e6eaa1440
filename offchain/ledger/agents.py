"""The training ledger on chain: the client, contributors and block builders of a TrainingLedger
(docs/ledger.md), each an agent of ticks driven by the chain's clock.

The computation is `trainer.ledger`'s; this module moves its inputs and outputs between the chain
and the public store:

- **the client** (`LedgerClientAgent`) publishes the genesis (as the blob `"RGEN" || cbor`, whose
  SHA-256 key is the model id itself), both programs and the initial state, posts the ledger with
  the model id, the validation root and the pool, and in each step's reveal window publishes that
  step's validation batch and reveals its commitment with its opening of the validation root; after
  the settle window it takes back a pool nobody may be paid from (`refund`).
- **a contributor** (`ContributorAgent`) bonds; in each step's commit window it computes its
  gradient with `Ledger.contribute` at the ledger's state θ_{t-1} and commits; once the step's
  validation batch is revealed it publishes its gradient, its batches and its **contribution
  record** `cbor({format, nonce, batches: [state roots], gradient})`, and reveals with
  `salt = SHA-256(record)`, the record's store key (the random nonce keeps the commit hiding), so a
  builder finds the record from the reveal alone and checks it against the revealed commitments.
  At the end it builds the payout tree itself, checks it is the one on chain, claims its leaf and
  withdraws its bond.
- **a builder** (`BuilderAgent`) bonds; after each step's reveal deadline it builds block t with
  `Ledger.build` from the revealed contributions (data from the store; a contribution whose data
  is missing or does not match its commitments is refused as unavailable) and the revealed
  validation batch, and publishes it (`"RBLK" || cbor`, key = block hash); after each interval it
  posts the interval's block root; once every interval is agreed it computes the integer shares
  (`trainer.ledger.shares.tree_shares`) and the Merkle-sum payout tree, publishes the tree and the
  ledger's head (`offchain.ledger.published`, so `refereed ledger show|verify-replay` read it),
  posts the payout root and pulls its fee.

Every party that needs θ_{t-1} builds the blocks itself (`LedgerFollower`): everything a block
depends on is public once the step's reveal deadline passed. Decisions are read from the chain on
every tick; `offchain.agents.devnet.Devnet` runs them together and moves anvil's clock to the next
window when every agent waits.
"""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from offchain.agents.base import BUSY, DONE, PrintObserver, Tick, idle
from offchain.chain._files import write_json_atomically
from offchain.chain.client import ChainClient, Receipt
from offchain.contracts.training_ledger import (
    LedgerParams,
    LedgerView,
    TrainingLedgerClient,
    commit_hash,
    validation_opening,
)
from offchain.errors import OffchainError
from offchain.ledger.published import PublishedStep, publish
from offchain.store import STATE, MissingObjectError, Store
from trainer.commit.merkle import leaf_hash, root
from trainer.commit.records import encode_record
from trainer.ledger.block import BLOCK_TAG, GENESIS_TAG, Block, Genesis, interval_root
from trainer.ledger.did import did_of
from trainer.ledger.encoding import dumps, loads
from trainer.ledger.errors import BlockError
from trainer.ledger.ledger import (
    Contribution,
    Ledger,
    StepInputs,
    batch_commitment,
    earlier_batches,
    validation_root,
)
from trainer.ledger.payout import PayoutTree, build_tree, leaves_from_shares
from trainer.ledger.programs import ProgramPair
from trainer.ledger.shares import builder_fee, tree_shares

Tensor = torch.Tensor
RECORD_FORMAT = 1
TREE_TAG = b"RPAY"


class LedgerChainError(OffchainError):
    """The ledger on chain and the data in the store do not fit together (a genesis that is not the
    model id's, a payout root that is not the tree of the blocks, ...)."""


# -- the store side ---------------------------------------------------------------------------------


def publish_genesis(store: Store, genesis: Genesis) -> bytes:
    """Put the genesis as `"RGEN" || cbor`: its store key is its hash, the model id."""
    key = store.put_blob(GENESIS_TAG + genesis.encode())
    assert key == genesis.model_id
    return key


def fetch_genesis(store: Store, model_id: bytes) -> Genesis:
    data = store.get_blob(model_id)
    if not data.startswith(GENESIS_TAG):
        raise LedgerChainError(f"the store's object 0x{model_id.hex()} is not a genesis record")
    return Genesis.decode(data[len(GENESIS_TAG) :])


def publish_block(store: Store, block: Block) -> bytes:
    """Put a block as `"RBLK" || cbor`: its store key is its block hash."""
    return store.put_blob(BLOCK_TAG + block.encode())


def contribution_record(batch_roots: Sequence[bytes], gradient_commitment: bytes, nonce: bytes) -> bytes:
    return dumps(
        {"format": RECORD_FORMAT, "nonce": nonce, "batches": list(batch_roots), "gradient": gradient_commitment}
    )


def batches_root(batch_roots: Sequence[bytes]) -> bytes:
    """`batches_commitment` from the micro-batches' state roots."""
    return root([leaf_hash(encode_record(b"CBAT", [i, r])) for i, r in enumerate(batch_roots)])


def tree_record(ledger_id: int, tree: PayoutTree) -> bytes:
    return TREE_TAG + dumps(
        {
            "format": RECORD_FORMAT,
            "ledger": ledger_id,
            "leaves": [[leaf.account, leaf.amount] for leaf in tree.leaves],
            "root": tree.root,
        }
    )


def payout_tree(view: LedgerView, genesis: Genesis, blocks: Sequence[Block], chain_id: int) -> PayoutTree:
    """The payout tree of a ledger's blocks: the genesis rule's shares of the pool, less the builders' part
    (which the contract pays as its builder fee); LedgerChainError if the ledger's fee is not that part."""
    fee = builder_fee(view.pool, genesis.payout)
    if fee != view.params.builder_fee:
        raise LedgerChainError(
            f"the ledger's builder fee is {view.params.builder_fee} wei, the genesis rule gives {fee} "
            f"({genesis.payout.builder_bps} bps of {view.pool}): the payout tree cannot sum to pool - fee"
        )
    shares = tree_shares(view.pool, genesis.payout, blocks, did_of(chain_id, view.client))
    return build_tree(leaves_from_shares(shares, chain_id))


# -- following a ledger ------------------------------------------------------------------------------


@dataclass
class LedgerFollower:
    """Builds a ledger's blocks from the chain and the store, step by step as reveal deadlines pass.

    `tamper`, for tests and the demo only, rewrites each block before it is kept (a builder that
    misattributes); the chain then continues from the tampered block's hash."""

    lc: TrainingLedgerClient
    store: Store
    ledger_id: int
    tamper: Callable[[Block], Block] | None = None
    genesis: Genesis = field(init=False)
    ledger: Ledger = field(init=False)
    initial_state: dict[str, Tensor] = field(init=False)
    state: dict[str, Tensor] = field(init=False)
    blocks: list[Block] = field(default_factory=list)
    steps: list[PublishedStep] = field(default_factory=list)
    validation: list[dict[str, Tensor]] = field(default_factory=list)
    stalled: str | None = None
    _ready: bool = False

    def load(self, view: LedgerView) -> None:
        if self._ready:
            return
        self.genesis = fetch_genesis(self.store, view.params.genesis)
        g = self.genesis
        if g.validation_root != view.params.validation_root or g.steps != view.params.steps:
            raise LedgerChainError("the ledger's validation root or step count is not its genesis'")
        if view.params.max_contributors != g.max_contributors:
            raise LedgerChainError(
                f"the ledger takes {view.params.max_contributors} contributions a step, its genesis' block program "
                f"{g.max_contributors}: its blocks could not be built"
            )
        if g.chain_id != self.lc.chain.chain_id:
            raise LedgerChainError(f"the genesis is for chain {g.chain_id}, the ledger is on {self.lc.chain.chain_id}")
        programs = ProgramPair(self.store.get_program(g.gradient_program), self.store.get_program(g.block_program))
        self.ledger = Ledger(programs, g)
        self.initial_state = self.store.get_state(g.initial_root)
        self.state = dict(self.initial_state)
        self._ready = True

    @property
    def batch_size(self) -> int:
        """Examples per batch the ledger's gradient program takes (its input `x`'s leading axis)."""
        x = next(i for i in self.ledger.programs.gradient.inputs if i.name == "x")
        return int(x.type.shape[0])

    def revealed_gradient(self, step: int, did: str) -> dict[str, Tensor] | None:
        """The gradient `did` revealed at `step` (a built step), or None if it did not or it was refused."""
        if not 1 <= step <= len(self.steps):
            return None
        for c in self.steps[step - 1].inputs.contributions:
            if c.did == did and c.gradients is not None:
                return dict(c.gradients)
        return None

    @property
    def head(self) -> bytes:
        """The hash of the last block (the model id before block 1)."""
        return self.blocks[-1].hash if self.blocks else self.genesis.model_id

    def advance(self, view: LedgerView, now: int) -> int:
        """Build every block whose step's reveal deadline has passed; how many were built."""
        self.load(view)
        built = 0
        while self.stalled is None and len(self.blocks) < view.params.steps:
            t = len(self.blocks) + 1
            _, _, rd = view.step_window(t)
            if now < rd:
                break
            self._build(t)
            built += 1
        return built

    def _build(self, t: int) -> None:
        lid = self.ledger_id
        vc = self.lc.validation_commitment(lid, t)
        if vc is None:  # nobody could reveal, and no block can be built: the pool goes back by refund
            self.stalled = f"the client never revealed validation batch {t}"
            return
        try:
            validation = self.store.get_state(vc)
        except MissingObjectError:
            self.stalled = f"validation batch {t} (0x{vc.hex()[:16]}) is not in the store"
            return
        draw = self.lc.validation_draw(lid, t)
        if draw is None:  # pragma: no cover - the commitment above came with its event
            self.stalled = f"validation batch {t} has no ValidationRevealed event"
            return
        reveals = self.lc.reveals(lid, t)
        chain_id = self.lc.chain.chain_id
        g = self.ledger.genesis
        contributions = [
            self._contribution(r, g.recompute_due(t, draw, did_of(chain_id, r.contributor))) for r in reveals
        ]
        revealed = {r.contributor for r in reveals}  # both checksummed by the client
        unrevealed = [did_of(chain_id, a) for a in self.lc.committers(lid, t) if a not in revealed]
        inputs = StepInputs(contributions, validation, unrevealed, draw)
        built = self.ledger.build(t, self.head, self.state, inputs, earlier_batches(self.blocks))
        block = built.block if self.tamper is None else self.tamper(built.block)
        self.blocks.append(block)
        self.steps.append(PublishedStep(inputs, block))
        self.validation.append(validation)
        self.state = built.state

    def _contribution(self, r: Any, drawn: bool) -> Contribution:
        """A revealed contribution with its data from the store, or unavailable (gradients None); its batches
        are read only when it is `drawn` for recomputation (nothing else needs them)."""
        did = did_of(self.lc.chain.chain_id, r.contributor)
        missing = Contribution(did, r.batch_commitment, r.gradient_commitment, 1, None)
        try:
            record = loads(self.store.get_blob(r.salt))
            batches = [bytes(b) for b in record["batches"]]
            if record.get("format") != RECORD_FORMAT or bytes(record["gradient"]) != r.gradient_commitment:
                return missing
        except (MissingObjectError, BlockError, KeyError, TypeError, ValueError):
            return missing  # no record, or one nobody can read: the data is unavailable
        if not batches or batches_root(batches) != r.batch_commitment:
            return missing
        if not all(self.store.has(STATE, b) for b in batches):
            return Contribution(did, r.batch_commitment, r.gradient_commitment, len(batches), None)
        try:
            grads: dict[str, Tensor] | None = self.store.get_state(r.gradient_commitment)
            data = tuple(self.store.get_state(b) for b in batches) if drawn else None  # to recompute it from
        except MissingObjectError:
            grads, data = None, None
        return Contribution(did, r.batch_commitment, r.gradient_commitment, len(batches), grads, data)


# -- agents --------------------------------------------------------------------------------------


class _Quiet:
    def event(self, agent: str, message: str) -> None:
        pass

    def progress(self, agent: str, task_id: int, done: int, total: int, loss: float | None) -> None:
        pass


class _LedgerAgent:
    """What the ledger agents share: a key, the ledger's client, the store, an observer. Duck-typed like
    `offchain.agents.base.Agent` for `Devnet` (`name`, `role`, `tick()`)."""

    role = "ledger"

    def __init__(
        self, name: str, chain: ChainClient, lc: TrainingLedgerClient, store: Store, observer: Any | None = None
    ) -> None:
        self.name = name
        self.chain = chain
        self.lc = lc.connect(chain) if lc.chain is not chain else lc
        self.store = store
        self.observer = observer or PrintObserver()
        self.receipts: list[Receipt] = []

    @property
    def address(self) -> str:
        return self.chain.address

    @property
    def did(self) -> str:
        return did_of(self.chain.chain_id, self.address)

    def say(self, message: str) -> None:
        self.observer.event(self.name, message)

    def now(self) -> int:
        return int(self.chain.read(lambda: self.chain.w3.eth.get_block("latest")["timestamp"], "eth_getBlock"))

    def _sent(self, receipt: Receipt) -> Tick:
        self.receipts.append(receipt)
        return BUSY

    def close(self) -> None:
        pass

    finished = False  # the last tick said DONE: nothing left to do on this ledger

    def tick(self) -> Tick:
        t = self._tick()
        self.finished = t.done
        return t

    def _tick(self) -> Tick:
        raise NotImplementedError


class LedgerClientAgent(_LedgerAgent):
    """Posts a ledger and reveals its validation batches, one per step, after each commit deadline."""

    role = "ledger client"

    def __init__(
        self,
        name: str,
        chain: ChainClient,
        lc: TrainingLedgerClient,
        store: Store,
        *,
        validation: Sequence[Mapping[str, Tensor]],
        genesis: Genesis | None = None,
        programs: ProgramPair | None = None,
        initial_state: Mapping[str, Tensor] | None = None,
        ledger_id: int | None = None,
        observer: Any | None = None,
        sweep: bool = False,
        reveal: bool = True,
    ) -> None:
        """`genesis`, `programs` and `initial_state` are needed to `post`; a client that resumes an
        existing ledger (`ledger_id`) needs only its validation batches. `reveal=False` (tests) never
        reveals a validation batch."""
        super().__init__(name, chain, lc, store, observer)
        self.reveal = reveal
        self.genesis = genesis
        self.programs = programs
        self.initial_state = None if initial_state is None else dict(initial_state)
        self.validation = [dict(v) for v in validation]
        self.commitments = [batch_commitment(v) for v in self.validation]
        self.sweep = sweep  # after the claim window, take back what was not claimed
        self.ledger_id = ledger_id
        if ledger_id is not None:
            root = self.lc.ledger(ledger_id).params.validation_root
            if validation_root(self.commitments) != root:
                raise LedgerChainError(f"these validation batches are not ledger {ledger_id}'s (its validation root)")

    def params(self, pool: int, **windows: int) -> LedgerParams:
        """The ledger's parameters: the genesis' model id, validation root, steps and contribution limit, the
        builder fee of the genesis payout rule; windows, quorum and bonds from `windows` (defaults below)."""
        g = self.genesis
        if g is None:
            raise LedgerChainError("a client posts a ledger from its genesis")
        kw = {
            "interval_steps": 1,
            "commit_window": 600,
            "reveal_window": 600,
            "quorum": 2,
            "settle_window": 3600,
            "claim_window": 3600,
            "contributor_bond": 10**16,
            "builder_bond": 10**17,
        }
        unknown = set(windows) - set(kw)
        if unknown:
            raise TypeError(f"unknown ledger parameters {sorted(unknown)}")
        kw.update(windows)
        return LedgerParams(
            genesis=g.model_id,
            validation_root=g.validation_root,
            steps=g.steps,
            max_contributors=g.max_contributors,
            builder_fee=builder_fee(pool, g.payout),  # type: ignore[arg-type]
            **kw,  # type: ignore[arg-type]
        )

    def post(self, pool: int, **windows: int) -> int:
        """Publish the genesis, programs and initial state, then post the ledger escrowing `pool` wei."""
        store = self.store
        if self.genesis is None or self.programs is None or self.initial_state is None:
            raise LedgerChainError("a client posts a ledger from its genesis, programs and initial state")
        publish_genesis(store, self.genesis)
        store.put_program(self.programs.gradient)
        store.put_program(self.programs.block)
        if store.put_state(self.initial_state) != self.genesis.initial_root:
            raise LedgerChainError("the initial state is not the genesis' initial state (its root differs)")
        lid = self.lc.post_ledger(self.params(pool, **windows), pool)
        self.ledger_id = lid
        self.say(f"posted ledger {lid} (model 0x{self.genesis.model_id.hex()[:16]}) with a pool of {pool} wei")
        return lid

    def _tick(self) -> Tick:
        if self.ledger_id is None:
            raise LedgerChainError("post the ledger first (LedgerClientAgent.post)")
        lid, view, now = self.ledger_id, self.lc.ledger(self.ledger_id), self.now()
        if view.refunded:
            return DONE
        waits = []
        for t in range(1, view.params.steps + 1):
            _, cd, rd = view.step_window(t)
            if now < cd:
                waits.append(cd)
                break
            if self.reveal and now < rd and self.lc.validation_commitment(lid, t) is None:
                c = self.commitments[t - 1]
                if self.store.put_state(self.validation[t - 1]) != c:  # pragma: no cover - a state root is its key
                    raise LedgerChainError(f"validation batch {t} does not have its commitment")
                self.say(f"step {t}: revealing validation batch 0x{c.hex()[:16]}")
                return self._sent(self.lc.reveal_validation(lid, t, c, validation_opening(self.commitments, t)))
        if now < view.settle_time:  # a payout root may be agreed, or frozen, until then
            waits.append(view.settle_time)
            return idle(min(waits))
        if not view.has_payout or view.frozen:
            if view.frozen:
                self.say("the builders disagree (the ledger is frozen): taking the pool back")
            else:
                self.say("no payout root by the end of the settle window: taking the pool back")
            return self._sent(self.lc.refund(lid))
        if not self.sweep:
            return DONE
        due = view.settle_time + view.params.claim_window
        if now < due:
            return idle(due)
        if view.paid < view.pool:
            self.say(f"claims closed: taking back the {view.pool - view.paid} wei nobody claimed")
            return self._sent(self.lc.refund(lid))
        return DONE


class _Follows(_LedgerAgent):
    """An agent that follows a ledger's blocks (contributors and builders)."""

    BUILDER = False

    def __init__(
        self,
        name: str,
        chain: ChainClient,
        lc: TrainingLedgerClient,
        store: Store,
        ledger_id: int,
        observer: Any | None = None,
        tamper: Callable[[Block], Block] | None = None,
        follower: LedgerFollower | None = None,
    ) -> None:
        """`follower`: a follower of the same ledger to share (agents in one process that would build the
        same blocks build them once); a tampering agent builds its own."""
        super().__init__(name, chain, lc, store, observer)
        self.ledger_id = ledger_id
        if follower is not None and (follower.ledger_id != ledger_id or tamper is not None):
            raise LedgerChainError("a shared follower follows the same ledger, and a tampering agent builds its own")
        self.follower = follower or LedgerFollower(self.lc, store, ledger_id, tamper)
        self.withdrawn = False
        self._said_stalled = False

    def _bond_or_follow(self, view: LedgerView, now: int) -> Tick | None:
        if not self.withdrawn and self.lc.bond_of(self.ledger_id, self.address) == 0:
            if self.lc.events("Bonded", {"id": self.ledger_id, "who": self.address}):
                self.withdrawn = True  # bonded, and withdrew already (a restarted agent): it goes on
            elif now >= view.end_time:
                return DONE
            else:
                role = "builder" if self.BUILDER else "contributor"
                self.say(f"bonding as a {role}")
                return self._sent(self.lc.bond(self.ledger_id, self.BUILDER))
        built = self.follower.advance(view, now)
        for b in self.follower.blocks[len(self.follower.blocks) - built :] if built else []:
            self.say(f"block {b.step}: model root 0x{b.model_root.hex()[:16]}, {len(b.contributors)} contributors")
        if self.follower.stalled and not self._said_stalled:
            self._said_stalled = True
            self.say(f"the ledger cannot go on: {self.follower.stalled}")
        return None

    def _withdraw(self, view: LedgerView, now: int) -> Tick:
        if now < view.end_time:
            return idle(view.end_time)
        if not self.withdrawn and self.lc.bond_of(self.ledger_id, self.address) != 0:
            self.say("withdrawing the bond")
            tick = self._sent(self.lc.withdraw_bond(self.ledger_id))
            self.withdrawn = True
            return tick
        return DONE


@dataclass
class _Pending:
    contribution: Contribution
    batches: list[dict[str, Tensor]]
    record: bytes
    salt: bytes


class ContributorAgent(_Follows):
    """Commits and reveals its gradient at every step, then claims its share (module docstring)."""

    role = "contributor"

    def __init__(
        self,
        name: str,
        chain: ChainClient,
        lc: TrainingLedgerClient,
        store: Store,
        ledger_id: int,
        *,
        batches: Callable[[int], Sequence[Mapping[str, Tensor]]],
        observer: Any | None = None,
        gradient: Callable[[int, Mapping[str, Tensor]], Mapping[str, Tensor]] | None = None,
        journal: Path | None = None,
        publish: bool = True,
        follower: LedgerFollower | None = None,
    ) -> None:
        super().__init__(name, chain, lc, store, ledger_id, observer, follower=follower)
        self.publish = publish  # tests: False reveals without publishing the data (builders refuse it)
        self.batches = batches  # step t -> this contributor's batches for step t
        self.gradient = gradient  # tests: rewrite the gradient before committing (a cheat)
        self.pending: dict[int, _Pending] = {}
        self.claimed_amount: int | None = None
        self.journal = journal  # where the nonces of committed contributions are kept (to reveal after a restart)

    def _nonces(self) -> dict[str, str]:
        if self.journal is None or not self.journal.exists():
            return {}
        return dict(json.loads(self.journal.read_text(encoding="utf-8")).get("nonces", {}))

    def _remember(self, t: int, nonce: bytes) -> None:
        if self.journal is None:
            return
        data = json.loads(self.journal.read_text(encoding="utf-8")) if self.journal.exists() else {}
        data.setdefault("nonces", {})[str(t)] = nonce.hex()
        write_json_atomically(self.journal, data, indent=2)

    def _contribute(self, t: int, nonce: bytes | None = None) -> _Pending:
        """Step t's contribution at the follower's state θ_{t-1} (the same bits when recomputed)."""
        f = self.follower
        batches = [dict(b) for b in self.batches(t)]
        for b in batches:
            if "x" in b and int(b["x"].shape[0]) != f.batch_size:
                raise LedgerChainError(
                    f"a batch of {int(b['x'].shape[0])} examples: the ledger's gradient program takes {f.batch_size}"
                )
        c = f.ledger.contribute(self.did, f.state, batches)
        if self.gradient is not None:
            grads = dict(self.gradient(t, dict(c.gradients or {})))
            c = Contribution.of(self.did, batches, grads)
        roots = [batch_commitment(b) for b in batches]
        nonce = secrets.token_bytes(32) if nonce is None else nonce
        record = contribution_record(roots, c.gradient_commitment, nonce)
        return _Pending(c, batches, record, hashlib.sha256(record).digest())

    def _recover(self, t: int) -> _Pending | None:
        """Step t's contribution from the journal's nonce, recomputed at θ_{t-1} (after a restart)."""
        nonce = self._nonces().get(str(t))
        if nonce is None or len(self.follower.blocks) != t - 1:
            return None
        return self._contribute(t, bytes.fromhex(nonce))

    def _tick(self) -> Tick:
        lid, view, now = self.ledger_id, self.lc.ledger(self.ledger_id), self.now()
        first = self._bond_or_follow(view, now)
        if first is not None:
            return first
        f = self.follower
        if now < view.end_time and f.stalled is None:
            for t in range(1, view.params.steps + 1):
                open_, cd, rd = view.step_window(t)
                if now >= rd:
                    continue
                if now < open_:
                    return idle(open_)
                if now < cd:
                    if self.lc.commit_of(lid, t, self.address) != bytes(32):
                        return idle(cd)
                    if len(f.blocks) != t - 1:  # pragma: no cover - blocks up to t-1 are built at open_t
                        return idle(cd)
                    if t not in self.pending:
                        self.pending[t] = self._contribute(t)
                        self._remember(t, loads(self.pending[t].record)["nonce"])
                    p = self.pending[t]
                    c = p.contribution
                    h = commit_hash(lid, t, self.address, c.batch_commitment, c.gradient_commitment, p.salt)
                    self.say(f"step {t}: committing gradient 0x{c.gradient_commitment.hex()[:16]}")
                    return self._sent(self.lc.commit(lid, t, h))
                if self.lc.revealed(lid, t, self.address):
                    return idle(rd)
                if t not in self.pending:
                    recovered = self._recover(t)
                    if recovered is None:
                        return idle(rd)
                    self.pending[t] = recovered
                if self.lc.validation_commitment(lid, t) is None:
                    return idle(rd)
                p = self.pending[t]
                c = p.contribution
                mine = commit_hash(lid, t, self.address, c.batch_commitment, c.gradient_commitment, p.salt)
                if self.lc.commit_of(lid, t, self.address) != mine:
                    self.say(f"step {t}: the contribution at hand does not open my commit; not revealing")
                    return idle(rd)
                if self.publish:
                    for b in p.batches:
                        self.store.put_state(b)
                    if c.gradients is not None:
                        self.store.put_state(dict(c.gradients))
                    self.store.put_blob(p.record)
                self.say(f"step {t}: revealing (batches 0x{c.batch_commitment.hex()[:16]})")
                return self._sent(self.lc.reveal(lid, t, c.batch_commitment, c.gradient_commitment, p.salt))
            return idle(view.end_time)
        return self._claim(view, now)

    def my_leaf(self, tree: PayoutTree) -> int | None:
        mine = bytes.fromhex(self.address[2:].lower())
        for i, leaf in enumerate(tree.leaves):
            if leaf.account == mine:
                return i
        return None

    def _claim(self, view: LedgerView, now: int) -> Tick:
        f = self.follower
        lid = self.ledger_id
        if self.claimed_amount is None and view.claims_open(now) and f.stalled is None:
            tree = payout_tree(view, f.genesis, f.blocks, self.chain.chain_id)
            i = self.my_leaf(tree)
            if tree.root != view.payout_root:
                self.say("the payout root on chain is not the tree of the blocks I built: not claiming")
                self.claimed_amount = 0
            elif i is None or self.lc.claimed(lid, i):
                self.claimed_amount = 0
            else:
                proof = tree.proof(i)
                self.say(f"claiming leaf {i}: {proof.amount} wei")
                tick = self._sent(self.lc.claim(lid, proof))
                self.claimed_amount = proof.amount
                return tick
        if not self.withdrawn and self.lc.bond_of(lid, self.address) != 0:
            return self._withdraw(view, now)
        waiting = self.claimed_amount is None and not view.frozen and not view.refunded
        if waiting and f.stalled is None and now < view.settle_time:
            return idle(view.settle_time)  # a payout root may still be agreed; claims open then
        return DONE


class BuilderAgent(_Follows):
    """Builds every block, posts the interval roots and the payout root, pulls its fee (module docstring)."""

    role = "builder"
    BUILDER = True

    def __init__(
        self,
        name: str,
        chain: ChainClient,
        lc: TrainingLedgerClient,
        store: Store,
        ledger_id: int,
        *,
        observer: Any | None = None,
        tamper: Callable[[Block], Block] | None = None,
        follower: LedgerFollower | None = None,
    ) -> None:
        super().__init__(name, chain, lc, store, ledger_id, observer, tamper, follower)
        self.published = 0
        self.tree: PayoutTree | None = None
        self.head: bytes | None = None
        self.fee_claimed = False
        self.saw_freeze = False

    def _tick(self) -> Tick:
        lid, view, now = self.ledger_id, self.lc.ledger(self.ledger_id), self.now()
        first = self._bond_or_follow(view, now)
        if first is not None:
            return first
        f = self.follower
        while self.published < len(f.blocks):
            publish_block(self.store, f.blocks[self.published])
            self.published += 1
        k = view.params.interval_steps
        for i in range(view.params.intervals):
            last = (i + 1) * k
            if len(f.blocks) < last:
                if f.stalled is not None:
                    return self._withdraw(view, now)
                return idle(view.step_window(last)[2])
            if now < view.settle_time and not view.frozen and not self.lc.posted(lid, i, self.address):
                r = interval_root(f.blocks[i * k : last])
                self.say(f"interval {i}: posting block root 0x{r.hex()[:16]}")
                return self._sent(self.lc.post_interval_root(lid, i, r))
        if view.frozen or view.refunded:
            if view.frozen and not self.saw_freeze:
                self.saw_freeze = True
                self.say("the ledger is frozen (builders disagree): no payout")
            return self._withdraw(view, now)
        if view.intervals_agreed < view.params.intervals:
            if now >= view.settle_time:
                return self._withdraw(view, now)
            return idle(view.settle_time)
        if self.tree is None:
            self.tree = payout_tree(view, f.genesis, f.blocks, self.chain.chain_id)
            self.store.put_blob(tree_record(lid, self.tree))
            self.head = publish(self.store, f.genesis, f.ledger.programs, f.initial_state, f.validation, f.steps)
            self.say(
                f"payout tree 0x{self.tree.root.hex()[:16]} ({self.tree.leaf_count} leaves), head 0x{self.head.hex()}"
            )
        if now < view.settle_time and self._may_post_payout(view):
            self.say("posting the payout root")
            return self._sent(self.lc.post_payout_root(lid, self.tree))
        if not self.fee_claimed and self._fee_due(view):
            self.say("claiming the builder fee")
            tick = self._sent(self.lc.claim_fee(lid))
            self.fee_claimed = True
            return tick
        fee_waits = view.has_payout and not self.fee_claimed and now < view.settle_time
        if fee_waits and self.lc.fee_due(lid, self.address):
            return idle(view.settle_time)  # fees are pulled once the settle window is over
        if not view.has_payout and now < view.settle_time:
            return idle(view.settle_time)
        return self._withdraw(view, now)

    def _may_post_payout(self, view: LedgerView) -> bool:
        """Whether this builder still has to post its payout root (every bonded builder posts it once)."""
        return not view.frozen and not view.refunded and not self.lc.payout_voted(self.ledger_id, self.address)

    def _fee_due(self, view: LedgerView) -> bool:
        now = self.now()
        return view.claims_open(now) and self.lc.fee_due(self.ledger_id, self.address) > 0
