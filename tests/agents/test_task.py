"""A trainer refuses a task whose materials break the sizes the market's proof-gas bound assumes (no node)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from offchain.agents import task as task_module
from offchain.agents.task import MAX_EXAMPLE_FIELDS, TaskRejected, load_materials
from offchain.contracts.task_market import TaskSpec, Wei
from offchain.store import Store
from trainer.data.dataset import Dataset
from trainer.workloads import Workload


def spec_of(workload: Workload, dataset: Dataset, public: Store) -> TaskSpec:
    program = workload.program
    public.put_program(program)
    public.put_dataset(dataset)
    return TaskSpec(
        program_hash=program.program_hash,
        graph_root=program.graph_root,
        dataset_root=dataset.root,
        initial_state_root=public.put_state(workload.initial_state()),
        seed=workload.config.seed,
        dataset_size=len(dataset),
        steps=workload.config.steps,
        checkpoint_interval=workload.config.checkpoint_interval,
        batch_size=workload.config.batch_size,
        node_count=len(program.nodes),
        arity=4,
        clock=3600,
        slots=2,
        bond=Wei(0),
        gas_price_cap=Wei(1),
        join_deadline=1,
        submit_deadline=2,
        dispute_deadline=3,
    )


def test_a_task_within_the_bounds_loads(workload: Workload, tmp_path: Path) -> None:
    public = Store(tmp_path / "public")
    materials = load_materials(spec_of(workload, workload.dataset, public), public)
    assert len(materials.dataset) == len(workload.dataset)


def test_examples_with_too_many_fields_are_refused(workload: Workload, tmp_path: Path) -> None:
    extra = {f"extra{i}": torch.zeros(1) for i in range(MAX_EXAMPLE_FIELDS + 1 - len(workload.dataset.examples[0]))}
    wide = Dataset("wide", [{**ex, **extra} for ex in workload.dataset.examples[:32]])
    public = Store(tmp_path / "public")
    with pytest.raises(TaskRejected, match=f"{MAX_EXAMPLE_FIELDS + 1} fields"):
        load_materials(spec_of(workload, wide, public), public)


def test_a_node_with_too_many_ports_is_refused(
    workload: Workload, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ports = max(len(n.inputs) + len(n.outputs) for n in workload.program.nodes)
    monkeypatch.setattr(task_module, "MAX_NODE_PORTS", ports - 1)
    public = Store(tmp_path / "public")
    with pytest.raises(TaskRejected, match=f"has {ports} inputs and outputs"):
        load_materials(spec_of(workload, workload.dataset, public), public)
