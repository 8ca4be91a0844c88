"""doctor's pin check covers every package sglang pins exactly, and the grammar libraries.

The Requires-Dist lines are the real ones, read from the published sglang wheels; the
installed versions are the environments of public reports (sglang issue 2552: vllm 0.6.5
pulled outlines 0.1.11 under sglang 0.4.x) or plausible drifts of a 0.5.1 install.
"""

from __future__ import annotations

import zipfile

import pytest

from sglang_shims.cli import doctor
from sglang_shims.cli.doctor.finding import Finding

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
    assert warns["sglang 0.4.2.post3 pins vllm==0.6.4.post1; vllm 0.6.5 is installed"] == (
        "pip install 'vllm==0.6.4.post1' (or an sglang release that pins vllm 0.6.5)")
    # outlines 0.1.11 is outside the default range but is what the ROCm extra pins: said so
    infos = {f.detail for f in found if f.level == "info"}
    assert ("sglang 0.4.2.post3 pins outlines<0.1.0,>=0.0.44; outlines 0.1.11 matches its "
            "[srt-hip] extra instead (outlines==0.1.11)") in infos
    # the pins that are missing (a grammar library's range among them) are one row, with
    # the one command that installs them all
    [missing] = [f for f in found if "not installed" in f.detail]
    assert missing.detail == (
        "sglang 0.4.2.post3 requires 4 distributions that are not installed: "
        "sgl-kernel>=0.0.3.post2, flashinfer-python>=0.2.0.post2, xgrammar>=0.1.10, "
        "torchao>=0.7.0")
    assert "`pip install 'sglang[srt]==0.4.2.post3'` without --no-deps" in missing.remedy


def test_exact_pins_of_sglang_0_5_1() -> None:
    base = {"torch": "2.8.0", "sgl-kernel": "0.3.5", "transformers": "4.55.2",
            "flashinfer-python": "0.2.11.post3", "torchaudio": "2.8.0", "outlines": "0.1.11"}
    found = findings({**base, "xgrammar": "0.1.25", "torchao": "0.12.0"}, "0.5.1")
    warns = {f.detail: f.remedy for f in found if f.level == "warn"}
    assert warns == {
        "sglang 0.5.1 pins xgrammar==0.1.23; xgrammar 0.1.25 is installed":
            "pip install 'xgrammar==0.1.23' (or an sglang release that pins xgrammar 0.1.25)",
        "sglang 0.5.1 pins torchao==0.9.0; torchao 0.12.0 is installed":
            "pip install 'torchao==0.9.0' (or an sglang release that pins torchao 0.12.0)",
    }
    [ok] = [f for f in found if f.level == "ok"]
    for met in ("outlines 0.1.11", "torchaudio 2.8.0", "torch 2.8.0"):
        assert met in ok.detail
    # exact pins that are not installed are reported, not warned about: features import
    # them; all in one row, with the one command that installs them
    [missing] = [f for f in found if f.level == "info"]
    assert "requires 6 distributions that are not installed" in missing.detail
    assert "openai==1.99.1, openai-harmony==0.0.4" in missing.detail
    assert missing.remedy == ("these are sglang 0.5.1's own requirements: `pip install "
                              "'sglang[srt]==0.5.1'` without --no-deps installs them")
    assert not any("openai" in d for d in warns)
