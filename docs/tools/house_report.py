"""The house's shape in numbers, for a checkout: what issue 22 measures before and after.

    python docs/tools/house_report.py [ROOT]          # ROOT: a checkout (default: this one)

Reads the Python under `conversion/`, `gates/` and `oracles/` (and the Swift under
`ios/Sources/` for repeated lines) as text and syntax trees; runs nothing of the project. Prints:

- import circles (groups of modules that import each other, any import in the file) and upward
  imports: `conversion/core` importing anything above it, a model importing another model or the
  CLI, any module but `conversion/cli/registry.py` outside a model's folder importing the model;
- repeated blocks: places where six or more consecutive code lines (blank lines, comments and
  imports skipped, white space folded) stand again in another place, counted as pairs of places;
- the five longest functions and the five largest files (lines).
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PY_ROOTS = ("conversion", "gates", "oracles")
RUN = 6  # lines that make a repeated block


def model_folders(root: Path) -> tuple[str, ...]:
    """The folders of `conversion/` that are models: their `__init__.py` assigns ``MODEL_NAME``
    (as `conversion/cli/registry.py` finds them; read as a syntax tree, nothing imported)."""
    found = []
    for init in sorted((root / "conversion").glob("*/__init__.py")):
        tree = ast.parse(init.read_text())
        names = {
            t.id
            for node in tree.body
            if isinstance(node, (ast.Assign, ast.AnnAssign))
            for t in (node.targets if isinstance(node, ast.Assign) else [node.target])
            if isinstance(t, ast.Name)
        }
        if "MODEL_NAME" in names:
            found.append(init.parent.name)
    return tuple(found)


def _py_files(root: Path) -> list[Path]:
    return sorted(p for d in PY_ROOTS for p in (root / d).rglob("*.py") if p.is_file())


def _module(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(root: Path, path: Path, tree: ast.AST) -> set[str]:
    """Every module `path` imports (absolute names; relative ones resolved)."""
    me = _module(root, path)
    package = me if path.name == "__init__.py" else me.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            out.add(base)
            out.update(f"{base}.{a.name}" for a in node.names)
    return out


def _layer(module: str, models: tuple[str, ...]) -> tuple[str, int]:
    """(room, rank): core 0; fixtures, oracles, gates 1; each model 2; device 3; cli 4."""
    parts = module.split(".")
    if parts[0] != "conversion":
        return parts[0], 1
    room = parts[1] if len(parts) > 1 else ""
    if room in ("core", "__init__", ""):
        return "core", 0
    if room in models:
        return room, 2
    if room == "fixtures":
        return room, 1
    if room == "device":
        return room, 3
    if room in ("cli", "swift_fixtures"):
        return "cli", 4
    return room, 2


def _graph(root: Path) -> dict[str, set[str]]:
    known = {_module(root, p): p for p in _py_files(root)}
    graph: dict[str, set[str]] = {}
    for module, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {m for m in _imports(root, path, tree) if m in known and m != module}
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected groups of two or more modules (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _upward(graph: dict[str, set[str]], models: tuple[str, ...]) -> list[str]:
    out = []
    for src, targets in sorted(graph.items()):
        s_room, s_rank = _layer(src, models)
        for dst in sorted(targets):
            d_room, d_rank = _layer(dst, models)
            if s_room == d_room:
                continue
            if d_rank > s_rank:
                out.append(f"{src} -> {dst} (up)")
            elif d_room in models and src != "conversion.cli.registry":
                out.append(f"{src} -> {dst} (a model by name)")
    return out


def _code_lines(path: Path) -> list[tuple[int, str]]:
    skip = ("#", "//", "import ", "from ")
    out = []
    for n, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = " ".join(raw.split())
        if not line or line.startswith(skip) or line in ("(", ")", "{", "}", "]", "[", '"""'):
            continue
        out.append((n, line))
    return out


def _repeated_pairs(files: list[Path]) -> int:
    """Pairs of places (file, first line) whose next RUN code lines are the same text,
    counting one pair per maximal repeated stretch."""
    seen: dict[tuple[str, ...], list[tuple[Path, int]]] = defaultdict(list)
    for path in files:
        lines = _code_lines(path)
        for i in range(len(lines) - RUN + 1):
            key = tuple(text for _, text in lines[i : i + RUN])
            seen[key].append((path, i))
    pairs: set[tuple[tuple[Path, int], tuple[Path, int]]] = set()
    for places in seen.values():
        if len(places) < 2 or len(places) > 8:  # more than 8: boilerplate, not a copy
            continue
        for a in range(len(places)):
            for b in range(a + 1, len(places)):
                pairs.add((places[a], places[b]))
    # A stretch of RUN + k repeated lines gives k + 1 overlapping windows: count it once.
    starts = {(x, y) for x, y in pairs if ((x[0], x[1] - 1), (y[0], y[1] - 1)) not in pairs}
    return len(starts)


def _longest_functions(files: list[Path], root: Path, n: int = 5) -> list[tuple[int, str]]:
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                size = node.end_lineno - node.lineno + 1
                found.append((size, f"{path.relative_to(root)}:{node.name}"))
    return sorted(found, reverse=True)[:n]


def report(root: Path) -> str:
    files = _py_files(root)
    graph = _graph(root)
    circles = _circles(graph)
    upward = _upward(graph, model_folders(root))
    swift = sorted((root / "ios" / "Sources").rglob("*.swift"))
    sizes = sorted(
        (
            (len(p.read_text(encoding="utf-8").splitlines()), str(p.relative_to(root)))
            for p in files
        ),
        reverse=True,
    )
    lines = [
        f"python files: {len(files)}, lines: {sum(s for s, _ in sizes)}",
        f"import circles: {len(circles)}" + "".join(f"\n  {' <-> '.join(c)}" for c in circles),
        f"upward or by-name imports: {len(upward)}" + "".join(f"\n  {u}" for u in upward),
        f"repeated blocks (>= {RUN} code lines), python: {_repeated_pairs(files)}, "
        f"swift (ios/Sources): {_repeated_pairs(swift)}",
        "longest functions:"
        + "".join(f"\n  {s:4d}  {name}" for s, name in _longest_functions(files, root)),
        "largest files:" + "".join(f"\n  {s:4d}  {name}" for s, name in sizes[:5]),
        f"files over 500 lines: {sum(s > 500 for s, _ in sizes)}",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    print(report(Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parents[2]))
