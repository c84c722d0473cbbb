"""Package attributes imported on first use (PEP 562), so a command that only parses flags
or checks its inputs does not pay for importing torch (about a second here)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
from typing import Any, Callable


def lazy_exports(package: str, table: dict[str, str]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """`__getattr__` and `__dir__` for `package`: `table` maps a public name to
    `".module:attr"`, or to `".module"` when the name is that submodule itself; any other
    submodule is imported when first named too."""

    def __getattr__(name: str) -> Any:
        where = table.get(name)
        if where is None and not name.startswith("_") and importlib.util.find_spec(f"{package}.{name}"):
            where = f".{name}"  # any subpackage, as after an eager import (`distgraph.partition.x`)
        if where is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attr = where.partition(":")
        value = importlib.import_module(module, package)
        if attr:
            value = getattr(value, attr)
        vars(sys.modules[package])[name] = value  # later look-ups skip this function
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *table})

    return __getattr__, __dir__

