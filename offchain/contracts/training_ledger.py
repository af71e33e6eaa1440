"""Typed client of TrainingLedger (contracts/src/TrainingLedger.sol, docs/ledger.md).

A client posts a ledger (`post_ledger` with `LedgerParams` and its pool), contributors and builders
`bond`; per step t (1 .. T) contributors `commit` `commit_hash(...)` before the step's commit deadline,
the client reveals validation batch t with its opening of the validation root (`reveal_validation`,
`validation_opening` builds it) and contributors `reveal`; bonded builders post each interval's block
root (`post_interval_root`) and, each of them, the payout tree (`post_payout_root`: `quorum` equal posts
agree it, a different one freezes the ledger); after the settle window accounts `claim` their leaf with its
proof, the agreeing builders `claim_fee`, anyone `refund`s what is left to the client and bonds are
withdrawn (`withdraw_bond`). Views read the contract's state; `events(...)` decodes its logs.

Every custom error of the contract (contracts/src/lib/LedgerErrors.sol) surfaces as a subclass of
`TrainingLedgerError` named after it, with the sentence a user reads.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Final

from eth_abi import encode as abi_encode
from eth_typing import ChecksumAddress
from eth_utils.crypto import keccak

from offchain.chain.build import Artifact
from offchain.chain.client import ChainClient, Receipt, Wei
from offchain.chain.deploy import Deployment
from offchain.chain.errors import ChainError
from offchain.contracts._base import (
    LIBRARY_ERRORS,
    ContractClient,
    ErrorTable,
    TypedRevert,
    address,
    error_table,
    word,
)
from trainer.commit.merkle import MerkleTree
from trainer.ledger.ledger import validation_leaf
from trainer.ledger.payout import PayoutProof, PayoutTree


class TrainingLedgerError(TypedRevert):
    """A training ledger rule refused the call."""


class LedgerBadParam(TrainingLedgerError):
    """A ledger parameter is out of range (the error names which: pool, steps, intervalSteps, windows,
    maxContributors, quorum (2 to 256), settle, builderFee, roots, root (a zero interval root) or payout)."""


class LedgerUnknown(TrainingLedgerError):
    """No ledger has this id."""


class LedgerBadBond(TrainingLedgerError):
    """The value sent is not the ledger's bond for this role (contributor or builder)."""


class LedgerAlreadyBonded(TrainingLedgerError):
    """This address has already bonded on the ledger: one bond per address."""


class LedgerNotBonded(TrainingLedgerError):
    """This address does not hold a bond on the ledger in the role the call needs (a contributor to commit, a
    builder to post roots: a builder who withdrew its bond posts no more)."""


class LedgerOutsideWindow(TrainingLedgerError):
    """The call is outside its time window [from, until): too early or too late."""


class LedgerBadStep(TrainingLedgerError):
    """Steps run 1 .. T: this step is not one of the ledger's."""


class LedgerAlreadyCommitted(TrainingLedgerError):
    """The contributor has already committed at this step."""


class LedgerStepFull(TrainingLedgerError):
    """The step already holds its maximum number of contributions."""


class LedgerNotClient(TrainingLedgerError):
    """Only the ledger's client may do this (reveal a validation batch)."""


class LedgerValidationAlreadyRevealed(TrainingLedgerError):
    """This step's validation batch is already revealed."""


class LedgerValidationNotRevealed(TrainingLedgerError):
    """The step's validation batch is not revealed yet, so contributors cannot reveal."""


class LedgerRevealMismatch(TrainingLedgerError):
    """The reveal does not open the contributor's own commit of this step (or there is none)."""


class LedgerAlreadyRevealed(TrainingLedgerError):
    """The contributor has already revealed at this step."""


class LedgerBadInterval(TrainingLedgerError):
    """The interval index is not below the ledger's interval count."""


class LedgerAlreadyPosted(TrainingLedgerError):
    """This builder has already posted this interval's root."""


class LedgerIntervalOrder(TrainingLedgerError):
    """A builder posts its interval roots in order (0, 1, ...): this interval comes after one it has not posted."""


class LedgerFrozen(TrainingLedgerError):
    """Builders posted different roots for an interval or for the payout: the ledger's payout is frozen for
    good, nothing can be claimed (the pool returns to the client after the settle window)."""


class LedgerIntervalsIncomplete(TrainingLedgerError):
    """Not every interval root has its builder quorum yet: no payout root can be posted."""


class LedgerPayoutAlreadyPosted(TrainingLedgerError):
    """The pool was already refunded: no payout root can be posted."""


class LedgerPayoutTotal(TrainingLedgerError):
    """The payout tree's total must be the pool minus the builder fee."""


class LedgerPayoutAlreadyVoted(TrainingLedgerError):
    """This builder has already posted its payout root for the ledger: one post per builder, no change of vote."""


class LedgerClaimsNotOpen(TrainingLedgerError):
    """The payout root is agreed, but claims (and fee claims) open only at the end of the settle window, so
    that every bonded builder can still object to it."""


class LedgerNoPayout(TrainingLedgerError):
    """No payout root is agreed by the builder quorum yet (or the pool was refunded and claims are closed):
    nothing can be claimed."""


class LedgerBadClaim(TrainingLedgerError):
    """The payout leaf index is out of range or already claimed."""


class LedgerPayoutMismatch(TrainingLedgerError):
    """The proof does not open the ledger's payout root for this leaf."""


class LedgerNotOver(TrainingLedgerError):
    """The ledger (or its settle and claim windows) is not over yet."""


class LedgerNothingDue(TrainingLedgerError):
    """Nothing is due to this address: no bond, no fee, or already refunded."""


class LedgerTransferFailed(TrainingLedgerError):
    """Sending the ether failed (the recipient refused it); nothing was paid."""


TRAINING_LEDGER_ERRORS: ErrorTable = error_table(TrainingLedgerError)


# -- values ---------------------------------------------------------------------------------------

CONTRACT_NAME: Final = "TrainingLedger"
FEE_INDEX: Final = 2**256 - 1  # the `index` of a `Claimed` event that pays a builder fee


@dataclass(frozen=True, slots=True)
class LedgerParams:
    """What a client posts (TrainingLedger.Params). Windows are seconds; bonds and fee are wei."""

    genesis: bytes  # the model id: H("RGEN" || genesis record)
    validation_root: bytes  # the list root over leaf("LVAL" || u256(t) || commitment), t = 1 .. T
    steps: int
    interval_steps: int
    commit_window: int
    reveal_window: int
    max_contributors: int
    quorum: int
    settle_window: int
    claim_window: int
    contributor_bond: Wei
    builder_bond: Wei
    builder_fee: Wei

    def to_abi(self) -> tuple[Any, ...]:
        return (
            word(self.genesis, "genesis"),
            word(self.validation_root, "validation root"),
            *(int(getattr(self, f.name)) for f in fields(self)[2:]),
        )

    @classmethod
    def from_abi(cls, v: Sequence[Any]) -> LedgerParams:
        ints = [int(x) for x in v[2:]]
        return cls(bytes(v[0]), bytes(v[1]), *ints)  # type: ignore[arg-type]

    @property
    def intervals(self) -> int:
        return self.steps // self.interval_steps

    @property
    def period(self) -> int:
        return self.commit_window + self.reveal_window


@dataclass(frozen=True, slots=True)
class LedgerView:
    """A ledger's record (`ledger(id)`); `extra` holds any field this client does not name."""

    params: LedgerParams
    client: ChecksumAddress
    start: int
    pool: Wei
    frozen: bool
    refunded: bool
    intervals_agreed: int
    payout_root: bytes  # set once `quorum` builders posted the same candidate; 0x..01 after a refund closed claims
    payout_leaves: int
    payout_votes: int  # builders that posted the candidate
    payout_candidate: bytes  # the first payout post's root (0: none yet)
    paid: Wei
    extra: Mapping[str, Any]

    @property
    def end_time(self) -> int:
        return self.start + self.params.steps * self.params.period

    @property
    def settle_time(self) -> int:
        """`endTime + settleWindow`: payout roots until then; with none by then, `refund` returns the pool."""
        return self.end_time + self.params.settle_window

    @property
    def has_payout(self) -> bool:
        """Whether a payout root is agreed (claims open at `settle_time`, unless the ledger is frozen)."""
        return self.payout_root != bytes(32)

    def claims_open(self, now: int) -> bool:
        return self.has_payout and not self.frozen and not self.refunded and now >= self.settle_time

    def step_window(self, t: int) -> tuple[int, int, int]:
        """(open, commit deadline, reveal deadline) of step t, as `stepWindow` computes them."""
        if not 1 <= t <= self.params.steps:
            raise ChainError(f"step {t} is not one of the ledger's steps 1 .. {self.params.steps}")
        open_ = self.start + (t - 1) * self.params.period
        return open_, open_ + self.params.commit_window, open_ + self.params.period


_VIEW_FIELDS: Final = {
    "client": "client",
    "start": "start",
    "pool": "pool",
    "frozen": "frozen",
    "refunded": "refunded",
    "intervalsAgreed": "intervals_agreed",
    "payoutRoot": "payout_root",
    "payoutLeaves": "payout_leaves",
    "payoutVotes": "payout_votes",
    "payoutCandidate": "payout_candidate",
    "paid": "paid",
}


def commit_hash(
    ledger_id: int, t: int, contributor: str, batch_commitment: bytes, gradient_commitment: bytes, salt: bytes
) -> bytes:
    """`keccak256(abi.encode(id, t, contributor, batchCommitment, gradientCommitment, salt))`, what a contributor
    commits to (the contract's `commitHash`)."""
    return keccak(
        abi_encode(
            ["uint256", "uint256", "address", "bytes32", "bytes32", "bytes32"],
            [
                int(ledger_id),
                int(t),
                address(contributor),
                word(batch_commitment, "batch commitment"),
                word(gradient_commitment, "gradient commitment"),
                word(salt, "salt"),
            ],
        )
    )


def validation_opening(commitments: Sequence[bytes], t: int) -> list[bytes]:
    """The siblings that open leaf("LVAL" || u256(t) || commitment_t) at index t - 1 of the validation root over
    `commitments` (steps 1 .. T), what `revealValidation` takes."""
    if not 1 <= t <= len(commitments):
        raise ChainError(f"step {t} has no validation batch among {len(commitments)}")
    tree = MerkleTree([validation_leaf(s, c) for s, c in enumerate(commitments, start=1)])
    return list(tree.open(t - 1).siblings)


@dataclass(frozen=True, slots=True)
class Event:
    """A decoded log of the contract: its name, its arguments by ABI name, where it was mined."""

    name: str
    args: Mapping[str, Any]
    block: int
    tx: str

    def __getitem__(self, key: str) -> Any:
        return self.args[key]


EVENTS: Final = (
    "LedgerPosted",
    "Bonded",
    "Committed",
    "ValidationRevealed",
    "Revealed",
    "IntervalPosted",
    "Frozen",
    "PayoutVoted",
    "PayoutFrozen",
    "PayoutPosted",
    "Claimed",
    "Refunded",
    "BondWithdrawn",
)


@dataclass(frozen=True, slots=True)
class Reveal:
    """A contributor's step-t reveal (`Revealed`), as builders read it."""

    t: int
    contributor: ChecksumAddress
    batch_commitment: bytes
    gradient_commitment: bytes
    salt: bytes  # from the Revealed event
    block: int


# -- the client ---------------------------------------------------------------------------------


class TrainingLedgerClient(ContractClient):
    """Calls a deployed TrainingLedger through a `ChainClient` (one key)."""

    CONTRACT_NAME: ClassVar[str] = CONTRACT_NAME
    ERRORS: ClassVar[tuple[ErrorTable, ...]] = (TRAINING_LEDGER_ERRORS, LIBRARY_ERRORS)

    @classmethod
    def from_deployment(
        cls, chain: ChainClient, deployment: Deployment, artifacts: Mapping[str, Artifact] | None = None
    ) -> TrainingLedgerClient:
        """The deployment's TrainingLedger (ChainError naming `refereed deploy` if it has none)."""
        if artifacts is None:
            from offchain.chain.build import compile_contracts

            artifacts = compile_contracts()
        return cls(chain, deployment.address(CONTRACT_NAME), artifacts[CONTRACT_NAME])

    # -- transactions ----------------------------------------------------------------------------

    def post_ledger(self, params: LedgerParams, pool: int) -> int:
        """Posts a ledger escrowing `pool` wei; its id (from LedgerPosted)."""
        receipt = self._send(self.contract.functions.postLedger(params.to_abi()), value=pool)
        return int(self._event(receipt, "LedgerPosted")["id"])

    def bond(self, ledger_id: int, builder: bool, value: int | None = None) -> Receipt:
        """Bonds the caller as a contributor or builder with `value` wei (default: the ledger's bond for it)."""
        if value is None:
            p = self.ledger(ledger_id).params
            value = p.builder_bond if builder else p.contributor_bond
        return self._send(self.contract.functions.bond(ledger_id, bool(builder)), value=value)

    def commit(self, ledger_id: int, t: int, commitment: bytes) -> Receipt:
        """Commits `commit_hash(...)` for step t, before the step's commit deadline."""
        return self._send(self.contract.functions.commit(ledger_id, t, word(commitment, "commitment")))

    def reveal_validation(self, ledger_id: int, t: int, commitment: bytes, siblings: Sequence[bytes]) -> Receipt:
        """The client reveals validation batch t's commitment with its opening (`validation_opening`)."""
        fn = self.contract.functions.revealValidation(
            ledger_id, t, word(commitment, "validation commitment"), [word(s, "sibling") for s in siblings]
        )
        return self._send(fn)

    def reveal(
        self, ledger_id: int, t: int, batch_commitment: bytes, gradient_commitment: bytes, salt: bytes
    ) -> Receipt:
        """Opens the caller's step-t commit, once validation batch t is revealed."""
        fn = self.contract.functions.reveal(
            ledger_id,
            t,
            word(batch_commitment, "batch commitment"),
            word(gradient_commitment, "gradient commitment"),
            word(salt, "salt"),
        )
        return self._send(fn)

    def post_interval_root(self, ledger_id: int, i: int, root: bytes) -> Receipt:
        """A bonded builder posts interval i's block root (`trainer.ledger.block.interval_root`)."""
        return self._send(self.contract.functions.postIntervalRoot(ledger_id, i, word(root, "interval root")))

    def post_payout_root(self, ledger_id: int, tree: PayoutTree) -> Receipt:
        """A bonded builder posts (votes for) the Merkle-sum payout tree (its top hash, leaf count and total), once;
        `quorum` equal posts make it the payout root, a different one freezes the ledger."""
        fn = self.contract.functions.postPayoutRoot(
            ledger_id, word(tree.top_hash, "top hash"), tree.leaf_count, tree.total
        )
        return self._send(fn)

    def claim(self, ledger_id: int, proof: PayoutProof) -> Receipt:
        """Pays leaf `proof.index` to its account (anyone may send it), once the settle window is over."""
        fn = self.contract.functions.claim(
            ledger_id, proof.index, address("0x" + proof.account.hex()), proof.amount, proof.steps_abi()
        )
        return self._send(fn)

    def claim_fee(self, ledger_id: int) -> Receipt:
        """A builder whose payout post was one of the `quorum` agreeing ones pulls its part of the fee."""
        return self._send(self.contract.functions.claimFee(ledger_id))

    def refund(self, ledger_id: int) -> Receipt:
        """Returns to the client what the ledger still holds of its pool, once its windows are over."""
        return self._send(self.contract.functions.refund(ledger_id))

    def withdraw_bond(self, ledger_id: int) -> Receipt:
        """Returns the caller's bond once the ledger has ended."""
        return self._send(self.contract.functions.withdrawBond(ledger_id))

    # -- views -----------------------------------------------------------------------------------

    def ledger(self, ledger_id: int) -> LedgerView:
        raw = self._call(self.contract.functions.ledger(ledger_id))
        named = self._struct("ledger", raw)
        p = LedgerParams.from_abi(named.pop("p"))
        kw: dict[str, Any] = {}
        for abi_name, ours in _VIEW_FIELDS.items():
            v = named.pop(abi_name, None)
            if ours in ("client",):
                kw[ours] = address(v)
            elif ours in ("payout_root", "payout_candidate"):
                kw[ours] = bytes(v) if v is not None else bytes(32)
            elif ours in ("frozen", "refunded"):
                kw[ours] = bool(v)
            else:
                kw[ours] = int(v or 0)
        return LedgerView(params=p, extra=named, **kw)

    def _struct(self, fn_name: str, value: Sequence[Any]) -> dict[str, Any]:
        """A struct output of `fn_name` by its ABI component names."""
        for item in self.artifact.abi:
            if item.get("type") == "function" and item.get("name") == fn_name:
                comps = item["outputs"][0]["components"]
                return {c["name"]: v for c, v in zip(comps, value, strict=True)}
        raise ChainError(f"{CONTRACT_NAME} has no function {fn_name}")  # pragma: no cover

    def ledger_count(self) -> int:
        return int(self._call(self.contract.functions.ledgerCount()))

    def max_pool(self) -> Wei:
        return Wei(int(self._call(self.contract.functions.MAX_POOL())))

    def max_leaves(self) -> int:
        return int(self._call(self.contract.functions.MAX_LEAVES()))

    def max_quorum(self) -> int:
        return int(self._call(self.contract.functions.MAX_QUORUM()))

    def paid_out(self, ledger_id: int) -> Wei:
        """What the ledger has paid out of its pool (claims and fee parts; the whole pool once refunded)."""
        return Wei(int(self._call(self.contract.functions.paidOut(ledger_id))))

    def bond_of(self, ledger_id: int, who: str) -> Wei:
        return Wei(int(self._call(self.contract.functions.bondOf(ledger_id, address(who)))))

    def is_builder(self, ledger_id: int, who: str) -> bool:
        return bool(self._call(self.contract.functions.isBuilder(ledger_id, address(who))))

    def commit_of(self, ledger_id: int, t: int, who: str) -> bytes:
        return bytes(self._call(self.contract.functions.commitOf(ledger_id, t, address(who))))

    def revealed(self, ledger_id: int, t: int, who: str) -> bool:
        return bool(self._call(self.contract.functions.revealed(ledger_id, t, address(who))))

    def commit_count(self, ledger_id: int, t: int) -> int:
        return int(self._call(self.contract.functions.commitCount(ledger_id, t)))

    def validation_commitment(self, ledger_id: int, t: int) -> bytes | None:
        """Validation batch t's revealed commitment, None while unrevealed."""
        c = bytes(self._call(self.contract.functions.validationCommitment(ledger_id, t)))
        return None if c == bytes(32) else c

    def interval_root(self, ledger_id: int, i: int) -> bytes | None:
        """Interval i's first posted root, None while none is posted."""
        r = bytes(self._call(self.contract.functions.intervalRoot(ledger_id, i)))
        return None if r == bytes(32) else r

    def interval_votes(self, ledger_id: int, i: int) -> int:
        return int(self._call(self.contract.functions.intervalVotes(ledger_id, i)))

    def posted(self, ledger_id: int, i: int, builder: str) -> bool:
        return bool(self._call(self.contract.functions.posted(ledger_id, i, address(builder))))

    def payout_voted(self, ledger_id: int, builder: str) -> bool:
        """Whether `builder` has posted its payout root."""
        return bool(self._call(self.contract.functions.payoutVoted(ledger_id, address(builder))))

    def fee_due(self, ledger_id: int, builder: str) -> Wei:
        """The part of the builder fee `builder` may still pull (`claim_fee`)."""
        return Wei(int(self._call(self.contract.functions.feeDue(ledger_id, address(builder)))))

    def settle_end(self, ledger_id: int) -> int:
        """`endTime + settleWindow`: roots are posted before it, claims open at it."""
        return int(self._call(self.contract.functions.settleEnd(ledger_id)))

    def claimed(self, ledger_id: int, index: int) -> bool:
        return bool(self._call(self.contract.functions.claimed(ledger_id, index)))

    def step_window(self, ledger_id: int, t: int) -> tuple[int, int, int]:
        """(open, commit deadline, reveal deadline) of step t."""
        a, b, c = self._call(self.contract.functions.stepWindow(ledger_id, t))
        return int(a), int(b), int(c)

    def end_time(self, ledger_id: int) -> int:
        return int(self._call(self.contract.functions.endTime(ledger_id)))

    def contract_commit_hash(
        self, ledger_id: int, t: int, contributor: str, batch_c: bytes, gradient_c: bytes, salt: bytes
    ) -> bytes:
        """The contract's own `commitHash` (equal to `commit_hash`)."""
        fn = self.contract.functions.commitHash(
            ledger_id, t, address(contributor), word(batch_c), word(gradient_c), word(salt)
        )
        return bytes(self._call(fn))

    def balance(self) -> Wei:
        """What the contract holds (every ledger's unpaid pool and bonds)."""
        return self.chain.balance(self.address)

    # -- events ----------------------------------------------------------------------------------

    def events(self, name: str, filters: Mapping[str, Any] | None = None, *, from_block: int = 0) -> list[Event]:
        """Every `name` event (one of EVENTS) whose indexed fields match `filters`, in chain order."""
        if name not in EVENTS:
            raise ChainError(f"TrainingLedger emits no {name} event; its events: {', '.join(EVENTS)}")
        out = []
        for log in self._logs(name, filters, from_block=from_block):
            args = {k: v for k, v in log.items() if not k.startswith("_")}
            out.append(Event(name, args, int(log["_block"]), str(log["_tx"])))
        return out

    def receipt_events(self, receipt: Receipt, name: str) -> list[Mapping[str, Any]]:
        """The `name` events this contract emitted in `receipt`."""
        return self._events(receipt, name)

    def validation_draw(self, ledger_id: int, t: int) -> bytes | None:
        """The recomputation draw of step t (docs/ledger.md, section 7): the hash of the block whose
        `ValidationRevealed` event revealed validation batch t; None while unrevealed."""
        revealed = self.events("ValidationRevealed", {"id": ledger_id, "t": t})
        return None if not revealed else self.chain.block_hash(revealed[0].block)

    def committers(self, ledger_id: int, t: int, *, from_block: int = 0) -> list[str]:
        """The addresses that committed to step t (from the `Committed` events), in commit order."""
        return [address(e["who"]) for e in self.events("Committed", {"id": ledger_id, "t": t}, from_block=from_block)]

    def reveals(self, ledger_id: int, t: int, *, from_block: int = 0) -> list[Reveal]:
        """Step t's reveals, each with its salt from the `Revealed` event."""
        return [
            Reveal(
                t,
                address(e["who"]),
                bytes(e["batchCommitment"]),
                bytes(e["gradientCommitment"]),
                bytes(e["salt"]),
                e.block,
            )
            for e in self.events("Revealed", {"id": ledger_id, "t": t}, from_block=from_block)
        ]
