"""Names a package exports and loads on first use (PEP 562), so that importing the package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any


def lazy_exports(package: str, table: Mapping[str, str], namespace: MutableMapping[str, Any]) -> Callable[[str], Any]:
    """The module `__getattr__` of `package`: name -> the submodule of `table[name]`, imported on first use and the
    name then kept in the package's `namespace` (its `globals()`), so each is looked up once."""

    def __getattr__(name: str) -> Any:
        module = table.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        namespace[name] = value
        return value

    return __getattr__
