"""The runner's layers, read off its imports (ast, nothing imported):

  the top       the package root's modules: cli (the command), plugin (the
                pytest plugin: a run's hooks), __main__. They may import
                everything; the root holds nothing else but __init__, whose
                only content (the version) any module may import.
  the products  every other sub-package (perf, report, fleet, qualify, doctor,
                export, and any added later): each imports itself and the run
                core, never another product and never the top.
  the run core  core/: imports itself and nothing else of the package.

Inside the package, imports are relative (`from ..core.fmt import one_line`)
and plain: no module is imported by a name in a string (importlib,
__import__), which neither a reader nor this test could follow.

A type-only import (under TYPE_CHECKING) counts like any other: it names
what a module is made of all the same."""

from __future__ import annotations

import ast
from pathlib import Path

from gc_testutil import REPO_ROOT

PACKAGE = REPO_ROOT / "runner" / "gpuconform"
CORE = "core"
TOP = ("__main__", "cli", "plugin")
ROOT = "the package root"  # gpuconform/__init__.py: the version, nothing else


def _dotted(path: Path, package: Path) -> list[str]:
    """gpuconform/perf/judge.py -> ["gpuconform", "perf", "judge"] (a
    package's __init__.py: the package's own name)."""
    parts = [package.name, *path.relative_to(package).with_suffix("").parts]
    return parts[:-1] if parts[-1] == "__init__" else parts


def _unit(parts: list[str], package: Path) -> str:
    """Which layer a dotted name (the package's first) lies in: a
    sub-package's name (CORE or a product), "top" for a root module, ROOT
    for the package itself or a name of its __init__."""
    if len(parts) < 2:
        return ROOT
    if (package / parts[1] / "__init__.py").is_file():
        return parts[1]
    if (package / f"{parts[1]}.py").is_file() and parts[1] != "__init__":
        return "top"
    return ROOT


def _targets(node: ast.ImportFrom | ast.Import, here: list[str], is_pkg: bool,
             name: str) -> list[list[str]]:
    """The dotted names of the package an import statement reaches: X for
    `from X import a` and `import X`; for `from . import a, b` (names in a
    package: modules, or what its __init__ holds), each of them."""
    if isinstance(node, ast.Import):
        return [a.name.split(".") for a in node.names if a.name.split(".")[0] == name]
    if node.level == 0:
        if not node.module or node.module.split(".")[0] != name:
            return []
        base = node.module.split(".")
    else:
        pkg = here if is_pkg else here[:-1]
        base = pkg[:len(pkg) - (node.level - 1)] + (node.module.split(".") if node.module else [])
    return [base + [a.name] for a in node.names] if node.module is None else [base]


def _describe(unit: str) -> str:
    if unit == CORE:
        return "the run core (core)"
    if unit == "top":
        return "the top (cli, plugin)"
    return f"the product {unit}"


def layer_problems(package: Path, shown_from: Path | None = None) -> list[str]:
    """Every import of package that breaks the layers, as
    "FILE:LINE: WHO imports WHAT (the statement): why", FILE relative to
    shown_from (default: the package's parent); and every module at the
    root that is not a top one."""
    problems: list[str] = []
    name = package.name
    for path in sorted(package.rglob("*.py")):
        here = _dotted(path, package)
        rel = path.relative_to(shown_from or package.parent)
        if path.parent == package and path.stem not in (*TOP, "__init__"):
            problems.append(f"{rel}: a module at the package root, which holds only the top "
                            f"({', '.join(TOP)}): put it in {CORE}/ or in its product's package")
        src = path.read_text(encoding="utf-8")
        me = _unit(here, package)
        found: list[tuple[int, str]] = []  # (line, problem): in line order at the end
        for node in ast.walk(ast.parse(src, str(path))):
            if isinstance(node, ast.Call):
                f = node.func
                called = (f.attr if isinstance(f, ast.Attribute)
                          else f.id if isinstance(f, ast.Name) else "")
                if called in ("import_module", "__import__"):
                    found.append((node.lineno, f"{called}(): a module imported by a name in a "
                                  "string: import it with a plain import"))
                continue
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            stmt = " ".join((ast.get_source_segment(src, node) or "").split())
            absolute = isinstance(node, ast.Import) or node.level == 0
            targets = _targets(node, here, path.name == "__init__.py", name)
            if absolute and targets:
                found.append((node.lineno, f"`{stmt}`: an absolute import inside the package: "
                              "import relatively"))
                continue
            for them in dict.fromkeys(_unit(t, package) for t in targets):  # once a layer
                if me == ROOT and them != ROOT:
                    found.append((node.lineno, f"the package root imports {_describe(them)} "
                                  f"(`{stmt}`): importing {name} must import nothing else"))
                if me in ("top", ROOT) or them in (me, CORE, ROOT):
                    continue
                if me == CORE:
                    why = "the run core imports nothing above it"
                elif them == "top":
                    why = "a product imports only the run core and itself"
                else:
                    why = "a product never imports another product: what both need belongs " \
                          "in the run core"
                found.append((node.lineno, f"{_describe(me)} imports {_describe(them)} "
                                             f"(`{stmt}`): {why}"))
        problems.extend(f"{rel}:{line}: {what}" for line, what in sorted(found))
    return problems


def test_the_runner_keeps_its_layers() -> None:
    assert (PACKAGE / CORE / "__init__.py").is_file()
    problems = layer_problems(PACKAGE, REPO_ROOT)
    assert not problems, "\n".join(problems)


def test_the_products_are_sub_packages_beside_the_core() -> None:
    """What the check walks: without products or with the top missing, it
    would pass having checked nothing."""
    subs = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert CORE in subs and len(subs - {CORE}) >= 5, subs
    assert all((PACKAGE / f"{t}.py").is_file() for t in TOP)


# ------------------------------------------------- the check on made-up trees


def _tree(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "gpuconform"
    for rel, text in {"__init__.py": '__version__ = "0"\n', "cli.py": "", "plugin.py": "",
                      "__main__.py": "", "core/__init__.py": "", "core/fmt.py": "",
                      "perf/__init__.py": "", "report/__init__.py": "", **files}.items():
        (pkg / rel).parent.mkdir(parents=True, exist_ok=True)
        (pkg / rel).write_text(text)
    return pkg


def test_what_the_layers_allow(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "cli.py": "from .perf import gate\nfrom .report.report import write_html\n"
                  "from .core.fmt import one_line\n",
        "plugin.py": "from .perf.judge import judge_run\n",
        "__main__.py": "from .cli import main\n",
        "perf/gate.py": "from ..core import fmt\nfrom . import judge\nfrom .. import __version__\n",
        "perf/judge.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n"
                         "    from ..core.fmt import X\nfrom .gate import g\n",
        "core/runend.py": "from .fmt import one_line\nfrom . import fmt\nimport json\n",
        "report/report.py": "from ..core.page import Badge\n",
    })
    assert layer_problems(pkg) == []


def test_each_breach_is_named_with_its_file_line_and_both_layers(tmp_path: Path) -> None:
    pkg = _tree(tmp_path, {
        "perf/judge.py": "import os\nfrom ..report.report import write_html\n",
        "report/report.py": "from ..perf import gate, judge\n",
        "core/runend.py": "\n\nfrom ..perf.judge import judge_run\nfrom .. import plugin\n",
        "core/options.py": "def f():\n    from ..cli import main\n",
        "perf/gate.py": "from gpuconform.core.fmt import one_line\n",
        "report/page.py": "import importlib\nm = importlib.import_module('gpuconform.perf')\n",
        "shard.py": "",
        "__init__.py": "from .core import fmt\n",
    })
    assert layer_problems(pkg) == [
        "gpuconform/__init__.py:1: the package root imports the run core (core) "
        "(`from .core import fmt`): importing gpuconform must import nothing else",
        "gpuconform/core/options.py:2: the run core (core) imports the top (cli, plugin) "
        "(`from ..cli import main`): the run core imports nothing above it",
        "gpuconform/core/runend.py:3: the run core (core) imports the product perf "
        "(`from ..perf.judge import judge_run`): the run core imports nothing above it",
        "gpuconform/core/runend.py:4: the run core (core) imports the top (cli, plugin) "
        "(`from .. import plugin`): the run core imports nothing above it",
        "gpuconform/perf/gate.py:1: `from gpuconform.core.fmt import one_line`: an absolute "
        "import inside the package: import relatively",
        "gpuconform/perf/judge.py:2: the product perf imports the product report "
        "(`from ..report.report import write_html`): a product never imports another "
        "product: what both need belongs in the run core",
        "gpuconform/report/page.py:2: import_module(): a module imported by a name in a "
        "string: import it with a plain import",
        "gpuconform/report/report.py:1: the product report imports the product perf "
        "(`from ..perf import gate, judge`): a product never imports another product: "
        "what both need belongs in the run core",
        "gpuconform/shard.py: a module at the package root, which holds only the top "
        "(__main__, cli, plugin): put it in core/ or in its product's package",
    ]
