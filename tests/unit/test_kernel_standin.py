"""The pieces of the ``sgl_kernel`` stand-in that need no kernel (nor torch): the package and
submodules a :class:`Provider` builds for one export surface, the scalar type descriptors.
The subprocess tests (``tests/patches/test_sgl_kernel_*``) serve real sglang releases with
them; here each rule is pinned in this process."""

from __future__ import annotations

import sys
import types
import zlib
from collections.abc import Iterator

import pytest

from sglang_shims._errors import MissingSymbolError
from sglang_shims.engine.proxy import OptionalSymbol
from sglang_shims.kernels.standin import provider
from sglang_shims.kernels.standin.scalar_type import NanRepr, ScalarType, scalar_types
from sglang_shims.kernels.surface import exports

VERSION = "0.4.10"


@pytest.fixture
def clean() -> Iterator[None]:
    """``sgl_kernel*`` modules and finders added by a test are taken away after it."""
    modules = {k: v for k, v in sys.modules.items() if k.split(".")[0] == "sgl_kernel"}
    finders = list(sys.meta_path)
    yield
    for name in [k for k in sys.modules if k.split(".")[0] == "sgl_kernel"]:
        del sys.modules[name]
    sys.modules.update(modules)
    sys.meta_path[:] = finders


def ours() -> str:
    return "ours"


def make() -> provider.Provider:
    return provider.Provider("sgl_kernel", VERSION, "no CUDA", "sgl-kernel-triton-fallback",
                             {"rmsnorm": ours, "not_in_the_surface": ours},
                             "Install a kernel built for this torch.")


def test_the_package_serves_the_surface(clean: None) -> None:
    stand_in = make()
    package = types.ModuleType("sgl_kernel")
    stand_in.build_package(package)
    surface = exports.exported(VERSION)
    assert "rmsnorm" in surface and "not_in_the_surface" not in surface
    assert package.__path__ == [] and package.__version__ == VERSION
    assert package.__sglang_shims_fallback__ == "no CUDA"
    assert package.__all__ == sorted(surface)
    assert vars(package)["rmsnorm"] is ours  # bound at once
    assert "not_in_the_surface" not in vars(package)
    assert isinstance(package.common_ops, types.ModuleType)
    assert package.common_ops.__name__ == "sgl_kernel.common_ops"
    lazy = package.silu_and_mul
    assert isinstance(lazy, OptionalSymbol) and vars(package)["silu_and_mul"] is lazy
    assert stand_in.symbol("sgl_kernel", "silu_and_mul") is lazy
    with pytest.raises(AttributeError, match=(
            r"^module 'sgl_kernel' has no attribute 'not_in_the_surface' "
            r"\(sgl_kernel 0\.4\.10 did not export it either\)$")):
        package.not_in_the_surface  # noqa: B018


def test_a_stand_in_says_why_when_called(clean: None) -> None:
    package = types.ModuleType("sgl_kernel")
    make().build_package(package)
    with pytest.raises(MissingSymbolError) as caught:
        package.silu_and_mul()
    assert str(caught.value).endswith(
        "sgl_kernel.silu_and_mul is not available: sgl_kernel is served by sglang-shims'"
        " fallback kernels (no CUDA), which implement only the ops a dense bf16/fp16 model,"
        " MoE routing and FP8 (activation quantisation, per-tensor/channel and 128x128-block"
        " scaled matmuls) need. Install a kernel built for this torch."
        " [sglang-shims patch 'sgl-kernel-triton-fallback' stands in for it so that"
        " importing works; see `sglang-shims explain sgl-kernel-triton-fallback`]")


def test_a_package_keeps_a_common_ops_it_has(clean: None) -> None:
    package = types.ModuleType("sgl_kernel")
    package.common_ops = own = types.ModuleType("own")  # type: ignore[attr-defined]
    make().build_package(package)
    assert package.common_ops is own


def test_submodules_come_from_the_finder_and_only_theirs(clean: None) -> None:
    stand_in = make()
    finder = stand_in.install_finder()
    assert sys.meta_path[0] is finder
    assert finder.find_spec("sgl_kernelx") is None and finder.find_spec("torch.ops") is None
    spec = finder.find_spec("sgl_kernel.elementwise")
    assert spec is not None and spec.loader is finder and spec.submodule_search_locations == []
    assert finder.create_module(spec) is None
    package = types.ModuleType("sgl_kernel")
    stand_in.build_package(package)
    sys.modules["sgl_kernel"] = package
    elementwise = package.elementwise  # an attribute that is a submodule: imported
    assert elementwise is sys.modules["sgl_kernel.elementwise"]
    assert elementwise.__path__ == [] and elementwise.rmsnorm is ours
    assert elementwise.__all__ == sorted(stand_in.submodules["elementwise"])
    assert isinstance(elementwise.silu_and_mul, OptionalSymbol)
    with pytest.raises(AttributeError, match="did not export it either"):
        elementwise.all_reduce  # noqa: B018  (allreduce's, not elementwise's)
    with pytest.raises(AttributeError):
        elementwise.allreduce  # noqa: B018  (submodules are attributes of the package only)
    scalar = package.scalar_type
    assert (scalar.ScalarType, scalar.scalar_types, scalar.NanRepr) == (
        ScalarType, scalar_types, NanRepr)
    unknown = types.ModuleType("sgl_kernel.not_a_submodule")
    stand_in.build_submodule(unknown)
    assert unknown.__all__ == [] and unknown.__path__ == []


def test_scalar_types_are_made_by_name() -> None:
    uint4b8 = scalar_types.uint4b8
    assert scalar_types.uint4b8 is uint4b8 and uint4b8 == ScalarType("uint4b8")
    assert (uint4b8.name, uint4b8.size_bits, uint4b8.bias) == ("uint4b8", 4, 8)
    assert uint4b8.id == zlib.crc32(b"uint4b8") & 0x7FFFFFFF
    assert (uint4b8.is_signed(), uint4b8.is_floating_point(), uint4b8.is_integer()) == (
        False, False, True)
    fp8 = ScalarType("float8_e4m3fn")
    assert (fp8.size_bits, fp8.bias, fp8.is_signed(), fp8.is_floating_point(),
            fp8.is_integer()) == (8, 0, True, True, False)
    assert ScalarType("int8").is_signed() and not ScalarType("int8").is_floating_point()
    assert ScalarType("void").size_bits == 0
    assert hash(uint4b8) == hash("uint4b8") and repr(uint4b8) == "ScalarType.uint4b8"
    assert uint4b8 != "uint4b8" and uint4b8 != ScalarType("uint4b16")
    assert ScalarType.from_id(uint4b8.id) is uint4b8
    with pytest.raises(ValueError, match=r"^no scalar type with id 7$"):
        ScalarType.from_id(7)
    with pytest.raises(AttributeError):
        scalar_types.__wrapped__  # noqa: B018
    assert NanRepr is ScalarType
