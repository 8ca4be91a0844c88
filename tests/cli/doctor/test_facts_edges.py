"""Small readers of doctor's facts at their edges: pins behind extras that name each other out
of order, the DeepGEMM an unpinned sglang calls, one-number versions, absent versions, and
the value types that are frozen (hashable, shared between findings)."""

from __future__ import annotations

import dataclasses

import pytest

from sglang_shims.cli.doctor import facts as facts_module
from sglang_shims.cli.doctor import kernel_facts
from sglang_shims.cli.doctor.deep_gemm_facts import DeepGemm, expected_build
from sglang_shims.cli.doctor.neighbours import Neighbour
from sglang_shims.cli.doctor.requires import Pin, sglang_pins
from sglang_shims.cli.doctor.version_text import minor_of, version_between

from ...support.doctor import facts


def test_extras_that_pull_each_other_in_are_followed_in_any_order() -> None:
    """``sglang[srt]`` pulls ``sglang[a]``, which pulls ``sglang[b]``, listed the other way
    round: the pin under ``b`` is still one ``pip install sglang[srt]`` installs."""
    lines = ['foo==1.0; extra == "b"', 'sglang[b]; extra == "a"', 'sglang[a]; extra == "srt"',
             'bar==2.0; extra == "other"']
    pins = {p.dist: p.default for p in sglang_pins(lines, None)}
    assert pins == {"foo": True, "bar": False}


def test_an_unpinned_sglang_calls_the_deep_gemm_of_the_installed_kernel() -> None:
    assert expected_build(["numpy"], ("sgl-kernel", "0.3.21")) == (
        "kernel", "the copy bundled with sgl-kernel==0.3.21",
        "pip install --force-reinstall --no-deps 'sgl-kernel==0.3.21'")
    assert expected_build(["numpy"], None) is None
    pinned = expected_build(['sgl-kernel==0.3.5; extra == "srt"'], ("sgl-kernel", "0.3.21"))
    assert pinned is not None and pinned[1] == "the copy bundled with sgl-kernel==0.3.5"


def test_version_readers_at_their_edges() -> None:
    assert minor_of("2") == (2, 0) and minor_of("2.9.1+cu130") == (2, 9)
    assert minor_of(None) is None
    assert version_between("", "0.1", "9") is False and version_between(None, "0.1", "9") is False
    assert version_between("0.5", "0.1", "9") is True


@pytest.mark.parametrize("value", [Pin("foo", "==1", "", True), DeepGemm("/x"),
                                   kernel_facts.KernelBuild("0.1", "0.2", "2.5"),
                                   Neighbour("a role")])
def test_fact_values_are_frozen(value: object) -> None:
    field = dataclasses.fields(value)[0].name  # type: ignore[arg-type]
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(value, field, "changed")
    assert hash(value) == hash(value)


@pytest.mark.parametrize(("header", "read"), [(">=3.10", ">=3.10"), (None, "")])
def test_sglang_python_requirement_is_read_from_its_metadata(
        header: str | None, read: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``Requires-Python`` says, or nothing where the metadata has no such line."""
    from email.message import Message
    from importlib import metadata

    message = Message()
    if header is not None:
        message["Requires-Python"] = header
    monkeypatch.setattr(metadata, "metadata", lambda dist: message)
    monkeypatch.setattr(metadata, "requires", lambda dist: ["torch==2.8.0"])
    found = facts({"sglang": "0.5.23"})
    facts_module._gather_metadata(found)
    assert found.requires_python == {"sglang": read}
    assert found.requires["sglang"] == ["torch==2.8.0"]


@pytest.mark.parametrize(("kernel", "major"), [
    ("sgl-kernel 0.3.8", 12), ("sgl-kernel 0.4.1.post1", 12), ("sglang-kernel 0.4.2", 13),
    ("sglang-kernel 0.4.5", 13)])
def test_a_pypi_kernel_build_names_its_cuda_major(kernel: str, major: int) -> None:
    """The PyPI default file's CUDA, read from the kernel's build files at each bump: 12 up to
    0.4.1.post1, 13 from 0.4.2 (a wheel on disk, whose common_ops names its libcudart, is
    read instead)."""
    dist, version = kernel.split()
    found = facts({dist: version}).kernel_cuda_major()
    assert found is not None and found[0] == major, found


def test_every_arch_hint_speaks_of_its_own_architecture() -> None:
    """A remedy for "no kernel image" on sm_XY must be about sm_XY (or the sm_8x family)."""
    for (major, minor), text in kernel_facts.ARCH_HINTS.items():
        assert f"sm_{major}{minor}" in text or (major == 8 and "sm_8x" in text), (major, minor)
    # the GPUs a kernel release may lack code for each have theirs (sm_90 it always has)
    assert {(7, 5), (8, 0), (10, 0), (10, 3), (12, 0)} <= set(kernel_facts.ARCH_HINTS)


def test_the_gpus_torch_sees_are_named(monkeypatch: pytest.MonkeyPatch) -> None:
    """Capabilities, names and torch's arch list, as torch answers for each visible GPU."""
    import torch

    cuda = torch.cuda
    monkeypatch.setattr(cuda, "is_available", lambda: True)
    monkeypatch.setattr(cuda, "device_count", lambda: 2)
    monkeypatch.setattr(cuda, "get_device_capability", lambda i: (9, 0) if i == 0 else (12, 0))
    monkeypatch.setattr(cuda, "get_device_name", lambda i: f"GPU {i}")
    monkeypatch.setattr(cuda, "get_arch_list", lambda: ["sm_90", "sm_120"])
    found = facts({"torch": "2.11.0"})
    assert facts_module._gpus_from_torch(found) is True
    assert found.env.capabilities == [(9, 0), (12, 0)]
    assert found.gpu_names == ["GPU 0", "GPU 1"]
    assert found.torch_arch_list == ["sm_90", "sm_120"]


def test_ldconfig_is_the_one_on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """``ldconfig`` from ``PATH`` first; ``/sbin/ldconfig`` only where ``PATH`` has none."""
    asked: list[list[str]] = []
    monkeypatch.setattr(facts_module.shutil, "which", lambda name: "/opt/tools/ldconfig")
    monkeypatch.setattr(facts_module, "run_tool",
                        lambda argv, timeout: asked.append(argv) or "")
    facts_module._gather_lib_dirs(facts({}))
    assert asked == [["/opt/tools/ldconfig", "-p"]]
