"""The Python package is cut along the pipeline (docs/architecture.md): its import graph has no
cycle; the framework-free modules import neither torch nor jax, not even lazily; nothing outside
the PyTorch adapter (``solar.torch``) imports torch when it is imported, and nothing outside the
adapters loads a model file; the JAX adapter never imports torch, and runs in a virtual
environment that has no torch at all."""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import solar._core

PACKAGE = Path(__file__).resolve().parents[2] / "python" / "solar"
MODELS = Path(__file__).resolve().parent / "jax_models"

# The PyTorch adapter's modules that a framework-free module may import (lazily): its entries,
# which import torch only when a function of theirs is called.
ADAPTER_ENTRIES = {"solar.torch.serve"}

# Modules no framework may reach: every import in them, at any depth, is checked.
FRAMEWORK_FREE = (
    "solar",
    "solar.ir",
    "solar.document",
    "solar.verify",
    "solar.verify.whole",
    "solar.verify.float64",
    "solar.verify.budget",
    "solar.verify.per_op",
    "solar.options",
    "solar.stages",
    "solar.adapters",
    "solar.serving",
    "solar._files",
    "solar.timing.measurement",
    "solar.timing.clock",
    "solar._modelfile",
    "solar._names",
    "solar.cli",
)


def modules() -> dict[str, Path]:
    """Every module of the package by dotted name."""
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        found[".".join(parts)] = path
    return found


def imports(name: str, path: Path, known: set[str]) -> list[str]:
    """The modules ``name`` imports, anywhere in its code (inside functions too). ``from P
    import X`` imports the module P.X when there is one (``solar._core``, the extension, is
    one), else P; the parent package that Python imports first is not counted (every module has
    that edge)."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            for a in node.names:
                full = f"{target}.{a.name}"
                found.append(full if full in known or full == "solar._core" else target)
    return found


def graph() -> dict[str, set[str]]:
    mods = modules()
    known = set(mods)
    return {m: {i for i in imports(m, p, known) if i in known and i != m} for m, p in mods.items()}


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(edges[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    # The checker itself: a -> b -> c -> a is one cycle, d -> a is not part of it.
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_import_graph_has_no_cycle():
    edges = graph()
    wanted = {"solar.stages", "solar.verify", "solar.adapters", "solar.document", "solar.ir"}
    assert wanted <= set(edges)
    assert cycles(edges) == []


# Functions that take more than MAX_PARAMETERS, with why (none may be added).
WIDE_FUNCTIONS: set[str] = set()
MAX_PARAMETERS = 6  # besides self/cls and **options (docs/architecture.md)


def test_no_function_takes_more_than_six_parameters():
    wide = []
    for name, path in modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            a = node.args
            params = [*a.posonlyargs, *a.args, *a.kwonlyargs] + ([a.vararg] if a.vararg else [])
            if params and params[0].arg in ("self", "cls"):
                params = params[1:]
            if len(params) > MAX_PARAMETERS and f"{name}.{node.name}" not in WIDE_FUNCTIONS:
                wide.append(f"{name}.{node.name} ({len(params)})")
    assert wide == []


# The package by role (docs/architecture.md): at most this many modules at its top level, the
# rest in packages (torch/, jax/, llm/, timing/, suites/).
MAX_TOP_LEVEL = 14


def test_the_package_keeps_at_most_fourteen_top_level_modules():
    top = sorted(name for name, path in modules().items() if path.parent == PACKAGE)
    assert len(top) <= MAX_TOP_LEVEL, top
    # torch is imported (at any depth) by no module outside the adapters but these, each an
    # entry that needs PyTorch to time or to run the models it is given
    torch_users = {
        name
        for name, path in modules().items()
        if not name.startswith(("solar.torch", "solar.jax"))
        and re.search(r"^\s*(import torch|from torch)\b", path.read_text(), re.M)
    }
    assert torch_users <= {"solar.timing.calibrate", "solar.llm.analysis", "solar.llm.tasks"}, (
        torch_users
    )


MAX_LINES = 100  # a Python function's lines, its signature to its last line (issue 41)


def test_no_function_is_longer_than_a_hundred_lines():
    long = []
    for name, path in sorted(modules().items()):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_LINES:
                    long.append(f"{name}.{node.name} ({lines})")
    assert long == []


def test_each_rule_between_options_is_written_once():
    # solar.options is the one place: the rule, the optimizer list and the training check.
    text = {name: path.read_text() for name, path in modules().items()}
    for needle in ("needs --train", '"sgd", "adam", "adamw"', "cannot be given with --serve"):
        where = sorted(name for name, t in text.items() if needle in t)
        assert where == ["solar.options"], (needle, where)


def test_framework_free_modules_never_import_a_framework():
    mods = modules()
    for name in FRAMEWORK_FREE:
        found = imports(name, mods[name], set(mods))
        frameworks = sorted({i for i in found if re.match(r"(torch|jax|flax)(\.|$)", i)})
        assert frameworks == [], f"{name} imports {frameworks}"
        # ... nor the PyTorch capture, which imports torch (the dispatcher may pick the
        # adapters' entries, each only when its framework is the program's).
        inside = {i for i in found if i.startswith("solar.torch.")} - ADAPTER_ENTRIES
        assert not inside, (name, inside)


def _module_level_imports(tree: ast.Module) -> list[str]:
    """The modules imported when the module is (its top-level statements, those inside a
    top-level ``if`` or ``try`` too; not inside a function or class, nor under
    ``if TYPE_CHECKING``)."""
    found: list[str] = []
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import):
            found.extend(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            found.append(node.module or "")
        elif isinstance(node, ast.If):
            if not (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING"):
                todo.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            todo.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                todo.extend(handler.body)
    return found


def test_the_checker_finds_a_module_level_import():
    # The checker itself: the import at the top and the one in a try count; the one in a
    # function and the one under TYPE_CHECKING do not.
    code = (
        "import numpy\ntry:\n    import torch.fx\nexcept ImportError:\n    pass\n"
        "if TYPE_CHECKING:\n    import jax\ndef f():\n    import flax\n"
    )
    assert sorted(_module_level_imports(ast.parse(code))) == ["numpy", "torch.fx"]


def test_only_the_torch_adapter_imports_torch_at_module_level():
    eager = []
    for name, path in sorted(modules().items()):
        if name == "solar.torch" or name.startswith("solar.torch."):
            continue
        found = _module_level_imports(ast.parse(path.read_text()))
        eager += [f"{name}: {i}" for i in found if re.match(r"torch(\.|$)", i)]
    assert eager == []


# The one module outside the PyTorch adapter that imports torch itself (inside its functions):
# the calibration's timing of PyTorch kernels on a GPU.
TORCH_OUTSIDE_THE_ADAPTER = ["solar.timing.calibrate"]


def test_torch_itself_is_imported_by_the_torch_adapter_only():
    # Any import of torch, at any depth of a module (inside functions too): outside solar.torch
    # a module reaches PyTorch through the adapter (``from solar import torch``), never itself.
    found = set()
    for name, path in sorted(modules().items()):
        if name == "solar.torch" or name.startswith("solar.torch."):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                continue
            if any(re.match(r"torch(\.|$)", n) for n in names):
                found.add(name)
    assert sorted(found) == TORCH_OUTSIDE_THE_ADAPTER


# What loads a model file (imports it and builds its model): the adapters' own loaders.
LOADERS = (
    "import_model_file",
    "load_model_file",
    "load_model",
    "model_file",
    "model_module",
    "capture_model_file",
)


def test_nothing_outside_the_adapters_loads_a_model_file():
    loading = []
    for name, path in sorted(modules().items()):
        if name.startswith(("solar.torch", "solar.jax")) or name == "solar._modelfile":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                called = f.id if isinstance(f, ast.Name) else getattr(f, "attr", None)
                if called in LOADERS:
                    loading.append(f"{name}: {called}")
    assert loading == []


def test_the_jax_adapter_never_reaches_torch():
    mods = modules()
    edges = graph()
    reached, todo = set(), [m for m in mods if m == "solar.jax" or m.startswith("solar.jax.")]
    while todo:
        m = todo.pop()
        if m in reached:
            continue
        reached.add(m)
        todo.extend(edges[m])
    assert not {m for m in reached if m.startswith("solar.torch")}
    for m in reached:
        assert not [i for i in imports(m, mods[m], set(mods)) if re.match(r"torch(\.|$)", i)], m


def _venv_without_torch(tmp_path: Path) -> tuple[Path, dict]:
    """A virtual environment whose packages are this Python's minus torch's (symlinked), plus
    the solar package under test; the environment to run its Python in."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    farm = tmp_path / "packages"
    farm.mkdir()
    import jax
    import numpy

    bases = {Path(m.__file__).resolve().parents[1] for m in (jax, numpy)}
    torch_like = re.compile(r"(torch|torchgen|functorch|solar)([-_.]|$)", re.IGNORECASE)
    for base in sorted(bases):
        for entry in sorted(os.listdir(base)):
            if torch_like.match(entry) or entry.endswith(".pth") or (farm / entry).exists():
                continue
            (farm / entry).symlink_to(base / entry)
    # The package under test, not resolved. An editable install keeps the sources and the built
    # files (_core, bin, data) in two folders: the package seen here is both, merged.
    package = farm / "solar"
    package.mkdir()
    for part in sorted({Path(solar.__file__).parent, Path(solar._core.__file__).parent}):
        for entry in sorted(os.listdir(part)):
            if entry != "__pycache__" and not (package / entry).exists():
                (package / entry).symlink_to(part / entry)
    Path(purelib, "solar-test-packages.pth").write_text(f"{farm}\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PYTHONNOUSERSITE"] = "1"
    return python, env


def test_jax_model_analyses_in_a_venv_without_torch(tmp_path):
    pytest.importorskip("jax")
    pytest.importorskip("flax")
    python, env = _venv_without_torch(tmp_path)
    no_torch = subprocess.run(
        [str(python), "-c", "import torch"], capture_output=True, text=True, env=env
    )
    assert no_torch.returncode != 0 and "No module named 'torch'" in no_torch.stderr
    out, page = tmp_path / "r.json", tmp_path / "r.html"
    cmd = [str(python), "-m", "solar", "analyze", str(MODELS / "mlp.py"), "--json", str(out)]
    run = subprocess.run(
        [*cmd, "--html", str(page)], capture_output=True, text=True, env=env, cwd=tmp_path
    )
    assert run.returncode == 0, run.stderr
    report = json.loads(out.read_text())
    assert report["verification"]["status"] == "passed"
    assert report["capture"]["framework"] == "jax"
    # Dense 16->32, 32->32, 32->4 over 8 rows: 8 * (16*32 + 32*32 + 32*4) = 13312 MACs
    assert report["totals"]["macs"] == 8 * (16 * 32 + 32 * 32 + 32 * 4)
    assert "<html" in page.read_text()
    check = "import sys, solar, solar.jax, solar.adapters; print('torch' in sys.modules)"
    imported = subprocess.run(
        [str(python), "-c", check], capture_output=True, text=True, env=env, check=True
    )
    assert imported.stdout.strip() == "False"
