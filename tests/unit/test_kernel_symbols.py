"""The facts about ``sgl_kernel`` names (``kernels.surface.symbols``), read from its data file
as the missing-symbols patch and the doctor read them: which release needs which names
(from ``sgl_kernel`` itself and from its submodules), the kernel a release pins, which names
another patch supplies for a kernel version, and which releases need a name.  In-process and
quick (the patch's own tests, which run sglang's imports, take minutes)."""

from __future__ import annotations

from sglang_shims.kernels.surface import symbols


def test_the_data_is_of_the_schema_this_reader_knows() -> None:
    assert symbols.load()["schema"] == symbols.SCHEMA


def test_a_release_the_data_lacks_needs_nothing_known() -> None:
    assert symbols.needed("99.0.0") is None
    assert symbols.needed_from_submodules("99.0.0") == {}
    assert symbols.pinned("99.0.0") is None
    assert symbols.guarded_in("apply_rope_with_cos_sin_cache_inplace", "99.0.0") == frozenset()


def test_a_release_needs_names_from_the_kernel_and_from_its_submodules() -> None:
    top = symbols.needed("0.5.1+cu128")  # a local label is the same release
    assert top is not None and "apply_rope_with_cos_sin_cache_inplace" in top
    assert all("." not in name for name in top)
    subs = symbols.needed_from_submodules("0.4.5")
    assert subs["flash_attn"]["flash_attn_with_kvcache"] == \
        "sglang.srt.layers.attention.flashattention_backend"
    assert symbols.pinned("0.5.1") == "sgl-kernel==0.3.5"


def test_the_releases_needing_a_name_are_those_whose_needs_list_it() -> None:
    releases = symbols.needing("apply_rope_with_cos_sin_cache_inplace")
    assert "0.5.1" in releases
    assert releases == [r for r in symbols.load()["releases"]
                        if "apply_rope_with_cos_sin_cache_inplace" in (symbols.needed(r) or {})]
    assert symbols.needing("no_such_name") == []


def test_a_name_another_patch_supplies_is_deferred_where_its_range_holds() -> None:
    [(name, (patch, spec))] = symbols.load()["deferred"].items()
    assert spec == ">=0.3.18"
    assert symbols.deferred(None) == {name: patch}  # no kernel installed: the other patch
    assert symbols.deferred("0.3.18") == {name: patch}
    assert symbols.deferred("0.3.17") == {}
    assert symbols.deferred("not a version") == {name: patch}
