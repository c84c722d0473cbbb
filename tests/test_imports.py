"""No import circle in `src/distgraph`, and its rooms on floors, each importing only from below.

The graph has one node per module (a package's `__init__.py` is the package's node) and an arrow
A -> B for every import statement in A that names B, read from the source (nothing is imported):

- every `import` counts wherever it stands: module level, inside a function (a lazy import that
  runs back up is still an arrow back up), and under `if TYPE_CHECKING:`;
- `from P import x` where `P.x` is a submodule is an arrow to `P.x` alone, not to `P`: a module
  that names a sibling through its package (`from . import sibling`) depends on the sibling, and
  a package's `__init__` importing its submodules does not make a circle with them;
- `from P import x` where `P`'s `__init__` gives `x` through its `lazy_exports` table is an arrow
  to the table's module: that module is what runs, while `P`'s other entries are not loaded then.
  A table's entries are not arrows from the package itself (they run only when named);
- any other `from P import x` is an arrow to `P` (its `__init__` runs and defines or re-exports `x`).

Rooms are the package's folders and top-level modules (`partition/` with its `stream/` and `dist/`
is one room; `distgraph` is the package's own `__init__`). They stand on the floors of `FLOORS`,
top to bottom, as docs/architecture.md's package map draws them: a room imports only rooms on
floors below its own. `KNOWN_UP` lists the module arrows that still run up a floor; one that is
gone must leave the list too, so the list is always today's.

`python tests/test_imports.py` prints the circles (strongly connected components), the arrows
inside each, and every arrow that runs up a floor.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
ROOT = "distgraph"

FLOORS = [  # top to bottom; docs/architecture.md's package map says what each room is for
    {"cli", "distgraph"},
    {"results", "server", "metrics"},
    {"dataloading", "kge"},
    {"dist_graph", "launch"},
    {"sampling", "optim"},
    {"distributed"},
    {"kvstore", "partition"},
    {"data", "constructors"},
    {"tensor_graph"},
    {"transforms", "nn"},
    {"array_graph", "block", "direct_io", "rpc"},
    {"arrays", "cluster", "files", "graphbolt", "ids", "progress"},
    {"errors", "function", "lazy", "local_scope", "malloc", "native", "version"},
]

KNOWN_UP = {  # arrows that still run up a floor, each a change waiting to be made
    ("distgraph.cluster.env", "distgraph.partition.layout"),  # ProcessEnv.job() reads the partition config
    ("distgraph.cluster.env", "distgraph.rpc.auth"),  # ProcessEnv.credentials() builds the job's Credentials
    ("distgraph.partition.dist.coordinator", "distgraph.launch.ssh"),  # the distributed partitioner starts
    ("distgraph.partition.dist.processes", "distgraph.launch.ssh"),  # its host processes with the launcher
    ("distgraph.partition.dist.processes", "distgraph.launch.plan"),
    ("distgraph.partition.dist.processes", "distgraph.launch.runner"),
    ("distgraph.dist_graph.graph", "distgraph.dataloading.pair_graph"),  # DistGraph.edge_subgraph's result
    ("distgraph.distributed.optim", "distgraph.optim"),  # dgl.distributed.optim's path
    ("distgraph.distributed.partitions", "distgraph.sampling"),  # in_subgraph: every in-edge sampled
    ("distgraph.distributed.runtime", "distgraph.server"),  # initialize() serves in the server role
}


def modules(src: Path = SRC) -> dict[str, Path]:
    """Every module of the package by dotted name (a package by its own name, from its `__init__.py`)."""
    found = {}
    for path in sorted((src / ROOT).rglob("*.py")):
        parts = list(path.relative_to(src).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def lazy_table(tree: ast.Module, package: str) -> dict[str, tuple[str, str]]:
    """The `name -> (module, attribute)` map of a package `__init__`'s `lazy_exports(__name__, {...})` table."""
    tables: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            tables[node.targets[0].id] = node.value
    out: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        call = node.value if isinstance(node, ast.Assign) else None
        if not (isinstance(call, ast.Call) and getattr(call.func, "id", None) == "lazy_exports"):
            continue
        table = call.args[1]
        table = tables.get(table.id, table) if isinstance(table, ast.Name) else table
        env = {"__builtins__": {"range": range}}
        for name, where in eval(compile(ast.Expression(table), "<lazy table>", "eval"), env).items():
            module, _, attr = where.partition(":")
            out[name] = resolve(module, package, is_package=True), attr
    return out


def resolve(target: str, module: str, *, is_package: bool, level: int | None = None) -> str:
    """The absolute name of `target` imported from `module` (`level` leading dots when given apart)."""
    if level is None:
        level = len(target) - len(target.lstrip("."))
        target = target[level:]
    if level == 0:
        return target
    base = module.split(".")
    base = base[:len(base) - level + 1] if is_package else base[:len(base) - level]
    return ".".join([*base, target] if target else base)


def source(package: str, name: str, mods: dict[str, Path], lazy: dict[str, dict[str, tuple[str, str]]]) -> str:
    """The module that `from package import name` runs for `name`: the submodule of that name, else the
    module a lazy table entry leads to (through further tables), else `package` itself."""
    while f"{package}.{name}" not in mods and name in lazy.get(package, {}):
        package, name = lazy[package][name]
        if not name:
            return package
    return f"{package}.{name}" if f"{package}.{name}" in mods else package


def import_graph(src: Path = SRC) -> dict[str, set[str]]:
    """Each module's arrows to the other modules of the package (see the module docstring for the rule)."""
    mods = modules(src)
    trees = {name: ast.parse(path.read_text(), str(path)) for name, path in mods.items()}
    lazy = {name: lazy_table(trees[name], name) for name, path in mods.items() if path.name == "__init__.py"}
    graph: dict[str, set[str]] = {name: set() for name in mods}
    for name, tree in trees.items():
        is_package = mods[name].name == "__init__.py"
        for node in ast.walk(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = resolve(node.module or "", name, is_package=is_package, level=node.level)
                targets = [source(base, alias.name, mods, lazy) for alias in node.names]
            for target in targets:
                while target and target not in mods:  # `import a.b.attr`-like names: their module
                    target = target.rpartition(".")[0]
                if target and target != name:
                    graph[name].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, arrows = work[-1]
            nxt = next(arrows, None)
            if nxt is not None:
                if nxt not in index:
                    index[nxt] = low[nxt] = len(index)
                    stack.append(nxt)
                    on_stack.add(nxt)
                    work.append((nxt, iter(sorted(graph[nxt]))))
                elif nxt in on_stack:
                    low[node] = min(low[node], index[nxt])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    component.append(top)
                    if top == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def describe(graph: dict[str, set[str]]) -> str:
    """Each circle with the arrows that stay inside it, one line an arrow."""
    lines = []
    for component in circles(graph):
        lines.append(f"circle of {len(component)}: {', '.join(component)}")
        members = set(component)
        lines += [f"  {a} -> {b}" for a in component for b in sorted(graph[a] & members)]
    return "\n".join(lines)


def room(module: str) -> str:
    """The folder or top-level module a module belongs to (`distgraph` for the package's `__init__`)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else parts[0]


def arrows_up(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """The arrows from a room to a room on its own floor or one above."""
    floor = {r: i for i, rooms in enumerate(FLOORS) for r in rooms}
    return {(a, b) for a, targets in graph.items() for b in targets
            if room(a) != room(b) and floor[room(b)] <= floor[room(a)]}


def test_no_import_circle():
    graph = import_graph()
    assert len(graph) > 100 and sum(map(len, graph.values())) > 300  # the reader sees the package
    assert not circles(graph), "import circles in src/distgraph:\n" + describe(graph)


def test_rooms_import_only_from_floors_below():
    graph = import_graph()
    placed = [r for rooms in FLOORS for r in rooms]
    assert len(placed) == len(set(placed)), "a room on two floors"
    assert set(placed) == {room(m) for m in graph}, "FLOORS must place every room of src/distgraph, and no other"
    up = arrows_up(graph)
    assert up <= KNOWN_UP, "imports that run up a floor (docs/architecture.md, package map):\n" + \
        "\n".join(f"  {a} -> {b}" for a, b in sorted(up - KNOWN_UP))
    assert KNOWN_UP <= up, f"no longer there, remove from KNOWN_UP: {sorted(KNOWN_UP - up)}"


if __name__ == "__main__":
    g = import_graph()
    print(f"{len(g)} modules, {sum(map(len, g.values()))} arrows")
    print(describe(g) or "no circle")
    up = arrows_up(g)
    print(f"{len(up)} arrows up a floor" + "".join(f"\n  {a} -> {b}{'' if (a, b) in KNOWN_UP else '  (new)'}"
                                                 for a, b in sorted(up)))
    sys.exit(1 if circles(g) or up - KNOWN_UP else 0)
