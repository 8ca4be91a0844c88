"""A patch's record (``engine.record.Record``): its defaults are fresh containers of their
own, what it is given is kept, and ``as_dict`` is plain data (the state as its string)."""

from __future__ import annotations

import sys

import pytest

from sglang_shims.engine.record import Record, State, process_info, summary


def test_a_record_keeps_what_it_is_given() -> None:
    proxies = {"missing_fn": {"exported_by": "x", "calls": 0}}
    details = {"kernel_ops": {"rmsnorm": "ours"}}
    record = Record("p", State.APPLIED, "done", changes=["x.f"], notes=["n"], gates=["g"],
                    proxies=proxies, details=details)
    assert record.proxies is proxies and record.details is details
    assert (record.changes, record.notes, record.gates) == (["x.f"], ["n"], ["g"])


def test_defaults_are_empty_and_not_shared() -> None:
    first, second = Record("a", State.PENDING, ""), Record("b", "pending", "")  # type: ignore[arg-type]
    for field in ("changes", "notes", "gates", "proxies", "details"):
        assert getattr(first, field) == type(getattr(first, field))()
        assert getattr(first, field) is not getattr(second, field)
    assert second.state is State.PENDING  # a plain string becomes the State
    data = first.as_dict()
    assert data["state"] == "pending" and data["proxies"] == {} and data["details"] == {}
    assert "id" not in data


def test_the_summary_line_names_the_patches_that_acted_or_failed() -> None:
    records = {r.id: r for r in (
        Record("b", State.APPLIED, ""), Record("a", State.APPLIED, ""),
        Record("c", State.PENDING, ""), Record("d", State.DISABLED, ""),
        Record("e", State.NOT_APPLICABLE, ""), Record("f", State.FAILED, ""))}
    assert summary(records) == ("patches: 1 pending; 2 applied (a, b); 1 not-applicable;"
                                " 1 disabled; 1 failed (f)")
    assert summary({}) == "patches: none"


def test_a_report_keeps_the_program_and_its_first_arguments_only(
        monkeypatch: pytest.MonkeyPatch) -> None:
    argv = ["-m", "sglang.launch_server", *(f"--option-{i}" for i in range(30))]
    monkeypatch.setattr(sys, "argv", argv)
    info = process_info("test")
    assert info["argv"] == argv[:8] and info["origin"] == "test"
    monkeypatch.setattr(sys, "argv", argv[:3])
    assert process_info("test")["argv"] == argv[:3]
