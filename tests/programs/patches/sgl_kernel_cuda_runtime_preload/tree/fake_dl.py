"""Stand-in for the dynamic loader: which sonames are loaded, and which the system finds."""
import json
import os
from pathlib import Path

LOADED = dict.fromkeys(json.loads(os.environ.get("ALREADY_LOADED", "[]")), "before")
SYSTEM = set(json.loads(os.environ.get("ON_SYSTEM_PATH", "[]")))


def load(path):
    LOADED[Path(path).name] = str(path)


def is_loaded(soname):
    return soname in LOADED


def on_system_path(soname):
    return soname in SYSTEM
