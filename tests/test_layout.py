"""The test tree itself: pytest (rootdir-relative, no packages) refuses two test files of one basename."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path


def test_every_test_file_has_its_own_basename() -> None:
    by_name: dict[str, list[str]] = defaultdict(list)
    root = Path(__file__).parent
    for path in root.rglob("test_*.py"):
        by_name[path.name].append(str(path.relative_to(root)))
    clashes = {name: paths for name, paths in by_name.items() if len(paths) > 1}
    assert not clashes, f"test files sharing a basename (pytest cannot import both): {clashes}"
