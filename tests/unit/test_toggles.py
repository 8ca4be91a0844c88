"""The SGLANG_SHIMS_* variables: parsing, precedence, and loud handling of mistakes."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sglang_shims._bootstrap import globally_off
from sglang_shims._toggles import Toggles, patch_var, split_ids, watched_modules

from ..support.run import run_python

IDS = ["sgl-kernel-fused-marlin-moe", "sgl-kernel-dist-renamed"]


def toggles(**env: str) -> Toggles:
    return Toggles(env)


class TestKillSwitch:
    def test_off_values(self) -> None:
        for value in ("0", "false", "OFF", " no ", "False"):
            assert globally_off({"SGLANG_SHIMS": value}), value

    def test_on_and_unset(self) -> None:
        for env in ({}, {"SGLANG_SHIMS": ""}, {"SGLANG_SHIMS": "1"}, {"SGLANG_SHIMS": "yes"}):
            assert not globally_off(env), env

    def test_all_patches_disabled_by_kill_switch(self) -> None:
        t = toggles(SGLANG_SHIMS="0", SGLANG_SHIMS_ENABLE=IDS[0])
        assert t.decide(IDS[0], True) == (False, "SGLANG_SHIMS=0")
        assert watched_modules(t) == {}

    def test_unreadable_value_is_reported_and_means_on(self) -> None:
        t = toggles(SGLANG_SHIMS="maybe")
        assert not t.all_off
        assert any("SGLANG_SHIMS='maybe'" in p for p in t.problems)


class TestPrecedence:
    def test_default(self) -> None:
        assert toggles().decide(IDS[0], True) == (True, "default")
        assert toggles().decide(IDS[0], False) == (False, "default")

    def test_lists(self) -> None:
        assert toggles(SGLANG_SHIMS_DISABLE=IDS[0]).decide(IDS[0], True) == (
            False, "SGLANG_SHIMS_DISABLE")
        assert toggles(SGLANG_SHIMS_ENABLE=IDS[0]).decide(IDS[0], False) == (
            True, "SGLANG_SHIMS_ENABLE")

    def test_per_patch_variable_wins(self) -> None:
        var = patch_var(IDS[0])
        assert var == "SGLANG_SHIMS_PATCH_SGL_KERNEL_FUSED_MARLIN_MOE"
        t = toggles(SGLANG_SHIMS_DISABLE=IDS[0], **{var: "1"})
        assert t.decide(IDS[0], True) == (True, f"{var}=1")
        t = toggles(SGLANG_SHIMS_ENABLE=IDS[0], **{var: "0"})
        assert t.decide(IDS[0], False) == (False, f"{var}=0")

    def test_both_lists_disable_and_warn(self) -> None:
        t = toggles(SGLANG_SHIMS_ENABLE=IDS[0], SGLANG_SHIMS_DISABLE=IDS[0])
        assert t.decide(IDS[0], True)[0] is False
        assert any("both" in m for m in t.unknown(IDS))

    def test_empty_means_unset(self) -> None:
        var = patch_var(IDS[0])
        t = toggles(SGLANG_SHIMS_DISABLE="", **{var: " "})
        assert t.decide(IDS[0], True) == (True, "default")
        assert t.problems == []

    def test_case_and_separators(self) -> None:
        t = toggles(SGLANG_SHIMS_DISABLE=f" {IDS[0].upper()} ,\t{IDS[1]}")
        assert t.decide(IDS[0], True)[0] is False
        assert t.decide(IDS[1], True)[0] is False

    def test_watched_modules_follow_toggles(self) -> None:
        from sglang_shims._bootstrap import TARGETS

        on_kernel = [pid for pid, target in TARGETS.items() if target == "sgl_kernel"]
        assert IDS[0] in on_kernel
        assert "sgl_kernel" in watched_modules(toggles())
        assert "sgl_kernel" in watched_modules(toggles(SGLANG_SHIMS_DISABLE=IDS[0])) \
            or on_kernel == [IDS[0]]
        assert "sgl_kernel" not in watched_modules(
            toggles(SGLANG_SHIMS_DISABLE=",".join(on_kernel)))


class TestUnknownIds:
    def test_unknown_ids_named_with_a_suggestion(self) -> None:
        t = toggles(SGLANG_SHIMS_DISABLE="nope,sgl-kernel-dist-renamd",
                    SGLANG_SHIMS_ENABLE="also-nope", SGLANG_SHIMS_PATCH_NOT_A_PATCH="1")
        messages = t.unknown(IDS)
        assert len(messages) == 3
        disable, enable, per_patch = messages
        assert "'nope'" in disable and "'sgl-kernel-dist-renamd' (did you mean" \
            " sgl-kernel-dist-renamed?)" in disable
        assert "'also-nope'" in enable and "did you mean" not in enable
        assert "SGLANG_SHIMS_PATCH_NOT_A_PATCH" in per_patch

    def test_ten_thousand_unknown_ids_give_one_bounded_line(self) -> None:
        """One line per variable, whatever the input's size (one line per id, each listing
        every known id, would be 8.4 MB of stderr per process)."""
        huge = ",".join(f"id{i}" for i in range(10_000)) + ",x" + "y" * 100_000
        messages = toggles(SGLANG_SHIMS_DISABLE=huge, SGLANG_SHIMS_ENABLE=huge).unknown(IDS)
        assert len(messages) == 2
        assert all(m.count("\n") == 0 and len(m.encode()) < 600 for m in messages), messages
        assert "10001 unknown patch ids" in messages[0] and "and 9996 more" in messages[0]

    def test_misspelt_variable_names(self) -> None:
        t = toggles(SGLANG_SHIMS_DISABLED=IDS[0], SGLANG_SHIMS_DSIABLE="x",
                    SGLANG_SHIMS_REPORT_DIR="/tmp", SGLANG_SHIMS_PATCH_SGL_KERNEL_DIST_RENAMED="1")
        assert t.decide(IDS[0], True) == (True, "default")
        (message,) = t.unknown(IDS)
        assert "'SGLANG_SHIMS_DISABLED' (did you mean SGLANG_SHIMS_DISABLE?)" in message
        assert "'SGLANG_SHIMS_DSIABLE' (did you mean SGLANG_SHIMS_DISABLE?)" in message
        assert "REPORT_DIR" not in message

    def test_kernel_backend_and_gpu_capability_values(self) -> None:
        assert toggles(SGLANG_SHIMS_KERNEL_BACKEND="torch").problems == []
        assert toggles(SGLANG_SHIMS_GPU_CAPABILITY="9.0, 12.0").problems == []
        (backend,) = toggles(SGLANG_SHIMS_KERNEL_BACKEND="cuda-lol").problems
        assert "'cuda-lol'" in backend and "triton, torch" in backend
        (capability,) = toggles(SGLANG_SHIMS_GPU_CAPABILITY="abc").problems
        assert "'abc'" in capability and "12.0" in capability

    def test_bad_per_patch_value(self) -> None:
        t = toggles(**{patch_var(IDS[0]): "perhaps"})
        assert t.decide(IDS[0], True) == (True, "default")
        assert any("perhaps" in p for p in t.problems)

    def test_strict_values(self) -> None:
        assert toggles(SGLANG_SHIMS_STRICT="1").strict
        assert not toggles(SGLANG_SHIMS_STRICT="0").strict
        t = toggles(SGLANG_SHIMS_STRICT="very")
        assert not t.strict and t.problems


env_values = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(st.dictionaries(
    st.sampled_from(["SGLANG_SHIMS", "SGLANG_SHIMS_DISABLE", "SGLANG_SHIMS_ENABLE",
                     "SGLANG_SHIMS_STRICT", "SGLANG_SHIMS_PATCH_SGL_KERNEL_DIST_RENAMED",
                     "SGLANG_SHIMS_PATCH_X"]),
    env_values))
def test_any_environment_parses(env: dict[str, str]) -> None:
    """No value of any toggle raises; every decision names its cause."""
    t = toggles(**env)
    for patch_id in IDS:
        enabled, by = t.decide(patch_id, True)
        assert isinstance(enabled, bool) and by
    assert all(isinstance(m, str) and m for m in t.unknown(IDS) + t.problems)


@given(st.lists(st.text(alphabet="abcdefgh-.", min_size=1, max_size=12), max_size=6),
       st.sampled_from([",", " ", " , ", "\t"]))
def test_split_ids_roundtrip(ids: list[str], sep: str) -> None:
    expected = [i.strip().lower() for i in ids if i.strip()]
    assert split_ids(sep.join(ids)) == expected


def test_toggle_warnings_wait_for_a_watched_import_and_come_once(tmp_path: Path) -> None:
    """Nothing is said by a process that never imports a watched module; the first watched
    import says each problem once, in one line."""
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "__init__.py").write_text("")
    env = {"SGLANG_SHIMS_DISABLED": IDS[0], "SGLANG_SHIMS_KERNEL_BACKEND": "cuda"}
    quiet = run_python("import json", paths=(tmp_path,), env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""
    woke = run_python("import json\nimport kernels\nimport kernels", paths=(tmp_path,), env=env)
    assert woke.returncode == 0, woke.stderr
    assert woke.stderr.count("did you mean SGLANG_SHIMS_DISABLE?") == 1, woke.stderr
    assert woke.stderr.count("SGLANG_SHIMS_KERNEL_BACKEND='cuda' is not one of") == 1


@pytest.mark.parametrize("name", ["SGLANG_SHIMS", "SGLANG_SHIMS_STRICT",
                                  "SGLANG_SHIMS_KERNEL_BACKEND", "SGLANG_SHIMS_GPU_CAPABILITY",
                                  "SGLANG_SHIMS_PATCH_X"])
def test_a_long_bad_value_is_echoed_cut(name: str) -> None:
    problems = Toggles({name: "y" * 100_000}).problems
    assert len(problems) == 1 and len(problems[0]) < 300, problems


def test_a_long_log_level_is_echoed_cut(monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang_shims.engine import log

    monkeypatch.setenv("SGLANG_SHIMS_LOG", "loud" * 50_000)
    problem = log.configure()[1]
    assert problem is not None and len(problem) < 300
