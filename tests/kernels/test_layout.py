"""The rules the layout of ``sglang_shims/kernels/`` promises, read from the source.

* no patch imports a private module of ``sglang_shims``: the kernel patches use
  ``kernels.standin`` and ``kernels.surface``;
* nothing outside ``kernels/surface/`` opens the data files it reads (only the generators
  in ``tools/`` write them);
* no private name crosses out of the package that owns it;
* each op family keeps its launch rules in its ``launch.py``, and ``benchmarks/sweep.py``
  takes the candidate spaces from there and records launches through the compile lock's
  seam, never by replacing a module's names;
* the code that regenerates data from the wheels (it reaches the network) lives in
  ``tools/``, not in the runtime package;
* the small rules of the room: one spelling of the "on" values, ``functools.cache`` instead
  of list cells.

Each check also runs on a small program that breaks its rule, so that a check which can no
longer fail is noticed.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.run import REPO

PACKAGE = REPO / "sglang_shims"
KERNELS = PACKAGE / "kernels"
SURFACE = KERNELS / "surface"
OPS = KERNELS / "ops"
DATA_FILES = tuple(sorted(p.name for p in (SURFACE / "data").glob("*.json")))
#: Where the repository's own Python lives (tests read the data through the readers too).
SOURCES = ("sglang_shims", "patches", "benchmarks", "examples", "tools", "tests", "docs")


def _python(*roots: str) -> Iterator[Path]:
    for root in roots:
        yield from sorted((REPO / root).rglob("*.py"))


def _private(part: str) -> bool:
    return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))


def _module_of(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _absolute(node: ast.ImportFrom, importer: str, is_package: bool) -> str:
    """The module a ``from ... import`` names, made absolute."""
    if not node.level:
        return node.module or ""
    base = importer if is_package else importer.rpartition(".")[0]
    for _ in range(node.level - 1):
        base = base.rpartition(".")[0]
    return f"{base}.{node.module}" if node.module else base


def _imports(tree: ast.AST, importer: str, is_package: bool) -> Iterator[tuple[str, str]]:
    """(module, name imported from it or "") for every import, in function bodies too."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield alias.name, ""
        elif isinstance(node, ast.ImportFrom):
            module = _absolute(node, importer, is_package)
            for alias in node.names:
                yield module, alias.name


# ------------------------------------------------------------------ patches


def _private_imports(tree: ast.AST) -> list[str]:
    """The private ``sglang_shims`` modules or names a patch imports."""
    found = []
    for module, name in _imports(tree, "patch", False):
        dotted = f"{module}.{name}" if name else module
        if dotted.split(".")[0] == "sglang_shims" and any(
                _private(part) for part in dotted.split(".")):
            found.append(dotted)
    return found


def test_no_patch_imports_a_private_module() -> None:
    offenders = {}
    for path in sorted((REPO / "patches").glob("*/patch.py")):
        found = _private_imports(ast.parse(path.read_text(encoding="utf-8")))
        if found:
            offenders[path.parent.name] = found
    assert not offenders, offenders
    breaking = "def apply(ctx):\n    from sglang_shims.kernels import _norm\n"
    assert _private_imports(ast.parse(breaking)) == ["sglang_shims.kernels._norm"]


# ------------------------------------------------------------------ the data files


def _docstrings(tree: ast.AST) -> set[int]:
    ids = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant):
            ids.add(id(body[0].value))
    return ids


def _data_readers(tree: ast.AST, writer: bool) -> list[str]:
    """How this code reaches a data file: a string naming one, or a surface module's
    ``DATA`` path (``writer``: allowed as the target of ``write_text`` only)."""
    found = []
    docs = _docstrings(tree)
    written = {id(node.func.value) for node in ast.walk(tree)
               if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
               and node.func.attr == "write_text"}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) \
                and id(node) not in docs and node.value.strip().endswith(DATA_FILES) \
                and not writer:
            found.append(node.value.strip())
        elif isinstance(node, ast.Attribute) and node.attr == "DATA" \
                and not (writer and id(node) in written):
            found.append(ast.unparse(node))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").endswith(
                ("surface.exports", "surface.symbols", "surface.opset")) \
                and any(a.name == "DATA" for a in node.names):
            found.append(f"from {node.module} import DATA")
    return found


GENERATORS = REPO / "tools" / "refresh"
"""The generators of the repository's data (``python -m tools.refresh``)."""


def test_only_the_surface_reads_its_data() -> None:
    assert DATA_FILES == ("moe_fp8_ops.json", "sgl_kernel_exports.json",
                          "sgl_kernel_symbols.json")
    offenders = {}
    for path in _python(*SOURCES):
        if (SURFACE in path.parents or path == Path(__file__) or GENERATORS in path.parents
                or path.name.endswith("_generator.py")):
            continue  # the data's generators (and their tests) read what they wrote
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = _data_readers(tree, writer=path.parent == REPO / "tools")
        if found:
            offenders[str(path.relative_to(REPO))] = found
    assert not offenders, offenders
    breaking = ('import json\nfrom pathlib import Path\n'
                'json.loads((Path("x") / "moe_fp8_ops.json").read_text())\n'
                'symbols.DATA.read_text()\n')
    assert sorted(_data_readers(ast.parse(breaking), writer=False)) == [
        "moe_fp8_ops.json", "symbols.DATA"]
    assert _data_readers(ast.parse('symbols.DATA.write_text("x")\n'), writer=True) == []
    assert _data_readers(ast.parse('symbols.DATA.read_text()\n'), writer=True) == [
        "symbols.DATA"]


# ------------------------------------------------------------------ private names


def _crossings(tree: ast.AST, importer: str, is_package: bool,
               modules: set[str]) -> list[str]:
    """Private names imported from a package the importer is not inside.

    A private name belongs to the package holding it: ``from a.b import _c`` and
    ``from a.b._c import d`` are both ``a.b``'s (``a.b`` a package, else its parent).
    """
    found = []
    for module, name in _imports(tree, importer, is_package):
        if module.split(".")[0] != "sglang_shims":
            continue
        parts = module.split(".")
        hit = next((i for i, part in enumerate(parts) if _private(part)), None)
        if hit is not None:
            owner = ".".join(parts[:hit])
        elif name and _private(name):
            owner = module if module in modules and (
                PACKAGE.parent / module.replace(".", "/") / "__init__.py").exists() \
                else module.rpartition(".")[0]
        else:
            continue
        if importer != owner and not importer.startswith(owner + "."):
            found.append(f"{module}:{name}" if name else module)
    return found


def test_no_private_name_leaves_its_package() -> None:
    modules = {_module_of(p) for p in _python("sglang_shims")}
    offenders = {}
    for path in _python("sglang_shims", "patches", "benchmarks", "examples", "tools"):
        importer = _module_of(path)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found = _crossings(tree, importer, path.name == "__init__.py", modules)
        if found:
            offenders[str(path.relative_to(REPO))] = found
    assert not offenders, offenders
    breaking = "from ...kernels.surface.exports import _names\n"
    assert _crossings(ast.parse(breaking), "sglang_shims.cli.doctor.hybrid", False,
                      modules) == ["sglang_shims.kernels.surface.exports:_names"]
    inside = "from .exports import _names\n"
    assert _crossings(ast.parse(inside), "sglang_shims.kernels.surface.x", False,
                      modules) == []


# ------------------------------------------------------------------ op families


FAMILIES = sorted(p.name for p in OPS.iterdir() if (p / "__init__.py").is_file())
#: What a launch rule is computed from; a wrapper that uses one computes its own.
RULE_INGREDIENTS = frozenset({"next_pow2", "DECODE_ROWS", "num_warps_for"})


def _launch_knobs(tree: ast.AST) -> list[str]:
    """Launch options and block sizes a wrapper passes as literal numbers."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("launch_kernel"):
            found += [f"{k.arg}={ast.unparse(k.value)}" for k in node.keywords
                      if k.arg and (k.arg.startswith("BLOCK") or k.arg.startswith("num_"))
                      and isinstance(k.value, ast.Constant)]
    return found


def test_families_have_wrappers_kernels_and_launch_rules() -> None:
    assert FAMILIES == ["activation", "fp8_gemm", "fp8_quant", "moe_align", "moe_gate",
                        "moe_topk", "norm", "rope"]
    for family in FAMILIES:
        folder = OPS / family
        assert (folder / "triton.py").is_file() and (folder / "launch.py").is_file(), family
        tree = ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))
        used = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        assert "launch" in used and "launch_kernel" in used, family
        assert not used & RULE_INGREDIENTS, (family, used & RULE_INGREDIENTS)
        assert not _launch_knobs(tree), (family, _launch_knobs(tree))
        launch = ast.parse((folder / "launch.py").read_text(encoding="utf-8"))
        imported = {module for module, _ in _imports(
            launch, f"sglang_shims.kernels.ops.{family}.launch", False)}
        assert not {m for m in imported if m.split(".")[0] in ("triton", "torch")}, family
    breaking = "launch_kernel(key, k, grid, x, BLOCK_M=16, num_warps=4, **cfg)\n"
    assert _launch_knobs(ast.parse(breaking)) == ["BLOCK_M=16", "num_warps=4"]


def test_the_sweep_takes_its_spaces_from_the_families() -> None:
    """No candidate space, grid copy or name swapping left in benchmarks/sweep.py."""
    tree = ast.parse((REPO / "benchmarks" / "sweep.py").read_text(encoding="utf-8"))
    defined = [n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
    assert not [n for n in defined if n.endswith("candidates")], defined
    calls = {ast.unparse(n.func) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    assert not calls & {"setattr", "importlib.import_module"}, calls
    assert "compile_lock.recording" in calls
    families = {module.rpartition(".")[2] for module, name in _imports(tree, "sweep", False)
                if name == "launch"}
    assert families == {"activation", "fp8_gemm", "fp8_quant", "moe_align", "norm"}
    for family in families:
        launch = ast.parse((OPS / family / "launch.py").read_text(encoding="utf-8"))
        names = {n.name for n in launch.body if isinstance(n, ast.FunctionDef)}
        assert any(n.endswith("candidates") for n in names), family


# ------------------------------------------------------------------ regeneration


def test_regeneration_lives_outside_the_runtime_package() -> None:
    for path in _python("sglang_shims/kernels"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        modules = {module for module, _ in _imports(tree, _module_of(path),
                                                    path.name == "__init__.py")}
        assert not {m for m in modules if m.startswith(("sglang_shims.testing", "urllib"))
                    or m == "subprocess"}, path
        mains = [n for n in tree.body if isinstance(n, ast.If)
                 and "__main__" in ast.unparse(n.test)]
        assert not mains, f"{path}: a command in the runtime package"
    tools = sorted(p.name for p in (REPO / "tools").glob("regen_*.py"))
    assert tools == ["regen_kernel_symbols.py", "regen_moe_fp8_opset.py"]


# ------------------------------------------------------------------ small rules


@pytest.mark.parametrize("path", list(_python("sglang_shims/kernels")),
                         ids=lambda p: str(p.relative_to(KERNELS)))
def test_small_rules(path: Path) -> None:
    """One spelling of the "on" values (``_toggles.ON``), no list used as a one-value
    cache (``functools.cache`` says it), no class recognised by its name."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    sets = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Set)
            and {c.value for c in n.elts if isinstance(c, ast.Constant)} >= {"1", "true"}]
    assert not sets, sets
    cells = {t.id for n in tree.body if isinstance(n, (ast.Assign, ast.AnnAssign))
             and isinstance(n.value, ast.List) and not n.value.elts
             for t in (n.targets if isinstance(n, ast.Assign) else [n.target])
             if isinstance(t, ast.Name)}
    read_as_cell = {ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Subscript)
                    and isinstance(n.value, ast.Name) and n.value.id in cells
                    and isinstance(n.slice, (ast.Constant, ast.UnaryOp))}
    assert not read_as_cell, read_as_cell
    by_name = [ast.unparse(n) for n in ast.walk(tree) if isinstance(n, ast.Compare)
               and ast.unparse(n.left).endswith(").__name__")]
    assert not by_name, by_name


PROTOCOL = frozenset({"find_spec", "create_module", "exec_module"})


@pytest.mark.parametrize("folder", ["standin", "surface"])
def test_the_public_api_is_documented(folder: str) -> None:
    """What patches and the doctor import from ``standin/`` and ``surface/`` says what it is
    for: every module, public function, class and public method has a docstring."""
    missing = []
    for path in sorted((KERNELS / folder).glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if ast.get_docstring(tree) is None:
            missing.append(path.name)
        for node in tree.body:
            defs: list[ast.AST] = [node]
            if isinstance(node, ast.ClassDef) and not _private(node.name):
                defs += node.body
            for d in defs:
                if isinstance(d, (ast.FunctionDef, ast.ClassDef)) and not _private(d.name) \
                        and not d.name.startswith("__") and d.name not in PROTOCOL \
                        and ast.get_docstring(d) is None:
                    missing.append(f"{path.name}:{d.name}")
    assert not missing, missing


class _Device:
    def __init__(self, index: int | None) -> None:
        self.index = index


class _Tensor:
    def __init__(self, cuda: bool, index: int | None = 0) -> None:
        self.is_cuda, self.device = cuda, _Device(index)


@pytest.mark.parametrize(("shipped", "cuda", "capable", "asked", "expected"), [
    (False, True, True, None, False),   # not shipped: never, whatever is asked
    (False, True, True, True, False),
    (True, True, True, None, True),     # None: where the GPU has it
    (True, True, False, None, False),   # compute capability below 9.0
    (True, True, False, True, False),   # asked for on a GPU without it: ignored
    (True, True, True, False, False),   # asked not to
    (True, False, True, True, False),   # CPU tensors
])
def test_programmatic_dependent_launch_decision(monkeypatch: pytest.MonkeyPatch, shipped: bool,
                                                cuda: bool, capable: bool, asked: bool | None,
                                                expected: bool) -> None:
    from sglang_shims.kernels import runtime
    from sglang_shims.kernels.device import Device

    monkeypatch.setattr(runtime, "PDL_SHIPPED", shipped)
    monkeypatch.setattr(runtime, "cuda_device",
                        lambda index: Device((9, 0) if capable else (8, 9), 101376, 1))
    monkeypatch.delenv("TRITON_INTERPRET", raising=False)
    assert runtime.use_pdl(_Tensor(cuda), asked) is expected  # type: ignore[arg-type]
    assert runtime.pdl_options(expected) == (
        {"USE_PDL": True, "launch_pdl": True} if expected else {})


def test_pdl_release_follows_the_rows() -> None:
    """Kernels that take ``PDL_LATE`` release at exit beyond ``PDL_EARLY_MAX_ROWS`` rows;
    without rows, or off, nothing changes."""
    from sglang_shims.kernels import runtime

    early, late = {"USE_PDL": True, "launch_pdl": True}, {
        "USE_PDL": True, "PDL_LATE": True, "launch_pdl": True}
    edge = runtime.PDL_EARLY_MAX_ROWS
    assert runtime.pdl_options(True, 1) == runtime.pdl_options(True, edge) == early
    assert runtime.pdl_options(True, edge + 1) == late
    assert runtime.pdl_options(True) == early  # the kernels without PDL_LATE
    assert runtime.pdl_options(False, edge + 1) == {}
