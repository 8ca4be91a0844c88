"""The built-in manifests as JSON: what a process reads when the engine wakes.

Parsing and validating 28 TOML manifests costs about 20 ms per sglang process; reading
the same data as JSON (C ``json``) costs well under one.  ``codegen`` writes
``catalog.json`` from the validated manifests, next to the start-up watch table; a test
checks that it equals what parsing the manifests gives.  TOML is parsed at run time only
for ``SGLANG_SHIMS_PATH`` folders, and for the built-ins of a source checkout whose JSON
no longer matches its manifests (see :func:`digest`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .manifest import Fingerprint, Gate, Manifest, Provide, Retire

CATALOG_JSON = Path(__file__).resolve().parent / "catalog.json"
SCHEMA = 1


def to_data(manifest: Manifest) -> dict[str, Any]:
    """A manifest as JSON-ready data, without where it was read from."""
    data = manifest.as_data()
    del data["folder"], data["source"]
    return data


def _gates(items: list[dict[str, Any]]) -> tuple[Gate, ...]:
    return tuple(Gate(tuple(g["dists"]), g["spec"]) for g in items)


def from_data(data: dict[str, Any], folder: Path | None) -> Manifest:
    """The inverse of :func:`to_data`, for a built-in patch living in ``folder``.

    No validation runs here: ``codegen`` wrote the JSON from manifests that passed it, and
    a source checkout whose manifests changed since is caught by :func:`digest`."""
    retire = data["retire"]
    return Manifest(
        id=data["id"], summary=data["summary"], evidence=tuple(data["evidence"]),
        target=data["target"], when=data["when"], default=data["default"],
        policy=data["policy"], changes=data["changes"], requires=_gates(data["requires"]),
        gpu=data["gpu"], code=data["code"], range_note=data["range_note"],
        test_with=dict(data["test_with"]), folder=folder, source="builtin",
        retire=Retire(retire["description"], tuple(retire["exported"]),
                      tuple(retire["installed"]), _gates(retire["versions"])),
        fingerprints=tuple(
            Fingerprint(f["module"], tuple(f["anchors"]), f["function"], tuple(f["sha256"]),
                        f["import_from"], tuple(f["import_names"]))
            for f in data["fingerprints"]),
        provides=tuple(
            Provide(p["name"], p["exported_by"], p["remedy"], tuple(p["provider_dists"]),
                    p["substitute"])
            for p in data["provides"]),
    )


def digest(root: Path) -> str:
    """A hash of every built-in manifest and whether it has code: what the JSON was made of.

    Checked only in a source checkout (where manifests change under a built JSON)."""
    import hashlib

    sha = hashlib.sha256()
    for manifest in sorted(root.glob("*/manifest.toml")):
        sha.update(manifest.parent.name.encode() + b"\0")
        sha.update(manifest.read_bytes() + b"\0")
        sha.update(b"code" if (manifest.parent / "patch.py").is_file() else b"none")
    return sha.hexdigest()


def render(manifests: list[Manifest], root: Path) -> str:
    """The text of ``catalog.json`` for these (built-in, validated) manifests."""
    body = {"schema": SCHEMA, "digest": digest(root),
            "manifests": [to_data(m) for m in sorted(manifests, key=lambda m: m.id)]}
    return json.dumps(body, indent=1, sort_keys=True) + "\n"


def read(root: Path, check_digest: bool) -> list[Manifest] | None:
    """The built-in manifests from ``catalog.json``; None if it is missing, of another
    schema or (``check_digest``: a source checkout) no longer made of the manifests."""
    try:
        body = json.loads(CATALOG_JSON.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(body, dict) or body.get("schema") != SCHEMA:
        return None
    if check_digest and body.get("digest") != digest(root):
        return None
    return [from_data(item, root / item["id"]) for item in body["manifests"]]
