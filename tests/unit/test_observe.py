"""What ``status()`` says about a record, seen against the modules as they are now
(``engine.observe``): each rule on plain module objects, in this process."""

from __future__ import annotations

import importlib.machinery
import sys
import types

import pytest

from sglang_shims.engine import observe
from sglang_shims.engine.record import Record, State


class Loader:
    pass


class Finder:
    pass


def module(name: str = "target", loader: object = None) -> types.ModuleType:
    made = types.ModuleType(name)
    made.__spec__ = importlib.machinery.ModuleSpec(name, loader)  # type: ignore[arg-type]
    made.__loader__ = None
    return made


def test_a_patched_module_still_in_place_is_not_stale() -> None:
    target = module()
    assert observe.stale("target", target, None) == ""  # the patch changed no module
    assert observe.stale("target", target, (target, target.__spec__)) == ""
    assert "imported again" in observe.stale("target", module(), (target, target.__spec__))
    assert "executed again" in observe.stale("target", target, (target, object()))


def test_a_record_as_seen() -> None:
    target = module()
    applied = Record("p", State.APPLIED, "done", target="target")
    assert observe.seen(applied, target, (target, target.__spec__), False, None) is applied
    stale = observe.seen(applied, target, (target, object()), False, None)
    assert stale.state is State.STALE and "executed again" in stale.reason
    assert applied.state is State.APPLIED  # the record itself is left as it was
    pending = Record("p", State.PENDING, "waiting", target="target")
    assert observe.seen(pending, None, None, False, None) is pending
    assert observe.seen(pending, target, None, True, None).reason == "target is being imported"
    assert observe.seen(pending, target, None, False, None).state is State.BYPASSED


def test_who_loaded_a_bypassed_module() -> None:
    assert "(loaded by an unknown loader;" in observe.bypassed("target", module(), None)
    by_spec = observe.bypassed("target", module(loader=Loader()), None)
    assert f"(loaded by {__name__}.Loader;" in by_spec
    old_style = module()
    old_style.__spec__ = None
    old_style.__loader__ = Loader()
    assert f"(loaded by {__name__}.Loader;" in observe.bypassed("target", old_style, None)


def test_where_our_finder_stood(monkeypatch: pytest.MonkeyPatch) -> None:
    ours, theirs = Finder(), Loader()
    target = module()
    off = "the shims' finder is not on sys.meta_path"
    assert off in observe.bypassed("target", target, None)
    monkeypatch.setattr(sys, "meta_path", [theirs])
    assert off in observe.bypassed("target", target, ours)
    monkeypatch.setattr(sys, "meta_path", [theirs, ours])
    assert (f"finders ahead of the shims' on sys.meta_path: {__name__}.Loader)"
            in observe.bypassed("target", target, ours))
    monkeypatch.setattr(sys, "meta_path", [ours, theirs])
    text = observe.bypassed("target", target, ours)
    assert "it was imported before the shims' finder saw it" in text
    assert text.startswith("target was imported without the shims' hook")
    assert text.endswith("this patch did not act. sglang_shims.install() applies it late")
