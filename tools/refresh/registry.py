"""Every generator of the repository's data, in one table.

Three kinds, by where the inputs are:

* ``derived``: from files in the repository alone (the manifests, a results file, the
  recorded index).  ``--check`` regenerates them in memory and compares; no stamp is
  needed, the inputs are beside them.
* ``fetched``: from the package index, published wheels or sglang's git history.
  ``--check`` runs the generator's own offline consistency check (its recorded inputs
  against today's repository) and compares each output with the sha256 the ledger
  (``data/provenance.json``) recorded when the refresh wrote it: source, date and
  generator version are stamped there.
* ``measured``: from a run that takes hours (the compatibility matrix, the mutation
  pass).  Checked like ``fetched``; regenerated only when named
  (``python -m tools.refresh compatibility``).

A generator is added by appending a :class:`Generator` to :data:`GENERATORS` (the order
is the order they run in: what another reads comes first) and a test of its check.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from . import derived, fetched, gpus
from .context import Context

Kind = Literal["derived", "fetched", "measured"]


@dataclass(frozen=True)
class Generator:
    """One generator: ``check`` returns what is wrong (offline, fast), ``regenerate``
    writes the outputs (``fetched``/``measured``: reaching the index, the wheels, or
    running for hours), ``stale`` says what the recorded index has that the outputs do
    not cover yet (a note, never a failure)."""

    name: str
    kind: Kind
    outputs: Callable[[Context], list[str]]
    source: str
    version: int
    check: Callable[[Context], list[str]]
    regenerate: Callable[[Context], None]
    stale: Callable[[Context], list[str]] | None = None


def _fixed(*paths: str) -> Callable[[Context], list[str]]:
    return lambda _context: list(paths)


GENERATORS: tuple[Generator, ...] = (
    Generator("index", "fetched", _fixed(fetched.SNAPSHOT), fetched.snapshot.SOURCE,
              fetched.snapshot.GENERATOR, fetched.check_snapshot, fetched.write_snapshot),
    Generator("releases", "derived", _fixed(derived.RELEASES),
              "the sglang wheels of data/index.json from 0.1.24 on", 1,
              derived.check_releases, derived.write_releases),
    Generator("kernel-exports", "fetched", _fixed(fetched.EXPORTS),
              "sgl-kernel / sglang-kernel wheels on the index; sglang's git history for"
              " versions the index lacks", fetched.kernel_exports.GENERATOR,
              fetched.check_exports, fetched.write_exports, fetched.stale_exports),
    Generator("kernel-exports-runtime", "derived", _fixed(derived.EXPORTS_RUNTIME),
              "the full kernel exports (tools/refresh/data/sgl_kernel_exports.json)", 1,
              derived.check_exports_runtime, derived.write_exports_runtime),
    Generator("kernel-symbols", "fetched", _fixed(fetched.SYMBOLS), fetched.SYMBOLS_SOURCE,
              fetched.SYMBOLS_VERSION, fetched.check_symbols, fetched.write_symbols),
    Generator("moe-fp8-opset", "fetched", _fixed(fetched.OPSET), fetched.OPSET_SOURCE,
              fetched.OPSET_VERSION, fetched.check_opset, fetched.write_opset),
    Generator("release-index", "fetched", _fixed(fetched.RELEASE_INDEX),
              fetched.release_index.SOURCE, fetched.release_index.GENERATOR,
              fetched.check_release_index, fetched.write_release_index),
    Generator("compatibility", "measured", fetched.matrix_outputs, fetched.MATRIX_SOURCE,
              fetched.MATRIX_VERSION, fetched.check_matrix, fetched.write_matrix,
              fetched.stale_matrix),
    Generator("compatibility-runtime", "derived", _fixed(derived.MATRIX_RUNTIME),
              "the matrix data (tools/matrix/compatibility.json)", 1,
              derived.check_matrix_runtime, derived.write_matrix_runtime),
    Generator("compatibility-page", "derived", _fixed(*derived.MATRIX_PAGES),
              "the matrix data (tools/matrix/compatibility.json)", 1, derived.check_matrix_pages,
              derived.write_matrix_pages),
    Generator("tested", "derived", _fixed(derived.TESTED),
              "the matrix data and the kernel exports", 1, derived.check_tested,
              derived.write_tested),
    Generator("catalog", "derived", derived.catalog_outputs,
              "the built-in manifests (patches/*/manifest.toml)", 1, derived.check_catalog,
              derived.write_catalog),
    Generator("patches-page", "derived", _fixed(derived.PATCHES_PAGE),
              "the built-in manifests", 1, derived.check_patches_page,
              derived.write_patches_page),
    Generator("real-world", "derived", _fixed(derived.REAL_WORLD_PAGE),
              "docs/real-world.json (the judged reports)", 1, derived.check_real_world,
              derived.write_real_world),
    Generator("kernel-plots", "derived", derived.plot_outputs,
              "benchmarks/results/*.md that have a plot", 1, derived.check_plots,
              derived.write_plots),
    Generator("mutation", "measured", _fixed(fetched.MUTATION), fetched.MUTATION_SOURCE, 1,
              fetched.check_mutation, fetched.write_mutation),
    Generator("kernel-images", "fetched", _fixed(gpus.IMAGES), gpus.IMAGES_SOURCE, 1,
              gpus.check_images, gpus.write_images),
    Generator("sglang-sm120-attention", "fetched", _fixed(gpus.ATTENTION),
              gpus.ATTENTION_SOURCE, 1, gpus.check_attention, gpus.write_attention),
    Generator("gpu-compile", "measured", _fixed(gpus.COMPILE), gpus.COMPILE_SOURCE, 1,
              gpus.check_compile, gpus.write_compile, gpus.stale_compile),
    Generator("gpus-page", "derived", _fixed(*gpus.PAGE_OUTPUTS),
              "the GPU data (docs/gpus/*.json), benchmarks/arch_limits.toml and the"
              " manifests' [gpu] gates", 1, gpus.check_page, gpus.write_page),
)

PENDING: dict[str, str] = {
    "doctor-json-schema": "the doctor JSON's schema (being written on another branch)",
    "manifest-schema": "the manifest JSON schema (being written on another branch)",
}
"""Generators known to be coming, so that ``--list`` shows the gap until each is added."""


def by_name(names: list[str]) -> list[Generator]:
    """The generators named (all when none), in registry order; unknown names raise."""
    known = {g.name: g for g in GENERATORS}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise KeyError(f"unknown generator(s) {', '.join(unknown)}; known:"
                       f" {', '.join(known)}")
    return [g for g in GENERATORS if not names or g.name in names]
