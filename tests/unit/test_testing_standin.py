"""The stand-in ``sgl_kernel`` the CPU tests import (``sglang_shims.testing.standin``).

The patch and wheel tests lean on it but take minutes (they import sglang); these build
stand-ins into a temporary folder and import them in this process, with a recording
``torch`` in place of the real one (so no ``sgl_kernel`` op is defined in torch's registry
for the rest of the session), in well under a second.
"""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import ClassVar

import pytest

from sglang_shims.kernels.surface.exports import NOT_EXPORTS, surfaces
from sglang_shims.testing import standin

OLD, NEW = "0.3.21.post1", "0.4.0"
"""The last kernel published as ``sgl-kernel`` that this data knows, and the first
``sglang-kernel``."""


class _Library:
    """``torch.library.Library`` as the stand-in uses it: the schemas asked for."""

    defined: ClassVar[list[tuple[str, str, str]]] = []

    def __init__(self, namespace: str, kind: str) -> None:
        self.namespace, self.kind = namespace, kind

    def define(self, schema: str) -> None:
        self.defined.append((self.namespace, self.kind, schema))
        if schema.startswith("taken("):
            raise RuntimeError("already defined")  # what torch says for a second definition


@pytest.fixture
def fake_torch(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, str]]:
    torch = types.ModuleType("torch")
    torch.library = types.SimpleNamespace(Library=_Library)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    _Library.defined = []
    return _Library.defined


Loader = Callable[[Path], types.ModuleType]


@pytest.fixture
def load(monkeypatch: pytest.MonkeyPatch) -> Iterator[Loader]:
    """``load(folder)``: ``sgl_kernel`` imported from ``folder``; forgotten afterwards."""

    def forget() -> None:
        for name in [n for n in sys.modules if n == "sgl_kernel" or n.startswith("sgl_kernel.")]:
            del sys.modules[name]

    def load(folder: Path) -> types.ModuleType:
        forget()
        monkeypatch.syspath_prepend(str(folder))
        importlib.invalidate_caches()
        return importlib.import_module("sgl_kernel")

    forget()
    yield load
    forget()


def test_versions_and_their_names() -> None:
    assert standin.versions() == list(surfaces())
    known = standin.versions()
    assert known.index(OLD) < known.index(NEW) == known.index(OLD) + 1
    assert standin.dist_name(OLD) == "sgl-kernel"
    assert standin.dist_name(NEW) == "sglang-kernel"
    with pytest.raises(ValueError, match=r"no export data for sgl-kernel 9\.9\.9; known: 0\.0\.4,"):
        standin.surface("9.9.9")
    exports, submodules = standin.surface(OLD)
    assert exports == list(surfaces()[OLD]["exports"])
    assert submodules == {k: list(v) for k, v in surfaces()[OLD]["submodules"].items()}


def test_a_stand_in_binds_every_export_as_a_stub(tmp_path: Path, fake_torch: list[object],
                                                 load: Loader) -> None:
    exports, submodules = standin.surface(OLD)
    dropped = next(e for e in exports if e.isidentifier() and e[0].islower())
    folder = standin.build(OLD, tmp_path, drop=(dropped,), add=("added_kernel", exports[1]),
                           torch_ops=("op_only", "taken"))
    assert folder == tmp_path
    kernel = load(folder)
    assert kernel.__version__ == OLD
    functions = [e for e in exports if e.isidentifier() and e not in NOT_EXPORTS
                 and e not in (dropped, "__version__")]
    assert functions, OLD
    for name in functions:
        value = getattr(kernel, name)
        if name[0].isupper():
            assert isinstance(value, type) and value.__name__ == name
            made = value(1, key=2)
            assert (made.args, made.kwargs) == ((1,), {"key": 2})
        else:
            assert value.__name__ == value.__qualname__ == name
            assert value.__module__ == "sgl_kernel"
            with pytest.raises(NotImplementedError,
                               match=rf"stand-in {OLD}: {name} is a stub; no kernel runs"):
                value(1, key=2)
    assert not hasattr(kernel, dropped)
    with pytest.raises(NotImplementedError, match="added_kernel is a stub"):
        kernel.added_kernel()
    assert not any(hasattr(kernel, n) for n in NOT_EXPORTS if n not in ("annotations",))
    assert isinstance(kernel.common_ops, object) and hasattr(kernel.common_ops, "args")
    # a star export is a submodule's names, bound at the top as sgl-kernel does
    stars = [e[len("*sgl_kernel."):] for e in exports if e.startswith("*sgl_kernel.")]
    assert stars and all(s in submodules for s in stars)
    for star in stars:
        for name in submodules[star]:
            if name.isidentifier() and name not in NOT_EXPORTS and name[0].islower() \
                    and not name.startswith("_"):
                assert callable(getattr(kernel, name)), name
    # one op per exported function and per name asked for, with a catch-all schema
    ops = sorted({n for n in functions if not n.startswith("_") and n[0].islower()}
                 | {"added_kernel", "op_only", "taken"})
    assert ops == kernel._OP_NAMES
    assert fake_torch == [("sgl_kernel", "FRAGMENT", f"{n}(Tensor[] args) -> ()") for n in ops]


def test_submodules_scalar_type_and_metadata(tmp_path: Path, fake_torch: list[object],
                                             load: Loader) -> None:
    _, submodules = standin.surface(NEW)
    folder = standin.build(NEW, tmp_path, name="renamed-kernel")
    load(folder)
    nested = [s for s in submodules if "." in s]
    assert nested, NEW
    for sub, names in submodules.items():
        module = importlib.import_module(f"sgl_kernel.{sub}")
        parent = any(other.startswith(sub + ".") for other in submodules)
        assert Path(module.__file__ or "").name == ("__init__.py" if parent else
                                                    f"{sub.rsplit('.', 1)[-1]}.py"), sub
        if sub != "scalar_type":
            assert f"sgl_kernel.{sub} {NEW}" in (module.__doc__ or ""), sub
            assert all(hasattr(module, n) for n in names
                       if n.isidentifier() and n not in NOT_EXPORTS), sub
    scalar = (Path(standin.__file__).parents[1] / "kernels" / "standin" / "scalar_type.py")
    assert (folder / "sgl_kernel" / "scalar_type.py").read_text(encoding="utf-8") \
        == scalar.read_text(encoding="utf-8")
    info = folder / f"renamed_kernel-{NEW}.dist-info"
    assert (info / "METADATA").read_text(encoding="utf-8").splitlines()[:3] == [
        "Metadata-Version: 2.1", "Name: renamed-kernel", f"Version: {NEW}"]
    assert (info / "INSTALLER").read_text(encoding="utf-8") == "sglang-shims-standin\n"
    assert (info / "top_level.txt").read_text(encoding="utf-8") == "sgl_kernel\n"
    written = {str(p.relative_to(folder)) for p in folder.rglob("*")
               if p.is_file() and "__pycache__" not in p.parts}
    record = (info / "RECORD").read_text(encoding="utf-8").splitlines()
    assert all(line.endswith(",,") for line in record)
    assert {line[:-2] for line in record} == written and len(record) == len(written)
    default = standin.build(NEW, tmp_path / "default")
    assert (default / f"sglang_kernel-{NEW}.dist-info" / "METADATA").is_file()


def test_without_torch_no_op_is_defined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        load: Loader) -> None:
    monkeypatch.setitem(sys.modules, "torch", None)  # ``import torch`` raises ImportError
    kernel = load(standin.build(OLD, tmp_path))
    assert kernel._torch is None and kernel._OP_NAMES


def test_ops_faked_by_reads_every_file_of_the_release(tmp_path: Path) -> None:
    pkg = tmp_path / "sglang" / "srt" / "layers"
    pkg.mkdir(parents=True)
    (tmp_path / "sglang" / "a.py").write_text(
        'register_fake("sgl_kernel::zeta")\n'
        "torch.library.register_fake_class( 'sgl_kernel::alpha')\n"
        'register_fake("other::skipped")\n', encoding="utf-8")
    (pkg / "b.py").write_text('register_custom_op_from_extern(\n  "sgl_kernel::alpha")\n'
                              'register_custom_op("sgl_kernel::mid")\n', encoding="utf-8")
    (pkg / "c.txt").write_text('register_fake("sgl_kernel::not_python")\n', encoding="utf-8")
    assert standin.ops_faked_by(tmp_path) == ("alpha", "mid", "zeta")


def test_a_nested_submodule_gets_its_parent_packages(tmp_path: Path, fake_torch: list[object],
                                                     load: Loader,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A submodule whose parents export nothing of their own still imports (its parents
    are written as bare packages), and building again over a stand-in replaces it."""
    data = {"9.0": {"exports": ["__version__", "top"],
                    "submodules": {"deep.er.est": ["leaf"], "deep.er.side": ["other"]}}}
    monkeypatch.setattr(standin, "surfaces", lambda: data)
    standin.build("9.0", tmp_path)
    standin.build("9.0", tmp_path, drop=("top",))
    kernel = load(tmp_path)
    assert not hasattr(kernel, "top")
    with pytest.raises(NotImplementedError, match="leaf is a stub"):
        importlib.import_module("sgl_kernel.deep.er.est").leaf()
    assert importlib.import_module("sgl_kernel.deep").__doc__ == "Stand-in subpackage."
