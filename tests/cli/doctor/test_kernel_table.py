"""doctor's kernel -> torch table reaches the first sgl-kernel still published (0.1.0).

Environments of public reports: sgl-kernel 0.1.2 with torch 2.7.0 (sglang issue 5100,
"undefined symbol" at import), sglang 0.4.6.post1's own pins (sgl-kernel 0.1.0, torch
2.6.0), 0.1.0 on torch 2.5.1 (its torch symbols are all exported there, read from the
wheels) and 0.1.7 on torch 2.6.0.
"""

from __future__ import annotations

from sglang_shims.cli import doctor

from ...support.doctor import facts


def abi(versions: dict[str, str]) -> doctor.finding.Finding:
    [found] = doctor.checks.abi.check_abi(facts(versions))
    return found


def test_issue_5100_kernel_0_1_2_on_torch_2_7() -> None:
    found = abi({"sgl-kernel": "0.1.2", "torch": "2.7.0"})
    assert found.level == "fail"
    assert found.detail.startswith("sgl-kernel 0.1.2 was built against torch 2.6.0; torch 2.7.0 "
                                   "is installed: loading it fails with an undefined-symbol")
    assert found.remedy.startswith("pip install 'torch==2.6.0' (the torch sgl-kernel 0.1.2 was "
                                   "built with); keep torch 2.7.0 and install a kernel built "
                                   "for it: pip install 'sgl-kernel==0.2.9'")


def test_sglang_0_4_6_post1_pins_are_ok() -> None:
    assert abi({"sgl-kernel": "0.1.0", "torch": "2.6.0"}).level == "ok"
    assert abi({"sgl-kernel": "0.1.9", "torch": "2.7.1"}).level == "ok"


def test_kernel_0_1_0_also_loads_on_torch_2_5() -> None:
    found = abi({"sgl-kernel": "0.1.0", "torch": "2.5.1"})
    assert found.level == "ok"
    assert "also exported by torch 2.5.1" in found.detail
    assert abi({"sgl-kernel": "0.1.1", "torch": "2.5.1"}).level == "fail"


def test_kernel_0_1_7_needs_torch_2_7() -> None:
    found = abi({"sgl-kernel": "0.1.7", "torch": "2.6.0"})
    assert found.level == "fail" and "built against torch 2.7.1" in found.detail
    assert "sgl-kernel==0.1.6.post1" in found.remedy  # the newest kernel built for torch 2.6


def test_issue_5247_kernel_0_0_x_on_torch_2_7() -> None:
    """0.0.x are gone from PyPI; sglang 0.4.3.post3-0.4.5.post2 pinned them with torch 2.5.1
    (read from those wheels' Requires-Dist), and issue 5247 reports them failing on 2.7."""
    found = abi({"sgl-kernel": "0.0.8", "torch": "2.7.0"})
    assert found.level == "fail"
    assert found.detail.startswith("sgl-kernel 0.0.8 was built against torch 2.5.1; torch 2.7.0")
    assert found.remedy.startswith("pip install 'torch==2.5.1' (the torch sgl-kernel 0.0.8 was "
                                   "built with); keep torch 2.7.0 and install a kernel built "
                                   "for it: pip install 'sgl-kernel==0.2.9'")
    # pinned with torch 2.6.0 by sglang 0.4.5.post3 and 0.4.6: said, and from where
    ok = abi({"sgl-kernel": "0.0.9.post2", "torch": "2.6.0"})
    assert ok.level == "ok" and "sglang pinned it with torch 2.6.0 too" in ok.detail


def test_a_kernel_gone_from_pypi_is_never_the_remedy() -> None:
    """0.1.1 (torch 2.6 build) on torch 2.5.1: the only kernels built for 2.5 are 0.0.x,
    which no one can install any more, so the remedy says to change torch."""
    found = abi({"sgl-kernel": "0.1.1", "torch": "2.5.1"})
    assert found.level == "fail"
    assert "0.0." not in found.remedy
    assert "no published kernel was built with torch 2.5, so change torch" in found.remedy
