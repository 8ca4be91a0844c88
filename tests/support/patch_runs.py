"""Running a patch test's program, stock and patched, and reading the patch's end state.

A patch test's program ends with ``print_result(result, PATCH)`` (``tests/programs/
patch_state.py``): its last line is a JSON object whose ``state`` is the patch's state in
that process (None where the shims are not active).  The helpers here run it, check it
ran, and check that state; compute the reference values it is compared with (with no
shims, on the release that still behaved); and give a test file its stack of real wheels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from .run import need, run_python


def run_json(code: str, paths: tuple[Path, ...], env: dict[str, str] | None = None,
             args: tuple[str, ...] = (), *, activate: bool = True, timeout: float = 600,
             transformers: str | None = None, expect: Mapping[str, object] | None = None,
             ) -> dict[str, Any]:
    """Run ``code`` (under the shims unless ``activate`` is false) on ``paths``; its JSON
    line, checked to come from a process that really had ``transformers`` when that is
    given (the program's ``transformers`` key), and to hold ``expect``'s values (facts of
    the program's stack, true stock and patched)."""
    result = run_python(code, paths=paths, env=env or {}, timeout=timeout, args=args,
                        activate=activate, fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    data = result.json()
    assert isinstance(data, dict)
    if transformers is not None:
        assert data["transformers"] == transformers
    expected = dict(expect or {})
    assert {key: data.get(key, "(absent)") for key in expected} == expected, data
    return data


def _run_checked(code: str, paths: tuple[Path, ...], state: str, reference: Path | None,
                 disable: str, transformers: str | None,
                 expect: Mapping[str, object] | None) -> dict[str, Any]:
    env = {"SGLANG_SHIMS_DISABLE": disable} if disable else {}
    data = run_json(code, paths, env, args=(str(reference),) if reference else (),
                    transformers=transformers, expect=expect)
    assert data["state"] == state, data
    return data


def run_stock(code: str, paths: tuple[Path, ...], patch: str,
              reference: Path | None = None, *, transformers: str | None = None,
              expect: Mapping[str, object] | None = None) -> dict[str, Any]:
    """Run ``code`` with ``patch`` switched off (and the reference file as argv[1] when
    given); its JSON, checked to say ``disabled`` (and as :func:`run_json` checks it)."""
    return _run_checked(code, paths, "disabled", reference, patch, transformers, expect)


def run_applied(code: str, paths: tuple[Path, ...], patch: str,
                reference: Path | None = None, disable: str = "", *,
                transformers: str | None = None, expect: Mapping[str, object] | None = None,
                ) -> dict[str, Any]:
    """As :func:`run_stock`, with ``patch`` on (and ``disable`` off); checked ``applied``."""
    return _run_checked(code, paths, "applied", reference, disable, transformers, expect)


def reference_json(code: str, paths: tuple[Path, ...] = (), args: tuple[str, ...] = ()
                   ) -> object:
    """The JSON that ``code`` prints without the shims on ``paths``: the values a patched
    run must reproduce, computed by the release that still had the behaviour."""
    result = run_python(code, paths=paths, args=args, activate=False, fork=True)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.json()


def wheels_fixture(sglang: str, *others: tuple[str, str], needs: tuple[str, ...] = ("torch",)
                   ) -> Any:
    """A test file's module-scoped ``paths`` fixture: the real wheels of ``others``
    (distribution, version) first, then sglang ``sglang``'s; skips without ``needs``."""

    @pytest.fixture(scope="module")
    def paths(pypi_release: Callable[[str, str], Path],
              sglang_release: Callable[[str], Path]) -> tuple[Path, ...]:
        for module in needs:
            need(module)
        return (*(pypi_release(dist, version) for dist, version in others),
                sglang_release(sglang))

    return paths
