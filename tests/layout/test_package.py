"""Where the hook ends and the engine begins: the import graph, the typed hand-off, the
watch table of extra folders, and what a woken process has (not) imported."""

from __future__ import annotations

import ast
import json
import logging
import os
from collections.abc import Callable
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from sglang_shims import _bootstrap, _errors
from sglang_shims._toggles import Toggles
from sglang_shims.catalog import load as _catalog
from sglang_shims.engine import Engine
from sglang_shims.engine.gates import Environment

from ..support.packages import manifest_text, write_package, write_patch
from ..support.run import REPO, run_python

PACKAGE = REPO / "sglang_shims"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runs_at_import(tree: ast.Module) -> list[ast.stmt]:
    """Statements executed when the module is imported: not in functions, not under
    ``if TYPE_CHECKING``."""
    out: list[ast.stmt] = []
    todo: list[ast.stmt] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            todo += node.orelse
            continue
        out.append(node)
        for field in ("body", "orelse", "finalbody", "handlers"):
            todo += [n for n in getattr(node, field, []) if isinstance(n, ast.stmt)]
        for handler in getattr(node, "handlers", []):
            todo += handler.body
    return out


def _every_statement(tree: ast.Module) -> list[ast.stmt]:
    """Every statement of a module that can run, function bodies included: an import a
    function runs later is still a dependency of the design.  What sits under
    ``if TYPE_CHECKING`` never runs (a type named in an annotation couples nothing)."""
    skipped = {id(n) for node in ast.walk(tree)
               if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)
               for stmt in node.body for n in ast.walk(stmt)}
    return [node for node in ast.walk(tree)
            if isinstance(node, ast.stmt) and id(node) not in skipped]


def import_graph(read: Callable[[ast.Module], list[ast.stmt]] = _runs_at_import,
                 ) -> dict[str, set[str]]:
    """Module -> our modules it imports (static, from the source): while being imported by
    default, anywhere in its body with ``read=_every_statement``."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")
               if "_launch_site" not in p.parts}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in read(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    anchor = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                    base = f"{anchor}.{base}" if base else anchor
                for alias in node.names:
                    edges.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules
                              else base)
        graph[name] = {e for e in edges if e in modules and e != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """The first import cycle met walking the modules in name order, or None."""
    done: set[str] = set()

    def visit(node: str, path: list[str]) -> list[str] | None:
        if node in path:
            return [*path[path.index(node):], node]
        if node in done:
            return None
        for nxt in sorted(graph[node]):
            cycle = visit(nxt, [*path, node])
            if cycle:
                return cycle
        done.add(node)
        return None

    for module in sorted(graph):
        cycle = visit(module, [])
        if cycle:
            return cycle
    return None


def test_no_import_cycles() -> None:
    graph = import_graph()
    assert graph["sglang_shims.engine.process"] >= {"sglang_shims._bootstrap",
                                                    "sglang_shims._toggles"}
    cycle = find_cycle(graph)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycles_through_function_bodies() -> None:
    """A lazy import still couples two modules: a cycle through function bodies is a cycle
    in the design, even when no import ever deadlocks on it."""
    cycle = find_cycle(import_graph(_every_statement))
    assert cycle is None, "import cycle through function bodies: " + " -> ".join(cycle or [])


def test_the_function_body_graph_sees_lazy_imports() -> None:
    """Both graph builders read what they should (a check that cannot fail proves nothing):
    a module-level graph misses an import inside a function; the full one finds it, and
    finds a cycle made only of such imports."""
    lazy, full = import_graph(), import_graph(_every_statement)
    assert "sglang_shims.catalog.load" not in lazy["sglang_shims.cli.doctor.rules._common"]
    assert "sglang_shims.catalog.load" in full["sglang_shims.cli.doctor.rules._common"]
    assert all(lazy[m] <= full[m] for m in lazy)
    a, b = "sglang_shims.cli.doctor.rules._common", "sglang_shims.cli.doctor.rules.kernel_names"
    assert find_cycle({**full, a: {*full[a], b}}) is not None


def test_the_cycle_check_sees_a_cycle(tmp_path: Path) -> None:
    """The graph builder finds relative imports (a check that cannot fail proves nothing)."""
    graph = import_graph()
    assert "sglang_shims._bootstrap" in graph["sglang_shims._toggles"]
    assert "sglang_shims.engine" not in graph["sglang_shims._bootstrap"]  # named, not imported
    # loaded by the Watcher only to decide a stand-in (load_sibling), never at import
    assert "sglang_shims._versions" not in graph["sglang_shims._bootstrap"]
    assert "sglang_shims._versions" in graph["sglang_shims.engine.gates"]
    assert graph["sglang_shims"] == set()  # the package imports nothing at module level
    assert graph["sglang_shims.engine"] == set()  # names only, looked up on first use


ENGINE_MODULES = sorted(_module_name(p) for p in (PACKAGE / "engine").glob("*.py"))


def test_importing_the_engine_has_no_side_effect() -> None:
    """Importing every engine module registers no fork or exit hook, adds no log handler
    and puts no finder on sys.meta_path; building the process's engine (get()) does."""
    out = run_python(f"""
        import atexit, json, logging, os, sys
        hooks = []
        # the module of each hook: the stdlib registers its own (random, on import)
        os.register_at_fork = lambda **kwargs: hooks.extend(
            f"fork {{key}} {{hook.__module__}}" for key, hook in kwargs.items())
        atexit.register = lambda hook, *args, **kwargs: hooks.append(
            f"atexit {{hook.__module__}}")
        finders = list(sys.meta_path)
        for name in {ENGINE_MODULES!r}:
            __import__(name)
        ours = lambda: [h for h in hooks if "sglang_shims" in h]
        seen = [ours(), sys.meta_path == finders, len(logging.getLogger("sglang_shims").handlers)]
        from sglang_shims.engine import get
        get()
        print(json.dumps([seen, ours()]))
    """, activate=False)
    assert out.json() == [[[], True, 0], ["atexit sglang_shims.engine.process",
                                          "fork after_in_child sglang_shims.engine.process"]
                          ], out.stderr
    assert len(ENGINE_MODULES) >= 12 and "sglang_shims.engine.process" in ENGINE_MODULES


def test_the_doctor_s_gates_load_nothing_else() -> None:
    """``engine.gates`` (which the doctor imports) loads only the package, the engine's
    names and the PEP 440 reader it uses: not the engine it sits beside."""
    out = run_python("""
        import json, sys
        import sglang_shims.engine.gates
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("sglang_shims"))))
    """, activate=False)
    assert out.json() == ["sglang_shims", "sglang_shims._versions", "sglang_shims.engine",
                          "sglang_shims.engine.gates"], out.stderr


def test_the_engine_names_states_by_their_members() -> None:
    """Inside the engine a state is a ``State`` member; its string is written only where a
    record becomes plain data (``record.py``: the report and ``status()``)."""
    from sglang_shims.engine.record import State

    values = {state.value for state in State}
    found = [f"{path.name}:{node.lineno} {node.value!r}"
             for path in sorted((PACKAGE / "engine").glob("*.py")) if path.name != "record.py"
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Constant) and node.value in values]
    assert found == []


def test_start_up_modules_import_only_sys_and_os() -> None:
    for name in ("_bootstrap", "_toggles", "_versions"):
        tree = ast.parse((PACKAGE / f"{name}.py").read_text(encoding="utf-8"))
        imported = set()
        for node in _runs_at_import(tree):
            if isinstance(node, ast.Import):
                imported |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom):
                imported.add("." * node.level + (node.module or ""))
        assert imported <= {"os", "sys", "._bootstrap"}, (name, imported)


def test_public_errors() -> None:
    import sglang_shims
    from sglang_shims.engine import journal, proxy

    for error in (_errors.ShimImportError, _errors.ConflictError, _errors.MissingSymbolError):
        assert error.__module__ == "sglang_shims"
        assert getattr(sglang_shims, error.__name__) is error
    assert journal.ConflictError is _errors.ConflictError
    assert proxy.MissingSymbolError is _errors.MissingSymbolError
    assert issubclass(_errors.ShimImportError, ImportError)


def test_engine_builds_in_process_from_its_inputs(tmp_path: Path) -> None:
    """No atexit hook, no log handler, no bootstrap globals: what it is given is what it uses."""
    write_patch(tmp_path / "extra", "demo-patch", manifest_text("demo-patch", "pkg.mod"),
                "def apply(ctx):\n    pass\n")
    boot = _bootstrap.Boot()
    boot.origin = "test"
    handlers = list(logging.getLogger("sglang_shims").handlers)
    catalog = _catalog.load(str(tmp_path / "extra"), include_builtin=False)
    engine = Engine(boot, catalog, Toggles({"SGLANG_SHIMS_DISABLE": "demo-patch"}),
                    Environment(hermetic=True))
    assert engine.origin == "test" and engine.boot is boot
    assert engine.status()["demo-patch"]["state"] == "disabled"
    assert json.loads(json.dumps(engine.status()))["demo-patch"]["state"] == "disabled"
    assert type(engine.status()["demo-patch"]["state"]) is str  # strings at the boundary
    assert logging.getLogger("sglang_shims").handlers == handlers


def test_listener_is_named_and_receives_the_boot(tmp_path: Path) -> None:
    write_package(tmp_path, {"sgl_kernel/__init__.py": "X = 1\n",
                             "recorder.py": "SEEN = []\n"
                                            "def listen(boot, name, phase, module, exc):\n"
                                            "    SEEN.append((boot.origin, name, phase))\n"})
    out = run_python("""
        import sglang_shims._bootstrap as b, json
        b.LISTENER = "recorder:listen"
        import sgl_kernel, recorder, sys
        print(json.dumps([recorder.SEEN, "sglang_shims.engine" in sys.modules]))
    """, paths=(tmp_path,))
    assert out.json() == [[["test", "sgl_kernel", "before"], ["test", "sgl_kernel", "after"]],
                          False], out.stderr


def test_woken_engine_imports_no_cli_code(tmp_path: Path) -> None:
    """A process whose engine woke and judged every patch has loaded no CLI module."""
    write_package(tmp_path, {"sgl_kernel/__init__.py": "X = 1\n"})
    out = run_python("""
        import json, sys, sgl_kernel, sglang_shims
        from sglang_shims.engine import get
        engine = get()
        for manifest in engine.manifests.values():
            engine.judge(manifest, True, "test")
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("sglang_shims."))))
    """, paths=(tmp_path,))
    loaded = out.json()
    assert isinstance(loaded, list) and "sglang_shims.engine" in loaded, out.stderr
    assert not [m for m in loaded if m.startswith("sglang_shims.cli")], loaded


class TestExtraTargets:
    def test_the_three_toml_spellings(self, tmp_path: Path) -> None:
        for name, text in (("a", '[target]\nwhen = "before"\nmodule = "pkg.one"\n'),
                           ("b", 'id = "b"\ntarget.module = \'pkg.two\'\n'),
                           ("c", 'target = { when = "after", module = "pkg.three" }\n'),
                           ("d", '[other]\nmodule = "not.me"\n')):
            (tmp_path / name).mkdir()
            (tmp_path / name / "manifest.toml").write_text(text)
        assert _bootstrap.extra_targets(str(tmp_path)) == {"pkg.one", "pkg.two", "pkg.three"}

    def test_relative_entries_links_and_fifos_are_not_read(self, tmp_path: Path) -> None:
        """A planted FIFO must not hang every Python start; a link is not followed."""
        (tmp_path / "fifo").mkdir()
        os.mkfifo(tmp_path / "fifo" / "manifest.toml")
        real = tmp_path / "real.toml"
        real.write_text('[target]\nmodule = "via.link"\n')
        (tmp_path / "link").mkdir()
        (tmp_path / "link" / "manifest.toml").symlink_to(real)
        assert _bootstrap.extra_targets(str(tmp_path)) == set()
        assert _bootstrap.extra_targets("relative/dir") == set()

    def test_extra_patch_applies_and_start_up_reads_nothing(self, tmp_path: Path) -> None:
        write_package(tmp_path / "pkgs", {"extpkg/__init__.py": "", "extpkg/mod.py": "V = 1\n"})
        write_patch(tmp_path / "extra", "ext-patch", manifest_text("ext-patch", "extpkg.mod"),
                    "def apply(ctx):\n    ctx.setattr(ctx.module, 'V', 2)\n")
        out = run_python("""
            import json, sys
            before = sorted(m for m in sys.modules if 'shims' in m and m != 'sglang_shims'
                            and not m.endswith(('_bootstrap', '_toggles')))
            import extpkg.mod
            print(json.dumps([before, extpkg.mod.V]))
        """, paths=(tmp_path / "pkgs",), env={"SGLANG_SHIMS_PATH": str(tmp_path / "extra")})
        assert out.json() == [[], 2], out.stderr


@given(version=st.from_regex(r"\Av?[0-9]{1,2}(\.[0-9]{1,2}){0,3}((a|b|rc)[0-9])?(\.post[0-9])?"
                             r"(\.dev[0-9])?(\+[a-z0-9]{1,4})?\Z", fullmatch=True),
       clauses=st.lists(st.tuples(
           st.sampled_from(["==", "!=", "<", "<=", ">", ">=", "~=", "==="]),
           st.from_regex(r"\A[0-9]{1,2}(\.[0-9]{1,2}){0,2}(rc[0-9]|\.post[0-9]|\.dev[0-9]|\.\*)?"
                         r"\Z", fullmatch=True)), max_size=3))
@example(version="0", clauses=[("==", "0"), ("~=", "0.0rc0")])  # ~= on a pre-release bound
def test_gates_answer_as_packaging_does(version: str, clauses: list[tuple[str, str]]) -> None:
    """The engine's gates skip importing packaging where the bootstrap's reader can tell;
    the answer is packaging's either way."""
    from packaging.specifiers import InvalidSpecifier, SpecifierSet
    from packaging.version import Version

    from sglang_shims.engine.gates import satisfies

    spec = ",".join(op + bound for op, bound in clauses)
    try:
        expected = SpecifierSet(spec).contains(Version(version), prereleases=True)
    except InvalidSpecifier:
        return  # manifests are validated: an invalid specifier never reaches a gate
    assert satisfies(version, spec) == (expected, "")


def test_report_and_status_carry_the_wake_timing(tmp_path: Path) -> None:
    write_package(tmp_path / "pkgs", {"sgl_kernel/__init__.py": "X = 1\n"})
    reports = tmp_path / "reports"
    out = run_python("""
        import json, sgl_kernel, sglang_shims
        print(json.dumps({k: v["judge_ms"] for k, v in sglang_shims.status().items()}))
    """, paths=(tmp_path / "pkgs",), env={"SGLANG_SHIMS_REPORT_DIR": str(reports)})
    judged = out.json()
    assert isinstance(judged, dict) and judged["sgl-kernel-fused-marlin-moe"] > 0, out.stderr
    assert judged["tf5-rope-theta-moved"] == 0  # its target was never imported
    (report,) = reports.glob("*.json")
    timing = json.loads(report.read_text())["timing"]
    assert 0 < timing["wake_ms"] < 10_000 and timing["judge_ms"] >= judged[
        "sgl-kernel-fused-marlin-moe"]
