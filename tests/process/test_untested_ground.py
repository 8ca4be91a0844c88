"""A release newer than the catalog's data is "untested ground": status(), the report,
``sglang-shims status`` and ``doctor`` say which patches were judged there."""

from __future__ import annotations

from sglang_shims.catalog import tested
from sglang_shims.cli.status import Summary

from ..support.run import run_python


def test_untested_names_each_gated_distribution_newer_than_the_data() -> None:
    newest = tested.newest()
    assert {"sglang", "transformers", "torch", "sglang-kernel"} <= set(newest)
    versions = {"sglang": "99.0", "torch": newest["torch"] + "+cu130", "transformers": None}
    lines = tested.untested(["sglang", "torch", "transformers", "sglang"], versions.get)
    assert lines == [f"sglang 99.0 is newer than the newest tested ({newest['sglang']})"]
    assert tested.untested(["sglang"], {"sglang": newest["sglang"]}.get) == []
    assert not tested.newer("not a version", "1.0") and not tested.newer(None, "1.0")


def test_status_marks_a_patch_judged_on_a_newer_release() -> None:
    out = run_python("""
        import json
        from sglang_shims import _bootstrap
        from sglang_shims._toggles import Toggles
        from sglang_shims.catalog import data, load
        from sglang_shims.engine import Engine
        from sglang_shims.engine.gates import Environment
        from sglang_shims.engine.record import State

        shipped = data.read(load.builtin_root(), check_digest=False)
        env = Environment(versions={"sglang": "99.0", "transformers": "99.0"}, hermetic=True)
        engine = Engine(_bootstrap.Boot(), load.Catalog(shipped), Toggles({}), env)
        manifest = engine.manifests["tf5-gpt2-bytes-to-unicode"]
        engine.set_state(manifest, State.NOT_APPLICABLE, "judged in the test")
        status = engine.status()
        print(json.dumps([status["tf5-gpt2-bytes-to-unicode"].get("untested"),
                          "untested" in status["gemma-norm-fp32-plus-one"]]))
    """, activate=False)
    judged, pending = out.json()
    assert judged is not None and any(line.startswith("sglang 99.0 is newer") for line in judged)
    assert any(line.startswith("transformers 99.0 is newer") for line in judged)
    assert pending is False  # not judged yet: nothing to say


def test_status_command_lists_untested_ground_as_a_note(tmp_path: object) -> None:
    from pathlib import Path

    summary = Summary(Path(str(tmp_path)))
    summary.processes.append({"pid": 1, "ppid": 0, "role": "main", "origin": "pth",
                              "applied": 0, "argv": ["x"]})
    summary.patches["p"] = {"not-applicable": [{"pid": 1, "role": "main", "reason": "r"}]}
    summary.untested["p"] = ["sglang 99.0 is newer than the newest tested (0.5.23)"]
    assert "judged on untested ground: p: sglang 99.0 is newer" in summary.text()
    assert summary.problems == []
