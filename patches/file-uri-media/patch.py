"""``file:`` media URIs read per RFC 8089, and only from folders the operator allowed.

sglang's media loaders (``load_image``, ``load_video``, ``load_audio`` and, from 0.5.3,
``get_image_bytes``, in ``sglang.srt.utils`` or ``sglang.srt.utils.common``) take the
URL string of an OpenAI-style request as it came from the client.  Up to 0.5.8 they
do not understand ``file:`` at all for images and audio (the URI is opened as a
relative path, or base64-decoded); 0.5.5.post2 hands ``file://`` videos to the decoder
and 0.5.9 turns every ``file://host/path`` into ``/path``, silently dropping the host.
No release limits which local files a request may name.

Each loader is wrapped; only a ``str`` whose scheme is ``file`` (or, for
``load_image``, an object whose ``url`` is one) is changed:

* the authority must be empty or ``localhost`` (any other host is refused, never
  read locally); the path must be absolute; no query or fragment;
* the path is percent-decoded (``urllib.request.url2pathname``) and resolved with
  ``os.path.realpath`` (symlinks followed), and must then lie inside one of the
  folders in ``SGLANG_SHIMS_FILE_URI_ROOTS`` (absolute, ``os.pathsep``-separated),
  read at every call; unset or empty, every ``file:`` URI is refused;
* images and audio are then read here and handed to the loader as bytes (every
  release decodes bytes the same way as a path, whatever the file extension); a video
  is handed over as the resolved path.

Everything else (http(s), ``data:``, base64, plain paths, bytes, PIL images) reaches the
original loader unchanged.  The refusals are ``ValueError`` (``FileURIError``) naming
the URI and, where it helps, the variable; they never name the resolved path or the
roots, which stay in this process's log.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit
from urllib.request import url2pathname

from sglang_shims.patching import PatchContext

ENV = "SGLANG_SHIMS_FILE_URI_ROOTS"

# loader -> (name of its media parameter, what the loader is handed: "bytes" | "path")
LOADERS = {
    "load_image": ("image_file", "bytes"),
    "get_image_bytes": ("image_file", "bytes"),
    "load_audio": ("audio_file", "bytes"),
    "load_video": ("video_file", "path"),
}
REQUIRED = ("load_image", "load_video", "load_audio")
DEFINED_IN = ("sglang.srt.utils.common", "sglang.srt.utils")


class FileURIError(ValueError):
    """A ``file:`` URI that may not be read: malformed, remote, or outside the roots."""


def is_file_uri(value: object) -> bool:
    return isinstance(value, str) and value[:5].lower() == "file:"


def allowed_roots() -> list[str]:
    """The resolved folders of ``SGLANG_SHIMS_FILE_URI_ROOTS``; refuses a bad entry."""
    raw = os.environ.get(ENV, "")
    roots = []
    for raw_entry in raw.split(os.pathsep):
        entry = raw_entry.strip()
        if not entry:
            continue
        if not Path(entry).is_absolute():
            raise FileURIError(f"{ENV} entry {entry!r} is not an absolute path; file: URIs"
                               " are refused until it is fixed")
        roots.append(os.path.realpath(entry))
    return roots


def local_path(uri: str, log: Any = None) -> str:
    """The real path a ``file:`` URI names, if it is local and inside an allowed root."""
    try:
        parts = urlsplit(uri)
    except ValueError as exc:
        raise FileURIError(f"malformed file URI {uri!r}: {exc}") from None
    if parts.query or parts.fragment or "?" in uri or "#" in uri:
        raise FileURIError(f"file URI {uri!r} has a query or fragment; a local file is named"
                           " by its path alone (percent-encode '?' and '#')")
    host = parts.netloc
    if host and host.lower() != "localhost":
        raise FileURIError(f"file URI {uri!r} names the host {host!r}; only local files can be"
                           " read (file:///path or file://localhost/path)")
    if not parts.path.startswith("/"):
        raise FileURIError(f"file URI {uri!r} has a relative path; a file URI names an"
                           " absolute path (file:///path)")
    path = url2pathname(parts.path)
    if "\x00" in path:
        raise FileURIError(f"file URI {uri!r} contains a NUL byte")
    roots = allowed_roots()
    if not roots:
        raise FileURIError(f"file URI {uri!r} refused: local media files are allowed only"
                           f" under the folders listed in {ENV} (absolute paths separated by"
                           f" {os.pathsep!r}), and it is not set")
    real = os.path.realpath(path)
    if not any(_inside(real, root) for root in roots):
        if log is not None:
            log.warning("refused %s: resolves to %s, outside %s=%s", uri, real, ENV, roots)
        raise FileURIError(f"file URI {uri!r} refused: after resolving symbolic links it is"
                           f" outside every folder listed in {ENV}")
    if not Path(real).exists():
        raise FileNotFoundError(f"file URI {uri!r}: no such file")
    if not Path(real).is_file():
        raise FileURIError(f"file URI {uri!r} does not name a regular file")
    return real


def _inside(path: str, root: str) -> bool:
    try:
        return os.path.commonpath([path, root]) == root
    except ValueError:  # different drives (Windows)
        return False


def _read(path: str) -> bytes:
    return Path(path).read_bytes()


def _media_wrapper(ctx: PatchContext, name: str) -> Any:
    param, hand_over = LOADERS[name]

    def wrapper(wrapped: Any, instance: Any, args: tuple[Any, ...],
                kwargs: dict[str, Any]) -> Any:
        in_args = bool(args)
        value = args[0] if in_args else kwargs.get(param)
        uri = value
        if name == "load_image" and not isinstance(value, (str, bytes)):
            url = getattr(value, "url", None)  # ImageData (0.5.0+)
            uri = url if isinstance(url, str) else None
        if not is_file_uri(uri):
            return wrapped(*args, **kwargs)
        assert isinstance(uri, str)
        real = local_path(uri, ctx.log)
        new: Any = _read(real) if hand_over == "bytes" else real
        if in_args:
            args = (new, *args[1:])
        else:
            kwargs = {**kwargs, param: new}
        return wrapped(*args, **kwargs)

    return wrapper


def apply(ctx: PatchContext) -> None:
    defining = None
    for module_name in DEFINED_IN:
        module = sys.modules.get(module_name)
        if module is not None and all(callable(vars(module).get(n)) for n in REQUIRED):
            defining = module
            break
    if defining is None:
        raise RuntimeError(f"none of {', '.join(DEFINED_IN)} defines {', '.join(REQUIRED)}")
    wrapped = []
    copies = 0
    for name in LOADERS:
        original = vars(defining).get(name)
        if original is None:
            continue  # get_image_bytes exists from 0.5.3
        new = ctx.wrap(defining, name, _media_wrapper(ctx, name))
        # `from sglang.srt.utils import load_image` copies made before now, and the
        # star-import of utils.common into sglang.srt.utils (0.5.3+)
        copies += ctx.rebind(original, new, "sglang")
        wrapped.append(name)
    roots = os.environ.get(ENV, "").strip()
    ctx.note(f"wrapped {', '.join(wrapped)} in {defining.__name__} ({copies} re-exported"
             f" copies rebound); file: URIs "
             + (f"allowed under {ENV}={roots}" if roots else f"refused: {ENV} is not set"))
