"""The stand-in ``sgl_kernel`` (``kernels.standin.provider``), in this process: a name that
the package and one of its submodules both export gets a lazy proxy at each level, and
each proxy names its own module, in ``__module__`` and in the error its call raises.

Why it matters: sgl-kernel 0.4.8-0.4.10 export over a hundred names both from the package
and from a submodule (``sgl_kernel.allreduce.all_reduce`` is also ``sgl_kernel.all_reduce``);
an error that names the wrong module sends its reader to the wrong import.  The names come
from the export data (``kernels.surface.exports``), in either order of first access.
"""

from __future__ import annotations

from types import ModuleType

import pytest

from sglang_shims._errors import MissingSymbolError
from sglang_shims.engine.proxy import OptionalSymbol
from sglang_shims.kernels.standin.provider import Provider
from sglang_shims.kernels.surface import exports

VERSIONS = ("0.4.8", "0.4.9", "0.4.10")


def both_levels(version: str) -> list[tuple[str, str]]:
    """(submodule, name) for every name the package exports that a submodule exports too."""
    top = exports.exported(version)
    subs = exports.surfaces()[version]["submodules"]
    return sorted((sub, name) for sub, names in subs.items() if sub != "scalar_type"
                  for name in exports.names(names) if name in top)


def stand_in(version: str) -> tuple[Provider, ModuleType, dict[str, ModuleType]]:
    """The package and its submodules as the patch builds them (no implementations, so that
    every name is a proxy)."""
    provider = Provider("sgl_kernel", version, "a test", "test-patch", {}, "Install it.")
    package = ModuleType("sgl_kernel")
    provider.build_package(package)
    subs = {}
    for sub in exports.surfaces()[version]["submodules"]:
        subs[sub] = ModuleType(f"sgl_kernel.{sub}")
        provider.build_submodule(subs[sub])
    return provider, package, subs


def test_the_data_has_names_at_both_levels() -> None:
    for version in VERSIONS:
        assert len({name for _, name in both_levels(version)}) > 90, version


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("package_first", [True, False], ids=["package-first", "sub-first"])
def test_each_level_has_its_own_proxy(version: str, package_first: bool) -> None:
    _, package, subs = stand_in(version)
    for sub, name in both_levels(version):
        order = [(package, "sgl_kernel"), (subs[sub], f"sgl_kernel.{sub}")]
        proxies = {}
        for module, module_name in order if package_first else order[::-1]:
            proxy = getattr(module, name)
            assert isinstance(proxy, OptionalSymbol), (module_name, name)
            assert proxy.__module__ == module_name, (name, proxy.__module__)
            proxies[module_name] = proxy
        assert proxies["sgl_kernel"] is not proxies[f"sgl_kernel.{sub}"], name


@pytest.mark.parametrize("version", VERSIONS)
def test_each_error_names_its_own_module(version: str, caplog: pytest.LogCaptureFixture) -> None:
    """One name per submodule (a call logs a warning once per proxy)."""
    _, package, subs = stand_in(version)
    first = {sub: name for sub, name in reversed(both_levels(version))}
    for sub, name in sorted(first.items()):
        for module_name, proxy in ((f"sgl_kernel.{sub}", getattr(subs[sub], name)),
                                   ("sgl_kernel", getattr(package, name))):
            with pytest.raises(MissingSymbolError) as raised:
                proxy()
            assert str(raised.value).startswith(f"{module_name}.{name} is not available"), \
                str(raised.value)
