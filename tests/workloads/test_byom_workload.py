"""docs/bring-your-own-model.md, its Python run as written, and the example workloads of examples/byom/.

Every Python block of the page runs in a fresh process, in page order, in a folder holding the files of
examples/byom/ (the page includes them with `--8<--`, so the page shows exactly what runs here). The
block that reads the trained weights runs at the end of tests/agents/test_byom.py, after the terminals.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from offchain.agents.task import check_workload
from trainer.commit import state_root
from trainer.data.dataset import Dataset
from trainer.interp import Interpreter
from trainer.workloads import Workload, WorkloadError, load_workload

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "bring-your-own-model.md"
EXAMPLES = REPO / "examples" / "byom"
AFTER_THE_TERMINALS = "# after the terminals"


def python_blocks(text: str) -> list[str]:
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def included(block: str) -> Path | None:
    m = re.fullmatch(r'--8<-- "([^"]+)"\s*', block)
    return REPO / m.group(1) if m else None


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for f in EXAMPLES.glob("*.py"):
        shutil.copy(f, tmp_path / f.name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def _run(script: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {"PYTHONPATH": f"{REPO}", "PATH": "/usr/bin:/bin"}
    return subprocess.run([sys.executable, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def test_the_page_includes_only_files_that_exist() -> None:
    blocks = python_blocks(PAGE.read_text())
    files = [included(b) for b in blocks if included(b) is not None]
    assert {f.name for f in files if f is not None} == {"train_eager.py", "digits_cnn_task.py"}
    assert all(f is not None and f.is_file() for f in files)


def test_the_pages_python_runs_as_written(folder: Path) -> None:
    for i, block in enumerate(python_blocks(PAGE.read_text())):
        path = included(block)
        if path is not None and path.name != "train_eager.py":
            continue  # a module: the blocks below import it
        if block.startswith(AFTER_THE_TERMINALS):
            continue
        script = path if path is not None else folder / f"block{i}.py"
        if path is None:
            script.write_text(block)
        done = _run(folder / script.name if path is not None else script, folder)
        assert done.returncode == 0, f"block {i}:\n{block}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
        if "loss after 4 steps" in block:
            assert re.search(r"\d+ operators per step", done.stdout), done.stdout


def test_the_cnn_workload_trains_bit_reproducibly_on_one_and_two_threads(folder: Path) -> None:
    w = load_workload("digits_cnn_task:workload")
    program = check_workload(w)
    roots = []
    threads = torch.get_num_threads()
    try:
        for n in (1, 2):
            torch.set_num_threads(n)
            state = w.initial_state()
            interp = Interpreter(program)
            for step in range(3):
                state, loss = interp.run(state, w.dataset.batch(w.config.seed, step, w.config.batch_size))
            assert torch.isfinite(loss)
            roots.append(state_root(state))
    finally:
        torch.set_num_threads(threads)
    assert roots[0] == roots[1]
    assert state_root(w.initial_state()) != roots[0]


def test_a_folder_dataset_has_the_root_of_the_same_tensors(tmp_path: Path) -> None:
    x, y = torch.randn(6, 3), torch.arange(6)
    d = Dataset.from_tensors("d", x=x, y=y)
    d.save_folder(tmp_path / "d")
    assert Dataset.from_folder(tmp_path / "d").root == d.root
    assert torch.equal(d.examples[4]["x"], x[4])


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda p: Dataset.from_tensors("d"), "at least one field"),
        (lambda p: Dataset.from_tensors("d", x=torch.ones(3, 2), y=torch.ones(4)), "different numbers"),
        (lambda p: Dataset.from_tensors("d", x=torch.tensor(1.0)), "0-d"),
        (lambda p: Dataset.from_folder(p / "none"), "is not a folder"),
        (lambda p: Dataset.from_folder(p), "holds no *.pt files"),
    ],
)
def test_bad_datasets_are_named(make: object, fragment: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=re.escape(fragment)):
        make(tmp_path)  # type: ignore[operator]


def test_a_folder_file_that_is_not_an_example_is_named(tmp_path: Path) -> None:
    (tmp_path / "0.pt").write_text("garbage")
    with pytest.raises(ValueError, match=re.escape("0.pt' is not a torch.save file")):
        Dataset.from_folder(tmp_path)
    torch.save([torch.ones(2)], tmp_path / "0.pt")
    with pytest.raises(ValueError, match="must hold a dict of field name -> tensor"):
        Dataset.from_folder(tmp_path)


def test_load_workload_refuses_what_is_not_a_workload(folder: Path) -> None:
    (folder / "not_wl.py").write_text("def workload():\n    return 'a string'\n")
    with pytest.raises(WorkloadError, match=re.escape("returned a str, not a trainer.workloads.Workload")):
        load_workload("not_wl:workload")
    with pytest.raises(WorkloadError, match=re.escape("package.module:function")):
        load_workload("not_wl:")
    assert isinstance(load_workload("digits_cnn_task:workload"), Workload)
