"""Playing one side of a dispute game from a `RunWitness`, and answering the oracle's question.

`GamePlayer.move()` reads the game, and when it is this side's turn computes the move the
rules ask for (docs/game.md section 2) from the witness and sends it. It plays honestly from
whatever run the witness holds: a cheater's witness plays the cheater's claims to the end,
which is how tests and the demo show that the honest side wins.

`recompute` is the oracle's work: fetch the inputs by commitment (checking each one),
run the single node with the RepOps interpreter, and return the output commitments.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch

from offchain.contracts.dispute_game import PLAYING, DisputeGameClient, GameView, Side, Stage
from offchain.game.bisection import split_points
from offchain.game.descent import LeafTree
from offchain.game.errors import GameError
from offchain.game.records import RefKind, input_reference
from offchain.game.witness import RunWitness
from trainer.commit import commit_tensor, name_hash
from trainer.interp import Interpreter


class GamePlayer:
    """One side of game `game_id`, played by `client`'s account from `witness`."""

    def __init__(self, client: DisputeGameClient, game_id: int, witness: RunWitness, side: Side) -> None:
        self.client = client
        self.game_id = game_id
        self.witness = witness
        self.side = side
        self.cfg = client.config_of(game_id)
        self.moves = 0
        self.gas: list[int] = []

    def view(self) -> GameView:
        return self.client.game_of(self.game_id)

    def to_move(self, view: GameView | None = None) -> bool:
        view = view or self.view()
        return view.stage in PLAYING and view.to_move == self.side

    def move(self) -> str | None:
        """Makes this side's move if it is its turn; what it did, or None."""
        view = self.view()
        if not self.to_move(view):
            return None
        stage = view.stage
        if stage.is_descent:
            what = self._descend(view)
        elif stage is Stage.STEP_BISECTION:
            what = self._bisect(view)
        elif stage is Stage.POST_STATE_COUNT:
            tree = self.witness.state_tree(view.lo)
            self._sent(self.client.open_post_state_count(self.game_id, tree.count, tree.top))
            what = f"post-state count {tree.count}"
        elif stage is Stage.NODE_REVEAL:
            what = self._reveal(view)
        elif stage is Stage.INPUT_PROOF:
            what = self._prove_input(view)
        else:
            proof = self.witness.post_state_proof(view.lo, view.position)
            self._sent(self.client.prove_post_state(self.game_id, proof))
            what = f"proved post-state entry {view.position}"
        self.moves += 1
        return what

    def _sent(self, receipt: object) -> None:
        self.gas.append(int(getattr(receipt, "gas_used", 0)))

    def _tree(self, view: GameView) -> LeafTree:
        if view.stage is Stage.CHECKPOINT_DESCENT:
            return self.witness.checkpoints.tree
        if view.stage is Stage.TRACE_DESCENT:
            return self.witness.trace_tree(view.lo)
        return self.witness.state_tree(view.lo + 1)

    def _descend(self, view: GameView) -> str:
        mine = self._tree(view).nodes(view.height, view.position, self.cfg.arity)
        theirs: Sequence[bytes] = ()
        if self.side is Side.CHALLENGER:
            theirs = self.client.defender_nodes(self.game_id)
        self._sent(self.client.descend(self.game_id, mine, theirs))
        return f"{view.stage.name.lower()} at height {view.height}, position {view.position}"

    def _bisect(self, view: GameView) -> str:
        points = split_points(view.lo, view.hi, self.cfg.arity)
        mine = [self.witness.root(p) for p in points]
        theirs: Sequence[bytes] = ()
        lo_proof: Sequence[bytes] = ()
        if self.side is Side.CHALLENGER:
            theirs = self.client.defender_roots(self.game_id)
        elif view.hi - view.lo == self.cfg.checkpoint_interval:
            # First round (the interval is still a whole checkpoint interval; later ones are shorter):
            # open checkpoint j - 1, the state at lo, in our own list.
            lo_proof = self.witness.checkpoints.proof(view.hi // self.cfg.checkpoint_interval - 1)
        self._sent(self.client.bisect(self.game_id, mine, theirs, lo_proof))
        return f"bisection of steps {view.lo}..{view.hi}"

    def _reveal(self, view: GameView) -> str:
        step, node = view.lo, view.position
        record = self.witness.record(step, node)
        descriptor, graph_proof = self.witness.graph_proof(node)
        if self.side is Side.DEFENDER:
            self._sent(self.client.reveal_node(self.game_id, record, descriptor, graph_proof=graph_proof))
        else:
            theirs = [e for e in self.client.node_revealed(self.game_id) if e.side is Side.DEFENDER]
            if not theirs:
                raise GameError(f"game {self.game_id}: the defender has not revealed node {node} yet")
            self._sent(self.client.reveal_node(self.game_id, record, descriptor, their_record=theirs[-1].record))
        return f"revealed node {node} of step {step}"

    def _prove_input(self, view: GameView) -> str:
        w, step, node, k = self.witness, view.lo, view.position, view.input_index
        record = w.record(step, node)
        descriptor = w.program.descriptor(node)
        ref = input_reference(descriptor, k)
        if ref.kind is RefKind.STATE:
            name = _name_of(ref.name_hash, w.program.state_names)
            receipt = self.client.prove_state_input(self.game_id, record, descriptor, w.state_input_proof(step, name))
        elif ref.kind is RefKind.BATCH:
            name = _name_of(ref.name_hash, w.program.batch_names)
            receipt = self.client.prove_batch_input(self.game_id, record, descriptor, w.batch_proof(step, name))
        elif ref.kind is RefKind.CONSTANT:
            name = _name_of(ref.name_hash, [c.name for c in w.program.constants])
            receipt = self.client.prove_constant_input(
                self.game_id, record, descriptor, w.program_roots, w.constant_proof(name)
            )
        else:
            source, proof = w.node_input_proof(step, ref.node)
            receipt = self.client.prove_node_input(self.game_id, record, descriptor, source, proof)
        self._sent(receipt)
        return f"proved input {k} ({ref.kind.name.lower()}) of node {node}"


def _name_of(hashed: bytes, names: Sequence[str]) -> str:
    for n in names:
        if name_hash(n) == hashed:
            return n
    raise GameError(f"no name among {len(names)} hashes to {hashed.hex()}")


def recompute(
    interpreter: Interpreter, node: int, inputs: Sequence[bytes], fetch: Callable[[bytes], torch.Tensor]
) -> list[bytes]:
    """The oracle's answer: node `node` run alone on the tensors committed as `inputs`."""
    tensors = []
    for i, c in enumerate(inputs):
        t = fetch(c)
        got = commit_tensor(t.contiguous())
        if got != c:
            raise GameError(f"input {i} of node {node}: the store's tensor is committed as {got.hex()}, not {c.hex()}")
        tensors.append(t)
    return [commit_tensor(t.contiguous()) for t in interpreter.run_node(node, tensors)]
