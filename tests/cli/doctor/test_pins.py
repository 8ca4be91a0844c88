"""doctor's pin check covers every package sglang pins, and says what a mismatch breaks.

The Requires-Dist lines are the real ones, read from the published sglang wheels; the
installed versions are the environments of public reports (sglang issue 2552: vllm 0.6.5
pulled outlines 0.1.11 under sglang 0.4.x; sglang issue 24609: xgrammar's tvm-ffi
bindings under sglang 0.5.11) or plausible drifts of a 0.5.1 install.
"""

from __future__ import annotations

import zipfile

import pytest

from sglang_shims.cli import doctor
from sglang_shims.cli.doctor.finding import Finding
from sglang_shims.cli.doctor.neighbours import NEIGHBOURS
from sglang_shims.cli.doctor.requires import sglang_pins

from ...support.doctor import facts

pytestmark = pytest.mark.wheels


def requires(version: str) -> list[str]:
    from sglang_shims.testing import wheels

    with zipfile.ZipFile(wheels.fetch("sglang", version)) as archive:
        meta = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
        text = archive.read(meta).decode()
    return [ln.split(": ", 1)[1] for ln in text.splitlines() if ln.startswith("Requires-Dist: ")]


def findings(versions: dict[str, str], sglang: str) -> list[Finding]:
    return doctor.checks.pins.check_pins(facts({"sglang": sglang, **versions},
                                        requires={"sglang": requires(sglang)}))


def test_vllm_and_outlines_drift_under_sglang_0_4_2() -> None:
    """Issue 2552's environment: a vllm upgrade pulled outlines past sglang's range."""
    found = findings({"vllm": "0.6.5", "outlines": "0.1.11", "torch": "2.5.1"}, "0.4.2.post3")
    warns = {f.detail: f.remedy for f in found if f.level == "warn"}
    [(detail, remedy)] = [(d, r) for d, r in warns.items() if " pins vllm" in d]
    assert detail.startswith("sglang 0.4.2.post3 pins vllm==0.6.4.post1; vllm 0.6.5 is "
                             "installed -- layers sglang 0.4.x imports from vllm; known break")
    assert detail.endswith("[https://github.com/sgl-project/sglang/issues/2552]")
    assert remedy == "pip install 'vllm==0.6.4.post1' (or an sglang release that pins vllm 0.6.5)"
    # outlines 0.1.11 is outside the default range but is what the ROCm extra pins: said so
    infos = {f.detail for f in found if f.level == "info"}
    assert ("sglang 0.4.2.post3 pins outlines<0.1.0,>=0.0.44; outlines 0.1.11 matches its "
            "[srt-hip] extra instead (outlines==0.1.11)") in infos
    # the pins that are missing are one row, with the one command that installs them all
    [missing] = [f for f in found if "not installed" in f.detail]
    assert missing.detail.startswith("sglang 0.4.2.post3 requires ")
    for pin in ("sgl-kernel>=0.0.3.post2", "flashinfer-python>=0.2.0.post2", "xgrammar>=0.1.10",
                "torchao>=0.7.0", "pyzmq>=25.1.2", "prometheus-client>=0.20.0"):
        assert pin in missing.detail, pin
    assert "`pip install 'sglang[srt]==0.4.2.post3'` without --no-deps" in missing.remedy


def test_exact_pins_of_sglang_0_5_1() -> None:
    base = {"torch": "2.8.0", "sgl-kernel": "0.3.5", "transformers": "4.55.2",
            "flashinfer-python": "0.2.11.post3", "torchaudio": "2.8.0", "outlines": "0.1.11"}
    found = findings({**base, "xgrammar": "0.1.25", "torchao": "0.12.0"}, "0.5.1")
    warns = {f.detail.split(" -- ")[0]: f for f in found if f.level == "warn"}
    assert set(warns) == {"sglang 0.5.1 pins xgrammar==0.1.23; xgrammar 0.1.25 is installed",
                          "sglang 0.5.1 pins torchao==0.9.0; torchao 0.12.0 is installed"}
    xgrammar = warns["sglang 0.5.1 pins xgrammar==0.1.23; xgrammar 0.1.25 is installed"]
    assert xgrammar.remedy == ("pip install 'xgrammar==0.1.23' (or an sglang release that "
                               "pins xgrammar 0.1.25)")
    # what the mismatch is known to break, with the report and the patch that covers it
    assert xgrammar.detail.endswith(
        "[https://github.com/sgl-project/sglang/issues/24609]; sglang-shims' patch "
        "xgrammar-ffi-int-token-ids fixes it where it applies")
    [ok] = [f for f in found if f.level == "ok"]
    for met in ("outlines 0.1.11", "torchaudio 2.8.0", "torch 2.8.0"):
        assert met in ok.detail
    # pins that are not installed are reported, not warned about: features import them;
    # all in one row, with the one command that installs them
    [missing] = [f for f in found if f.level == "info" and "not installed" in f.detail]
    assert "openai==1.99.1, openai-harmony==0.0.4" in missing.detail
    assert missing.remedy == ("these are sglang 0.5.1's own requirements: `pip install "
                              "'sglang[srt]==0.5.1'` without --no-deps installs them")


def test_a_range_pin_off_its_range_is_said_as_information() -> None:
    """Every pin is compared, ranges too; a range with no known break is information."""
    found = findings({"torch": "2.8.0", "sgl-kernel": "0.3.5", "pyzmq": "24.0.0",
                      "llguidance": "1.2.0"}, "0.5.1")
    [pyzmq] = [f for f in found if " pins pyzmq" in f.detail]
    assert pyzmq.level == "info" and pyzmq.remedy == (
        "pip install 'pyzmq>=25.1.2' (or an sglang release that pins pyzmq 24.0.0)")
    [llguidance] = [f for f in found if " pins llguidance" in f.detail]
    assert llguidance.level == "info" and llguidance.detail.endswith(
        "structured output (the llguidance grammar backend); no break on record for a version "
        "off the pin")


def test_an_exact_pin_off_is_a_warning_even_without_a_known_break() -> None:
    """``torchaudio==2.8.0`` (sglang 0.5.1): no break on record, but an exact pin is the one
    release sglang was tested with. The pins met come first, as one row."""
    found = findings({"torch": "2.8.0", "sgl-kernel": "0.3.5", "torchaudio": "2.9.0"}, "0.5.1")
    [torchaudio] = [f for f in found if " pins torchaudio" in f.detail]
    assert torchaudio.level == "warn" and torchaudio.detail.startswith(
        "sglang 0.5.1 pins torchaudio==2.8.0; torchaudio 2.9.0 is installed")
    assert found[0].level == "ok" and found[0].detail.startswith("sglang 0.5.1's pins are met")
    assert sum(f.level == "ok" for f in found) == 1


@pytest.mark.parametrize("sglang", ["0.4.6.post5", "0.5.1", "0.5.11", "0.5.12", "0.5.23"])
def test_every_pinned_neighbour_is_named_when_off_its_pin(sglang: str) -> None:
    """Each library of the neighbour table that this release pins, installed at a version
    no pin allows, gets a row that names it with what the table knows of it."""
    pins = [p for p in sglang_pins(requires(sglang), None) if p.default]
    pinned = {p.dist for p in pins} & set(NEIGHBOURS)
    assert {"xgrammar", "torch"} <= pinned
    found = findings({dist: "0.0.0.dev0" for dist in pinned}, sglang)
    for dist in pinned:
        [row] = [f for f in found
                 if f" pins {dist}" in f.detail and f"{dist} 0.0.0.dev0" in f.detail]
        assert NEIGHBOURS[dist].role in row.detail, dist


def test_the_abi_pin_text_names_only_the_default_torch_and_kernel_pins() -> None:
    """An ABI finding quotes what sglang pins by default for torch and its kernel: not its
    other pins, not a pin under another extra."""
    from sglang_shims.cli.doctor.checks.abi import sglang_pin_text

    requires = {"sglang": ["torch==2.8.0", "sgl-kernel==0.3.16.post5", "transformers==4.57.1",
                           'torch==2.9.1; extra == "cu130"']}
    assert sglang_pin_text(facts({"sglang": "0.5.5"}, requires=requires)) == (
        "sglang 0.5.5 pins torch==2.8.0, sgl-kernel==0.3.16.post5")
    assert sglang_pin_text(facts({}, requires=requires)) == ""
    assert sglang_pin_text(facts({"sglang": "0.5.5"})) == ""
