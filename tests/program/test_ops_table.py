"""docs/program.md's operator table is the kernel table: generated from `trainer.repops.KERNELS`, checked here."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from trainer.repops import KERNELS

ROOT = Path(__file__).resolve().parents[2]


def _gen() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_ops_table", ROOT / "scripts" / "gen_ops_table.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


def test_docs_program_md_lists_exactly_the_kernels() -> None:
    gen = _gen()
    text = gen.PAGE.read_text(encoding="utf-8")
    assert gen.render(text, KERNELS) == text, "docs/program.md is stale: run scripts/gen_ops_table.py"
    listed = {line.split("`")[1] for line in text.splitlines() if line.startswith(("| `aten.", "| `refereed."))}
    assert listed == set(KERNELS)


def test_a_kernel_added_without_regenerating_fails_the_check() -> None:
    gen = _gen()
    text = gen.PAGE.read_text(encoding="utf-8")
    more = dict(KERNELS)
    more["aten.cumsum.default"] = KERNELS["aten.sum.default"]  # a kernel that landed, the page not regenerated
    assert gen.render(text, more) != text
    fewer = dict(KERNELS)
    del fewer["aten.mm.default"]
    assert gen.render(text, fewer) != text


def test_a_kernel_in_an_unclassified_or_unknown_section_is_an_error() -> None:
    gen = _gen()
    spec = KERNELS["aten.mm.default"]
    for section in ("No such heading", "docs/repops/linalg.md: Engines"):
        bad = {"aten.mm.default": type(spec)(spec.name, spec.fast, spec.reference, section)}
        with pytest.raises(gen.TableError, match="section"):
            gen.table(bad)


def test_every_link_names_a_heading_of_its_page() -> None:
    gen = _gen()
    for _, heading, _ in gen.rows(KERNELS):
        assert (gen.DOCS / heading.page).is_file()
        assert heading in gen.headings()


def test_the_script_check_mode_agrees() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen_ops_table.py"), "--check"],
                          capture_output=True, text=True, cwd=ROOT)  # fmt: skip
    assert done.returncode == 0, done.stderr
