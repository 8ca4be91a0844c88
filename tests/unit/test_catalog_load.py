"""Reading the catalog and a patch's code (``catalog.load``): what is said when the built-in
catalog of an installed package cannot be read, and when a patch's code lacks the function
its ``when`` needs."""

from __future__ import annotations

from pathlib import Path

import pytest

from sglang_shims.catalog import data, load

from ..support.engine import Seam


def test_an_installed_catalog_that_cannot_be_read_is_said_with_the_remedy(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Installed (the patches inside the package), the catalog's JSON unreadable: the
    manifests are read instead, and the warning says how to repair the install."""
    inside = Path(load.__file__).resolve().parents[1] / "no-such-patches"
    monkeypatch.setattr(load, "builtin_root", lambda warnings=None: inside)
    monkeypatch.setattr(data, "read", lambda root, check_digest=False: None)
    (warning,) = load.load(None).warnings
    assert warning.startswith(f"the built-in catalog {data.CATALOG} cannot be read;"
                              " the manifests are read instead. To fix it, ")


@pytest.mark.parametrize(("when", "missing"), [("after", "apply(ctx)"),
                                               ("instead", "unusable(ctx), provide(ctx)")])
def test_patch_code_without_its_function_fails_the_patch(seam: Seam, when: str,
                                                        missing: str) -> None:
    seam.patch("nothing-demo", "evtarget", "VALUE = 1\n", when=when)
    engine = seam.engine()
    module = seam.imported(engine, "evtarget")
    entry = seam.status(engine, "nothing-demo")
    assert entry["state"] == "failed" and module.VALUE == 1
    assert f"patch.py defines no {missing}" in entry["reason"]
