"""doctor on what others wrote and on machines that misbehave: a model config built to
crash a JSON reader, an ``nvidia-smi`` that hangs, a patch folder that does not load, a
``.postN`` release, an sglang installed with ``--no-deps``.  Each is judged in-process,
with hand-made facts where the machine does not matter."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from packaging.version import Version

from sglang_shims.cli import doctor, main
from sglang_shims.cli.doctor import Facts, Finding, Level, diagnose, report
from sglang_shims.cli.doctor.checks import tested
from sglang_shims.cli.doctor.checks.model_coverage import check_model
from sglang_shims.engine.gates import Environment

from ...support.doctor import by_check, facts
from ...support.packages import manifest_text, write_patch

# ------------------------------------------------------------------ model config.json


def _config(tmp_path: Path, data: bytes) -> Path:
    (tmp_path / "config.json").write_bytes(data)
    return tmp_path


@pytest.mark.parametrize(("data", "why"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested 100000 levels deep"),
    (b'{"model_type": "llama", "pad": "' + b"x" * (20 << 20) + b'"}',
     f"larger than 1,048,576 bytes ({(20 << 20) + 34:,})"),
    (b'["llama"]', "holds a JSON list, not an object"),
    (b'{"model_type": "llama",', "not JSON"),
])
def test_a_bad_config_json_is_one_warning_naming_the_file(
        tmp_path: Path, data: bytes, why: str) -> None:
    """A config built to exhaust the stack (json.loads raises RecursionError, which doctor
    --model-path once turned into "internal error") or to fill memory is a bad file."""
    folder = _config(tmp_path, data)
    [found] = check_model(str(folder))
    assert found.level == Level.WARN and found.check == "model-ops"
    assert f"could not read the model's config {folder / 'config.json'}: {why}" in found.detail
    assert "\n" not in found.detail and "download the model again" in found.remedy


def test_a_sound_config_is_still_read(tmp_path: Path) -> None:
    folder = _config(tmp_path, json.dumps({"model_type": "llama", "hidden_act": "silu",
                                           "architectures": ["LlamaForCausalLM"]}).encode())
    [found] = check_model(str(folder / "config.json"))
    assert "could not read" not in found.detail and "sgl_kernel ops" in found.detail
    assert found.level == Level.OK and "the Triton fallback provides all of them" in found.detail


def test_a_missing_config_is_one_warning_with_the_remedy(tmp_path: Path) -> None:
    [found] = check_model(str(tmp_path / "nowhere"))
    assert found.level == Level.WARN and "could not read the model's config.json" in found.detail
    assert "a local model folder that holds config.json" in found.remedy


@pytest.mark.parametrize(("config", "named"), [
    ({"_name_or_path": "org/model", "model_type": "llama"}, "org/model"),
    ({"model_type": "llama"}, "llama"),
    ({}, None),  # nothing in the config names it: the path given
])
def test_the_finding_names_the_model_by_what_its_config_says(
        tmp_path: Path, config: dict[str, str], named: str | None) -> None:
    folder = _config(tmp_path, json.dumps({"hidden_act": "silu", **config}).encode())
    [found] = check_model(str(folder))
    assert found.detail.startswith(f"{named or folder} (")


# ------------------------------------------------------------------ nvidia-smi


@pytest.fixture
def fake_smi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """An ``nvidia-smi`` first on PATH (the test writes its body); torch sees no GPU."""
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.delenv("SGLANG_SHIMS_GPU_CAPABILITY", raising=False)
    monkeypatch.setattr(doctor.facts, "_gpus_from_torch", lambda _facts: False)
    yield tmp_path / "nvidia-smi"


def _smi_facts(smi: Path, body: str) -> Facts:
    smi.write_text(f"#!/bin/sh\n{body}\n")
    smi.chmod(0o755)
    found = Facts(env=Environment())
    doctor.facts._gather_gpus(found, use_torch=False)
    return found


def test_an_nvidia_smi_that_hangs_is_a_timeout_not_no_gpu(
        fake_smi: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """It sleeps in a child of its own, which holds the pipe: doctor still returns on time."""
    monkeypatch.setattr(doctor.facts, "SMI_TIMEOUT", 0.5)
    start = time.monotonic()
    found = _smi_facts(fake_smi, "sleep 30")
    assert time.monotonic() - start < 5
    [gpu] = doctor.checks.gpu.check_gpus(found)
    assert gpu.level == Level.WARN
    assert gpu.detail.startswith(
        "the GPUs are unknown: `nvidia-smi --query-gpu=name,compute_cap,driver_version "
        "--format=csv,noheader` timed out: no answer within 0.5 s")
    assert "no GPU found" not in gpu.detail and "lists none" not in gpu.detail
    assert "SGLANG_SHIMS_GPU_CAPABILITY" in gpu.remedy


def test_an_nvidia_smi_that_fails_says_why(fake_smi: Path) -> None:
    found = _smi_facts(fake_smi, "echo \"NVIDIA-SMI has failed because it couldn't "
                       "communicate with the NVIDIA driver.\"; exit 9")
    [gpu] = doctor.checks.gpu.check_gpus(found)
    assert gpu.level == Level.WARN
    assert "failed (exit status 9): NVIDIA-SMI has failed because it couldn't" in gpu.detail


def test_an_nvidia_smi_that_lists_none_still_says_so(fake_smi: Path) -> None:
    [gpu] = doctor.checks.gpu.check_gpus(_smi_facts(fake_smi, "exit 0"))
    assert (gpu.level, gpu.detail) == (Level.INFO, "no GPU found (nvidia-smi lists none)")


# ------------------------------------------------------------------ patch folders


def test_a_patch_folder_that_does_not_load_fails_doctor(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """Its own failing finding, naming the folder and the manifest as the remedy (not the
    toggles' "fix the variable"), and exit 1, as list and check do."""
    root = tmp_path / "extra"
    write_patch(root, "good-one", manifest_text("good-one", "shimtarget.good"),
                "def apply(ctx):\n    pass\n")
    monkeypatch.setenv("SGLANG_SHIMS_PATH", str(root))
    monkeypatch.setattr(report, "diagnose", lambda *a, **k: [])  # the machine aside

    def run() -> tuple[int, dict[str, Any]]:
        code = main(["doctor", "--json", "--no-probe"])
        return code, json.loads(capsys.readouterr().out)

    code, data = run()
    assert code == 0 and data["not_loaded"] == {}
    assert not [f for f in data["findings"] if f["check"] == "patch-folder"]
    write_patch(root, "broken", 'id = "broken"\n')  # no summary, evidence, target...
    code, data = run()
    assert code == 1 and list(data["not_loaded"]) == ["broken"]
    [bad] = [f for f in data["findings"] if f["check"] == "patch-folder"]
    assert bad["level"] == "fail"
    assert bad["detail"].startswith(f"the patch folder {root / 'broken'} was not loaded, so "
                                    "its patch can never apply: manifest invalid: ")
    assert "fix its manifest" in bad["remedy"] and "sglang-shims check" in bad["remedy"]
    assert not [f for f in data["findings"] if f["check"] == "toggles" and "broken" in f["detail"]]


def test_doctor_adds_one_finding_per_acting_or_drifted_patch_and_the_serving_tier(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A patch that would apply gets an INFO line, a drifted one a WARN with the remedy,
    the others none; the serving tier is always said, once."""
    def view(patch: str, state: str) -> SimpleNamespace:
        return SimpleNamespace(
            manifest=SimpleNamespace(id=patch, summary=f"{patch} summary", target="a.b"),
            judged=SimpleNamespace(state=state, reason=f"{patch} reason"),
            as_dict=lambda: {"id": patch})

    views = [view("acts", "would-apply"), view("moved", "drifted"),
             view("idle", "not-applicable")]
    fake = SimpleNamespace(views=views, catalog=SimpleNamespace(errors={}),
                           setting_warnings=lambda: [])
    tier = Finding("serving tier", Level.INFO, "tier said")
    asked: list[dict[str, Any]] = []
    monkeypatch.setattr(report, "diagnose",  # the machine aside
                        lambda *a, **k: asked.append(k) or [])
    monkeypatch.setattr(report, "survey", lambda env: fake)
    monkeypatch.setattr(report, "serving_tier", lambda findings, env, result: tier)
    findings, _ = report.doctor()
    assert asked[0]["probe_import"] is True  # by default the import is tried in a child
    by_patch = {f.check: f for f in findings if f.check.startswith("patch ")}
    assert set(by_patch) == {"patch acts", "patch moved"}
    assert by_patch["patch acts"].level == Level.INFO
    assert by_patch["patch moved"].level == Level.WARN
    assert "sglang-shims explain moved" in by_patch["patch moved"].remedy
    assert [f for f in findings if f is tier] == [tier]


# ------------------------------------------------------------------ the matrix


def _tested(**versions: str | None) -> Finding:
    [found] = tested.check_tested(facts(versions))
    return found


@pytest.mark.parametrize(("versions", "where", "column"), [
    # a .postN is a release of its own: 0.5.3.post1 pins kernel 0.3.15, 0.5.3 pins 0.3.14.post1
    ({"sglang": "0.5.3.post1", "transformers": "4.57.0", "sgl-kernel": "0.3.15"},
     "sglang 0.5.3.post1 (matrix run", "kernel 0.3.15 (its export surface)"),
    # local labels (the kernel from sglang's cu130 index, a CUDA torch) are not releases
    ({"sglang": "0.5.3.post1", "transformers": "4.57.0", "sgl-kernel": "0.3.15+cu130",
      "torch": "2.11.0+cu130"},
     "sglang 0.5.3.post1 (matrix run", "kernel 0.3.15 (its export surface)"),
    # a kernel's .postN is its own build: 0.3.9.post2 is what 0.5.2 pins
    ({"sglang": "0.5.2", "transformers": "4.56.1", "sgl-kernel": "0.3.9.post2"},
     "sglang 0.5.2 (matrix run", "kernel 0.3.9.post2 (its export surface)"),
    ({"sglang": "0.5.12.post1", "transformers": "5.6.0", "sglang-kernel": "0.4.2.post2"},
     "sglang 0.5.12.post1 (matrix run", "kernel 0.4.2.post2 (its export surface)"),
])
def test_the_matrix_is_read_for_the_exact_release(
        versions: dict[str, str], where: str, column: str) -> None:
    found = _tested(**versions)
    assert found.detail.startswith(where) and column in found.detail
    assert "was not run" not in found.detail


@pytest.mark.parametrize("sglang", ["0.5.3.post1.dev12+g1a2b3c4", "0.5.4.dev0", "0.5.3.post4"])
def test_a_release_the_matrix_did_not_run_is_not_read_as_a_neighbour(sglang: str) -> None:
    found = _tested(sglang=sglang, transformers="4.57.0", **{"sgl-kernel": "0.3.15"})
    assert found.level == Level.INFO and "(matrix run" not in found.detail
    assert "is not in the compatibility matrix" in found.detail


def test_a_kernel_post_release_the_matrix_did_not_run_is_not_its_base() -> None:
    found = _tested(sglang="0.5.2", transformers="4.56.1", **{"sgl-kernel": "0.3.9.post1"})
    assert "this exact combination was not run" in found.detail
    assert "kernel 0.3.9.post1" in found.detail


def test_nothing_installed_is_said_in_words_not_none() -> None:
    found = _tested(sglang="0.5.1")
    assert "(transformers not installed, no kernel)" in found.detail
    assert "None" not in found.detail


@pytest.mark.parametrize(("key", "said", "stock"), [
    ("env_error", "env error: uv pip compile: no solution", "stock it could not be set up"),
    ("crash", "crash: exit -9: Killed", "stock it crashed"),
])
def test_an_env_error_or_crash_is_a_failure_not_not_run(
        monkeypatch: pytest.MonkeyPatch, key: str, said: str, stock: str) -> None:
    entry = json.loads(json.dumps(tested.matrix()["releases"]["0.5.3.post1"]))
    message = said.split(": ", 1)[1]
    for cell in entry["cells"]:
        if (cell["transformers"], cell["kernel"]) == ("pinned", "none"):
            for gone in ("graph", "model", "not_run", "env_error", "crash"):
                cell.pop(gone, None)
            cell[key] = message
    data = {**tested.matrix(), "releases": {"0.5.3.post1": entry}}
    monkeypatch.setattr(tested, "matrix", lambda: data)
    found = _tested(sglang="0.5.3.post1", transformers="4.57.0")
    assert found.level == Level.WARN
    assert f"with the shims {said}" in found.detail and stock in found.detail
    assert "4.57.0" in found.remedy


def test_a_release_past_the_matrix_is_untested_unless_the_matrix_lists_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Newer than every release run: untested, its patches apply by range; but a release
    the matrix lists and has not run yet is said so, even when it is the newest."""
    past = _tested(sglang="99.0.0")
    assert past.detail.startswith("sglang 99.0.0 is newer than the tested matrix")
    shipped = tested.matrix()
    newest = max(shipped["releases"], key=Version)
    data = {**shipped, "index": {**shipped["index"], "releases": [newest, "99.0.0"]}}
    monkeypatch.setattr(tested, "matrix", lambda: data)
    listed = _tested(sglang="99.0.0")
    assert "is in the compatibility matrix's range but was not run yet" in listed.detail


@pytest.mark.parametrize(("model", "passed", "said"), [
    (None, True, "the serving graph imports"),
    ({"ok": True}, True, "the serving graph imports and a small Qwen3 and Llama agree with"
                         " transformers"),
    ({"ok": None, "error": "no GPU"}, True,
     "the serving graph imports (the model check could not run on CPU: no GPU)"),
    ({"ok": False, "error": "logits differ"}, False,
     "the serving graph imports but the model check failed: logits differ"),
])
def test_a_cell_whose_graph_imports_says_what_its_model_check_found(
        model: dict[str, object] | None, passed: bool, said: str) -> None:
    cell: dict[str, object] = {"graph": {"ok": True}}
    if model is not None:
        cell["model"] = model
    assert tested._outcome(cell) == (passed, said)


# ------------------------------------------------------------------ sglang's pins

PINS_0_5_16 = [  # sglang 0.5.16's exact pins, abridged
    "sglang-kernel==0.4.5", "torch==2.11.0", "transformers==5.12.1", "triton==3.7.0",
    "flashinfer_python==0.6.9", "openai==2.6.1", "xgrammar==0.1.32", "torchao==0.9.0",
    "llguidance<0.8.0,>=0.7.11", "einops", 'torch_memory_saver==0.0.9; extra == "srt"',
]


def _diagnose(monkeypatch: pytest.MonkeyPatch, versions: dict[str, str]) -> list[Finding]:
    """diagnose() of a hermetic machine that has sglang 0.5.16's metadata."""
    made = facts({"sglang": "0.5.16", **versions}, requires={"sglang": PINS_0_5_16})
    monkeypatch.setattr(doctor, "gather", lambda env, **_: made)
    return diagnose(made.env)


def test_no_deps_sglang_is_one_finding_with_one_command(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pip install sglang --no-deps`` leaves every pin missing: one row says so, with the
    one command that installs them; a pin installed at another version keeps its row."""
    found = _diagnose(monkeypatch, {"torch": "2.9.1"})
    pins = by_check(found, "sglang-pin")
    missing, mismatch = pins
    assert missing.level == Level.WARN
    assert missing.detail == (
        "sglang 0.5.16 requires 9 distributions that are not installed: sglang-kernel==0.4.5, "
        "flashinfer-python==0.6.9, transformers==5.12.1, triton==3.7.0, llguidance<0.8.0,>=0.7.11, "
        "openai==2.6.1, torch-memory-saver==0.0.9, torchao==0.9.0, xgrammar==0.1.32")
    assert missing.remedy == ("these are sglang 0.5.16's own requirements: `pip install "
                              "'sglang[srt]==0.5.16'` without --no-deps installs them")
    assert mismatch.detail.startswith("sglang 0.5.16 pins torch==2.11.0; torch 2.9.1 is "
                                      "installed -- the runtime every kernel")
    remedies = [f.remedy for f in found]
    assert remedies.count("pip install 'sglang-kernel==0.4.5'") == 1


def test_a_missing_kernel_alone_is_remedied_once(monkeypatch: pytest.MonkeyPatch) -> None:
    everything = {"torch": "2.11.0", "transformers": "5.12.1", "triton": "3.7.0",
                  "flashinfer-python": "0.6.9", "openai": "2.6.1", "xgrammar": "0.1.32",
                  "torchao": "0.9.0", "llguidance": "0.7.20", "torch-memory-saver": "0.0.9"}
    found = _diagnose(monkeypatch, everything)
    [rule] = by_check(found, "sgl-kernel-not-installed")
    assert rule.remedy == "pip install 'sglang-kernel==0.4.5'"
    [pin] = [f for f in by_check(found, "sglang-pin") if f.level != Level.OK]
    assert pin.detail == "sglang 0.5.16 requires sglang-kernel==0.4.5; it is not installed"
    assert pin.remedy == "the same as for sgl-kernel-not-installed above"


def test_diagnose_probes_and_uses_torch_unless_told_not_to(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """By default the import probe runs and GPU detection may import torch."""
    asked: list[tuple[str, bool]] = []

    def gather(env: object, *, use_torch: bool) -> object:
        asked.append(("use_torch", use_torch))
        return SimpleNamespace(problems=[])

    def ordered(probe_import: bool, announce: object) -> list[object]:
        asked.append(("probe_import", probe_import))
        return []

    monkeypatch.setattr(doctor, "gather", gather)
    monkeypatch.setattr(doctor.checks, "ordered", ordered)
    assert diagnose() == []
    diagnose(use_torch=False, probe_import=False)
    assert asked == [("use_torch", True), ("probe_import", True),
                     ("use_torch", False), ("probe_import", False)]


def test_the_gpu_line_ends_with_the_driver_and_its_cuda() -> None:
    from sglang_shims.cli.doctor.checks.gpu import check_gpus

    f = facts({}, caps=[(9, 0)], driver_version="570.86", driver_cuda=12080,
              gpu_names=["NVIDIA H100"])
    (line,) = check_gpus(f)
    assert line.detail.startswith("GPU0 NVIDIA H100 ")
    assert line.detail.endswith("; driver 570.86, CUDA 12.8")
    assert check_gpus(facts({}, caps=[(9, 0)], driver_cuda=12080))[0].detail.endswith(
        "; driver ?, CUDA 12.8")
    assert "driver" not in check_gpus(facts({}, caps=[(9, 0)]))[0].detail


@pytest.mark.parametrize("origin", ["pth", "launch", None])
def test_this_interpreter_is_hooked_when_something_activated_it(
        origin: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang_shims import _bootstrap
    from sglang_shims.cli.doctor.checks import hook

    monkeypatch.setattr(_bootstrap, "active", lambda: origin)
    state = hook.this_interpreter()
    assert (state.active, state.origin) == (origin is not None, origin)


def test_the_hook_check_asks_a_child_with_this_process_environment(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """With no environment given, the child interpreter is started with this one's."""
    from sglang_shims.cli.doctor.checks import hook

    given: list[object] = []
    monkeypatch.setattr(hook, "child_interpreter",
                        lambda environ: given.append(environ) or "not started in this test")
    found = hook.check_hook(Facts(env=Environment(versions={}, capabilities=[])))
    assert given == [dict(os.environ)]
    assert [f.check for f in found] == ["hook", "hook-child"]


def test_torch_that_sees_no_gpu_on_a_machine_with_gpus_warns() -> None:
    from sglang_shims.cli.doctor.checks.installed import check_versions

    f = facts({"torch": "2.8.0"}, caps=[(9, 0)], torch_build="cuda", torch_cuda="12.8",
              torch_sees_gpu=False)
    (torch,) = by_check(check_versions(f), "torch")
    assert torch.level == Level.WARN
    assert torch.detail.startswith("torch 2.8.0 (CUDA 12.8): torch.cuda.is_available() is False")
    assert torch.remedy == "check CUDA_VISIBLE_DEVICES and that the driver matches torch's CUDA"


def test_a_kernel_distribution_without_its_package_warns() -> None:
    """``sgl-kernel`` installed (this interpreter's metadata says so) but no ``sgl_kernel``
    folder found: the arch check says so instead of judging nothing."""
    from sglang_shims.cli.doctor.checks.arch import check_arch

    f = Facts(env=Environment(versions={"sgl-kernel": "0.3.18"}, capabilities=[]))
    (found,) = check_arch(f)
    assert (found.check, found.level) == ("sgl-kernel-arch", Level.WARN)
    assert "no sgl_kernel package was found on sys.path" in found.detail
    assert check_arch(facts({"sgl-kernel": "0.3.18"})) == []  # hermetic: nothing to look at


@pytest.mark.parametrize(("probe_import", "hermetic", "starts_a_child"),
                         [(True, False, True), (True, True, False), (False, False, False)])
def test_the_import_probe_starts_a_child_only_when_asked_and_not_hermetic(
        probe_import: bool, hermetic: bool, starts_a_child: bool,
        monkeypatch: pytest.MonkeyPatch) -> None:
    from sglang_shims.cli.doctor import checks

    told: list[bool] = []
    monkeypatch.setattr(checks.probe, "check_import",
                        lambda f, run_child, announce: told.append(run_child) or [])
    probe = dict(checks.ordered(probe_import, None))["sgl-kernel-import"]
    probe(Facts(env=Environment(versions={}, capabilities=[], hermetic=hermetic)))
    assert told == [starts_a_child]
