"""A task's materials (program, dataset, initial state) from the public store, checked against its spec.

A trainer joins a task only if everything a run and a dispute need is published and
matches the spec: the program by its hash (and its graph root and node count), the
dataset by its root (and size), the initial state by its root, and the sizes the referee
contracts cannot check on chain (a batch tensor's bytes, the number of state entries, and the
fields per example and ports per node the market's proof-gas bound assumes).
"""

from __future__ import annotations

from dataclasses import dataclass

from offchain.contracts.task_market import TaskSpec
from offchain.errors import OffchainError
from offchain.game.witness import State
from offchain.store import Store, StoreError
from trainer.data.dataset import Dataset
from trainer.data.init import InitRuleError
from trainer.program import Program, ProgramError
from trainer.runner.runner import RunConfig, RunError
from trainer.workloads import Workload

MAX_BATCH_BYTES = 24 * 1024  # BatchVerifier.MAX_BATCH_BYTES: the largest batch tensor a proof may carry
MAX_STATE_ENTRIES = 1 << 16  # DisputeGame.MAX_STATE_ENTRIES
# ProofGasLib's assumptions: the market sizes a task's largest proof (postTask refuses one that would not
# fit a transaction, and pays winners for it) for examples of at most this many fields and nodes of at
# most this many inputs and outputs; a larger one could make a proof cost more than the market allowed.
MAX_EXAMPLE_FIELDS = 16
MAX_NODE_PORTS = 64


class TaskRejected(OffchainError):
    """A task a trainer must not take: its materials are missing, corrupt, or do not fit the referee."""


@dataclass(frozen=True)
class TaskMaterials:
    spec: TaskSpec
    program: Program
    dataset: Dataset
    initial: State

    @property
    def config(self) -> RunConfig:
        return run_config(self.spec)


def run_config(spec: TaskSpec) -> RunConfig:
    try:
        return RunConfig(spec.steps, spec.checkpoint_interval, spec.batch_size, spec.seed)
    except RunError as e:
        raise TaskRejected(f"the task's run parameters are invalid: {e}") from None


def load_materials(spec: TaskSpec, public: Store) -> TaskMaterials:
    """Everything a run needs, fetched by commitment and checked against `spec`; TaskRejected otherwise."""
    try:
        program = public.get_program(spec.program_hash)
        dataset = public.get_dataset(spec.dataset_root)
        initial = public.get_state(spec.initial_state_root)
    except StoreError as e:
        raise TaskRejected(f"the task's materials are not available: {e}") from None
    if program.graph_root != spec.graph_root:
        raise TaskRejected(
            f"the program's graph root is {program.graph_root.hex()}, the task says {spec.graph_root.hex()}"
        )
    if len(program.nodes) != spec.node_count:
        raise TaskRejected(f"the program has {len(program.nodes)} nodes, the task says {spec.node_count}")
    if len(dataset) != spec.dataset_size:
        raise TaskRejected(f"the dataset has {len(dataset)} examples, the task says {spec.dataset_size}")
    check_fits(program, dataset, spec.batch_size, initial)
    run_config(spec)
    return TaskMaterials(spec, program, dataset, initial)


def check_fits(program: Program, dataset: Dataset, batch_size: int, initial: State) -> None:
    """TaskRejected unless the program, dataset and initial state fit the referee's bounds (module docstring)."""
    if sorted(initial) != sorted(program.state_names):
        raise TaskRejected("the initial state's names are not the program's state inputs")
    if len(initial) > MAX_STATE_ENTRIES:
        raise TaskRejected(f"the state has {len(initial)} entries; the referee opens at most {MAX_STATE_ENTRIES}")
    example = dataset.examples[0]
    if len(example) > MAX_EXAMPLE_FIELDS:
        raise TaskRejected(
            f"the dataset's examples have {len(example)} fields; the market sizes batch proofs for at most "
            f"{MAX_EXAMPLE_FIELDS}"
        )
    ports = max(len(node.inputs) + len(node.outputs) for node in program.nodes)
    if ports > MAX_NODE_PORTS:
        raise TaskRejected(
            f"a node of the program has {ports} inputs and outputs; the market sizes proofs for at most "
            f"{MAX_NODE_PORTS}"
        )
    for name in program.batch_names:
        if name not in example:
            raise TaskRejected(f"the program reads batch field {name!r}, which the dataset's examples lack")
        size = batch_size * example[name].numel() * example[name].element_size()
        if size > MAX_BATCH_BYTES:
            raise TaskRejected(
                f"batch tensor {name!r} is {size} bytes; a batch proof carries at most {MAX_BATCH_BYTES}, "
                "so a dispute over it could not be decided"
            )


class WorkloadRejected(OffchainError):
    """A client's workload that cannot be posted: its step does not capture, or it does not fit the referee."""


def check_workload(workload: Workload) -> Program:
    """The workload's program, once it is known to capture and to fit the referee; WorkloadRejected otherwise.

    A client calls this before publishing or posting anything, so a bad workload costs nothing.
    """
    try:
        program = workload.program
        initial = workload.initial_state()
    except (ProgramError, InitRuleError) as e:
        raise WorkloadRejected(f"workload {workload.name!r} cannot be posted: {e}") from e
    except Exception as e:  # the step runs the user's code while it is traced
        raise WorkloadRejected(
            f"workload {workload.name!r} cannot be posted: tracing its step raised {type(e).__name__}: {e}"
        ) from e
    try:
        check_fits(program, workload.dataset, workload.config.batch_size, initial)
    except TaskRejected as e:
        raise WorkloadRejected(f"workload {workload.name!r} cannot be posted: {e}") from None
    return program
