"""The import layering that docs/ARCHITECTURE.md states, checked on the source.

The package is a stack of subpackages; a module may import from its own subpackage and from
those below it, never from one above. The composition root (``app``) and the command line
(``cli``) sit on top. The check reads the source with :mod:`ast`, so it sees every import,
also one inside a function, and it runs nothing.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "engram_md"

# Lowest first. The names are the architecture's parts; ARCHITECTURE.md draws the same order.
LAYERS = (
    "core",
    "text",
    "extract",
    "store",
    "organize",
    "ingest",
    "index",
    "recall",
    "consolidate",
    "maintain",
    "integrations",
    "",  # the top: app.py (composition root), the cli/ package, __main__.py
)

# The only modules that import these libraries: each sits behind one seam.
LIBRARY_OWNERS = {
    "lancedb": {"index/lance.py"},
    "onnxruntime": {"text/embeddings.py", "text/prepared_model.py"},
    "openai": {"extract/llm_client.py", "text/embeddings.py"},
    "watchdog": {"ingest/daemon.py", "index/memwatch.py"},
    "mcp": {"integrations/mcp_server.py"},
    "uvicorn": {"integrations/mcp_server.py"},
}

# Where an import inside a function body is the design, not an accident (each says why in a
# comment at the import): the CLI keeps LanceDB, onnxruntime and openai out of the start-up of
# commands that never open the index.
LAZY_INTERNAL_IMPORTS = {
    "cli/importing.py",
    "cli/ingesting.py",
    "cli/reading.py",
    "cli/maintaining.py",
    "cli/integrating.py",
    "cli/serving.py",
    # The console script's entry: the hook runs on the standard library alone, and every
    # other command loads the CLI only once it is known not to be the hook.
    "hook.py",
}


@dataclass(frozen=True)
class Import:
    module: str  # e.g. engram_md.store.factfile (resolved from relative form)
    line: int
    top_level: bool


def _module_name(path: Path) -> str:
    rel = path.relative_to(PACKAGE.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path, module: str | None = None) -> list[Import]:
    """Every import in ``path``, resolved as though the file were ``module`` (by default the
    module it is)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    top = {id(node) for node in tree.body}
    # `if TYPE_CHECKING:` blocks at module level count as top level.
    for node in tree.body:
        if isinstance(node, ast.If):
            top.update(id(child) for child in node.body)
    package = (module or _module_name(path)).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found: list[Import] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [Import(a.name, node.lineno, id(node) in top) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - node.level + 1]
                name = ".".join([*base, node.module] if node.module else base)
            else:
                name = node.module or ""
            names = [name]
            if not node.module:  # `from . import x`: x is a module
                names = [f"{name}.{a.name}" for a in node.names]
            found += [Import(n, node.lineno, id(node) in top) for n in names]
    return found


def _layer(module: str) -> str:
    parts = module.split(".")
    if len(parts) > 2 and parts[1] in LAYERS:
        return parts[1]
    if len(parts) == 2 and parts[1] in LAYERS:
        return parts[1]  # the subpackage itself
    return ""


SOURCES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_sits_in_a_named_layer() -> None:
    strays = [
        str(p.relative_to(PACKAGE))
        for p in SOURCES
        if p.parent != PACKAGE and p.relative_to(PACKAGE).parts[0] not in (*LAYERS, "cli")
    ]
    assert strays == []
    top = sorted(p.name for p in SOURCES if p.parent == PACKAGE)
    assert top == ["__init__.py", "__main__.py", "app.py", "hook.py"]


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_imports_from_a_layer_above_it(path: Path) -> None:
    own = LAYERS.index(_layer(_module_name(path)))
    upward = [
        f"line {imp.line}: {imp.module}"
        for imp in _imports(path)
        if imp.module.startswith("engram_md.") and LAYERS.index(_layer(imp.module)) > own
    ]
    assert upward == [], f"{path.relative_to(PACKAGE)} imports from a layer above it"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_package_imports_sit_at_the_top_of_modules(path: Path) -> None:
    rel = str(path.relative_to(PACKAGE))
    if rel in LAZY_INTERNAL_IMPORTS:
        return
    hidden = [
        f"line {imp.line}: {imp.module}"
        for imp in _imports(path)
        if imp.module.startswith("engram_md") and not imp.top_level
    ]
    assert hidden == [], f"{rel} imports package modules inside a function"


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_deferred_library_import_says_why(path: Path) -> None:
    """A third-party import inside a function (to keep start-up light, or to turn a missing
    package into a clear error) carries a comment on its line or the line above."""
    lines = path.read_text(encoding="utf-8").splitlines()
    silent = [
        f"line {imp.line}: {imp.module}"
        for imp in _imports(path)
        if not imp.top_level
        and not imp.module.startswith("engram_md")
        and "#" not in lines[imp.line - 1]
        and "#" not in lines[imp.line - 2]
        and not _in_commented_group(lines, imp.line)
    ]
    assert silent == []


def _in_commented_group(lines: list[str], line: int) -> bool:
    """True when the import belongs to a run of imports that a comment line opens."""
    i = line - 2
    while i >= 0 and lines[i].strip().startswith(("import ", "from ")):
        i -= 1
    return i >= 0 and lines[i].strip().startswith("#")


@pytest.mark.parametrize("library", sorted(LIBRARY_OWNERS))
def test_each_library_is_imported_behind_one_seam(library: str) -> None:
    users = {
        str(p.relative_to(PACKAGE))
        for p in SOURCES
        for imp in _imports(p)
        if imp.module == library or imp.module.startswith(library + ".")
    }
    assert users == LIBRARY_OWNERS[library]


def test_the_checker_sees_an_upward_import(tmp_path: Path) -> None:
    """The rules above can fail: a relative import from core up into recall is resolved and
    ranked above its importer, and one inside a function is not at the top."""
    source = tmp_path / "x.py"
    source.write_text(
        "from ..recall.recaller import Recaller\n\ndef f():\n    from . import paths\n",
        encoding="utf-8",
    )
    upward, hidden = _imports(source, "engram_md.core.x")
    assert upward.module == "engram_md.recall.recaller" and upward.top_level
    assert LAYERS.index(_layer(upward.module)) > LAYERS.index("core")
    assert hidden.module == "engram_md.core.paths" and not hidden.top_level
