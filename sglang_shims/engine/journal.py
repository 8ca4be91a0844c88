"""Applying one patch with a journal, so that it can always be undone.

Patch code never assigns to its target directly: it asks the :class:`PatchContext`
(``ctx.setattr``, ``ctx.wrap``, ``ctx.setenv`` ...), which records how to undo each
change.  If ``apply`` raises midway, the journal is replayed backwards and the
target is exactly as it was; ``sglang_shims.revert()`` replays the same journal.
As a second line of defence the engine also snapshots the target module's
``__dict__`` -- each binding, and the contents of each top-level list, dict, set and
bytearray -- and restores it after a failed apply, catching writes that bypassed the
context (``ctx.module.X = 1``, ``ctx.module.ITEMS.append(3)``).  That net is shallow and
covers the target module only: an in-place change anywhere else (a class attribute, a
nested container, another module) is undone only when made through ``ctx``, and
``revert()`` undoes only what the journal holds.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable, MutableMapping
from types import ModuleType
from typing import TYPE_CHECKING, Any, NoReturn

from .. import _bootstrap
from .._errors import ConflictError
from ..catalog.manifest import Manifest

if TYPE_CHECKING:
    from .gates import Environment

_MISSING = object()


class Retired(Exception):
    """Raised by patch code (``ctx.retire(...)``) when it finds the problem already fixed."""


class PatchContext:
    """What a patch's ``apply(ctx)`` gets: the target and journaled ways to change things."""

    def __init__(self, manifest: Manifest, module: ModuleType, env: Environment | None = None,
                 claims: dict[tuple[int, str], str] | None = None, *,
                 cause: str = "") -> None:
        self.manifest = manifest
        self.module = module
        self.log = logging.getLogger(f"sglang_shims.patch.{manifest.id}")
        self.notes: list[str] = []
        self.details: dict[str, Any] = {}
        """Structured facts for this patch's report entry (``status()[id]["details"]``)."""
        self._cause = cause
        # The journal: what the engine replays (undo) or lists (changes), never the patch.
        self._undo: list[tuple[str, Callable[[], None]]] = []
        # (id of the object, name) -> patch id, shared by every patch of the process:
        # a second patch touching the same place is refused, never silently chained.
        self._claims = {} if claims is None else claims
        self._mine: list[tuple[int, str]] = []
        if env is None:
            from .gates import Environment

            env = Environment()
        # the engine's: what the gates read, each version and the GPUs looked up once
        self._env = env

    # -- facts ------------------------------------------------------------------------

    @property
    def cause(self) -> str:
        """For a patch that stands in for its target (``when = "instead"``): why the real
        module cannot serve, e.g. the first line of the error its import raised."""
        return self._cause

    @property
    def target_missing(self) -> bool:
        """The target is not installed: its module body would be the stock
        ModuleNotFoundError (a stand-in patch, ``when = "instead"``, sees this)."""
        return isinstance(getattr(self.module, "__loader__", None), _bootstrap.Missing)

    def gpus(self) -> list[tuple[int, int]]:
        """Compute capabilities of this machine's GPUs, e.g. ``[(12, 0)]``; ``[]`` for none.

        Looked up once per process (``SGLANG_SHIMS_GPU_CAPABILITY`` overrides it, as it
        does for the ``[gpu]`` gate), so patches never import the engine's private modules
        and never run ``nvidia-smi`` twice.
        """
        return list(self._env.gpu())

    def version(self, dist: str) -> str | None:
        """The installed version of the distribution ``dist``; ``None`` when it is not
        installed.

        The engine's answer, the one the manifest's gates were judged by: each
        distribution's metadata is read once per process, whichever patch asks, so a patch
        never calls ``importlib.metadata`` itself.  For the kernel, ask for each name of
        :data:`sglang_shims.patching.KERNEL_DISTS` in order.
        """
        return self._env.version(dist)

    def _claim(self, obj: Any, name: str, label: str) -> None:
        key = (id(obj), str(name))
        owner = self._claims.get(key)
        if owner is not None and owner != self.manifest.id:
            raise ConflictError(f"{label} was already changed by patch {owner!r}; patches"
                                " on the same place are refused, not chained")
        if owner is None:
            self._claims[key] = self.manifest.id
            self._mine.append(key)

    # -- journaled changes -------------------------------------------------------------

    def setattr(self, obj: Any, name: str, value: Any) -> None:
        """``setattr(obj, name, value)``, remembering the old value (or its absence)."""
        # Only the object's own attribute counts: an inherited one comes back by deleting.
        try:
            old = vars(obj).get(name, _MISSING)
        except TypeError:  # no __dict__ (slots)
            old = getattr(obj, name, _MISSING)

        def undo() -> None:
            if old is _MISSING:
                try:
                    delattr(obj, name)
                except AttributeError:
                    pass
            else:
                setattr(obj, name, old)

        label = f"{_label(obj)}.{name}"
        self._claim(obj, name, label)
        setattr(obj, name, value)
        self._undo.append((f"setattr {label}", undo))

    def delattr(self, obj: Any, name: str) -> None:
        self._claim(obj, name, f"{_label(obj)}.{name}")
        old = getattr(obj, name)
        delattr(obj, name)
        self._undo.append((f"delattr {_label(obj)}.{name}", lambda: setattr(obj, name, old)))

    def setitem(self, mapping: MutableMapping[Any, Any], key: Any, value: Any) -> None:
        old = mapping.get(key, _MISSING)

        def undo() -> None:
            if old is _MISSING:
                mapping.pop(key, None)
            else:
                mapping[key] = old

        label = "os.environ" if mapping is os.environ else type(mapping).__name__
        self._claim(mapping, repr(key), f"{label}[{key!r}]")
        mapping[key] = value
        self._undo.append((f"setitem {label}[{key!r}]", undo))

    def setenv(self, name: str, value: str) -> None:
        """Set an environment variable for this process and the children it starts."""
        self.setitem(os.environ, name, value)

    def wrap(self, obj: Any, name: str,
             wrapper: Callable[[Callable[..., Any], Any, tuple[Any, ...], dict[str, Any]], Any]
             ) -> Any:
        """Wrap ``obj.name`` with ``wrapper(wrapped, instance, args, kwargs)`` (wrapt style).

        wrapt keeps the signature, ``__wrapped__`` and method binding (plain, class
        and static methods alike); it is imported here, on first use, because it is
        too heavy to import at interpreter start.
        """
        import wrapt

        wrapped = wrapt.FunctionWrapper(_raw_attribute(obj, name), wrapper)
        self.setattr(obj, name, wrapped)  # on ``obj`` itself: shadows a base, never edits it
        return wrapped

    def rebind(self, old: Any, new: Any, prefix: str) -> int:
        """Replace module-level copies of ``old`` (``from X import old``) by ``new``.

        Only modules whose name starts with ``prefix`` are touched; returns how many
        bindings changed.  Each change is journaled like any other.
        """
        count = 0
        for mod_name, mod in list(sys.modules.items()):
            if not (mod_name == prefix or mod_name.startswith(prefix + ".")):
                continue
            namespace = getattr(mod, "__dict__", None)
            if not isinstance(namespace, dict):
                continue
            for key, value in list(namespace.items()):
                if value is old:
                    self.setitem(namespace, key, new)
                    count += 1
        return count

    def on_undo(self, label: str, step: Callable[[], None]) -> None:
        """Journal a change made some other way (e.g. a finder put on sys.meta_path)."""
        self._undo.append((label, step))

    # -- signals ----------------------------------------------------------------------

    def retire(self, reason: str) -> NoReturn:
        """Stop here: the problem this patch fixes is not present. Undone, logged, no-op."""
        raise Retired(reason)

    def note(self, text: str) -> None:
        """Add a line to this patch's entry in the report."""
        self.notes.append(text)


# -- the journal, for the engine: functions, not methods, so that a patch's ``ctx`` offers
# only what a patch may do --------------------------------------------------------------

def changes(ctx: PatchContext) -> list[str]:
    """What ``ctx`` changed, oldest first, one label each (the report's ``changes``)."""
    return [label for label, _ in ctx._undo]


def undo(ctx: PatchContext) -> list[str]:
    """Undo every change ``ctx`` recorded, newest first, and release its claims; returns
    the errors met, if any."""
    errors = []
    while ctx._undo:
        label, step = ctx._undo.pop()
        try:
            step()
        except Exception as exc:  # keep undoing the rest
            errors.append(f"{label}: {type(exc).__name__}: {exc}")
    for key in ctx._mine:
        if ctx._claims.get(key) == ctx.manifest.id:
            del ctx._claims[key]
    ctx._mine.clear()
    return errors


def where_in_patch(exc: BaseException, manifest: Manifest) -> str:
    """``"<id>/patch.py:LINE: "`` for the innermost frame of the patch's own code in the
    exception's traceback, ``""`` if none: a failure reason then says which line of the
    patch to read, wherever the exception itself was raised (pluggy names the plugin's
    hook function the same way)."""
    if manifest.folder is None:
        return ""
    import traceback

    inside = str(manifest.folder) + os.sep
    found = ""
    for frame, line in traceback.walk_tb(exc.__traceback__):
        filename = frame.f_code.co_filename
        if filename.startswith(inside):
            found = f"{manifest.folder.name}/{filename[len(inside):]}:{line}: "
    return found


def interrupted(exc: BaseException, manifest: Manifest, during: str,
                rolled_back: bool = True) -> str:
    """The reason recorded for a patch stopped by Ctrl-C or ``sys.exit`` while ``during``:
    a program interrupted because it hung learns which patch was running, and where (the
    engine's warning says it, and the traceback that follows passes through the line)."""
    return (f"interrupted by {type(exc).__name__} while {during}"
            f" ({where_in_patch(exc, manifest).rstrip(': ') or manifest.id})"
            + ("; rolled back" if rolled_back else ""))


def _raw_attribute(obj: Any, name: str) -> Any:
    """``obj.name`` as it is stored: on a class, the descriptor from the first ``__dict__``
    of the MRO that has it (as ``wrapt.resolve_path`` looks it up).

    ``getattr`` on a class binds: an inherited classmethod would come back bound to the
    class named here, so a subclass calling the wrapper would get the wrong ``cls``, and an
    inherited staticmethod would come back as a plain function that the wrapper, set on
    the class, then binds as a method.  The raw descriptor keeps both kinds.
    """
    if isinstance(obj, type):
        for klass in obj.__mro__:
            namespace = vars(klass)
            if name in namespace:
                return namespace[name]
    return getattr(obj, name)


def _label(obj: Any) -> str:
    if isinstance(obj, ModuleType):
        return obj.__name__
    return getattr(obj, "__qualname__", type(obj).__name__)


_CONTAINERS = (list, dict, set, bytearray)
"""Mutable built-in containers whose contents a snapshot keeps: a patch that changes one of
the target's in place (``ctx.module.ITEMS.append(3)``) bypasses the journal, and only a
copy of the contents can put it back.  Exact types only: a subclass may compute its
contents (transformers' lazy mappings import modules when iterated)."""


class Snapshot:
    """The target module's namespace before ``apply``: each binding (by identity) and a
    shallow copy of each top-level built-in container, so :func:`restore` can undo what a
    patch changed without going through the journal."""

    def __init__(self, module: ModuleType) -> None:
        self.namespace = dict(module.__dict__)
        self.contents: dict[str, Any] = {}
        for key, value in self.namespace.items():
            if type(value) in _CONTAINERS and not key.startswith("__"):
                self.contents[key] = list(value.items()) if type(value) is dict \
                    else list(value)


def snapshot(module: ModuleType) -> Snapshot:
    return Snapshot(module)


def _same_contents(value: Any, saved: list[Any]) -> bool:
    """Identity, never ``==``: an element's ``__eq__`` is user code (a tensor's raises)."""
    current = list(value.items()) if type(value) is dict else list(value)
    if len(current) != len(saved):
        return False
    if type(value) is dict:
        return all(k1 is k2 and v1 is v2 for (k1, v1), (k2, v2) in zip(current, saved, strict=True))
    if type(value) is set:
        return {id(item) for item in current} == {id(item) for item in saved}
    return all(a is b for a, b in zip(current, saved, strict=True))


def _put_back(value: Any, saved: list[Any]) -> None:
    if type(value) in (dict, set):
        value.clear()
        value.update(saved)
    else:
        value[:] = saved


def restore(module: ModuleType, before: Snapshot) -> list[str]:
    """Make ``module.__dict__`` identical (by identity) to ``before``, and the contents of
    its top-level built-in containers too; list what differed."""
    namespace = module.__dict__
    fixed = []
    for key in list(namespace):
        if key not in before.namespace:
            del namespace[key]
            fixed.append(f"removed {key}")
    for key, value in before.namespace.items():
        if namespace.get(key, _MISSING) is not value:
            namespace[key] = value
            fixed.append(f"restored {key}")
    for key, saved in before.contents.items():
        value = namespace[key]
        if not _same_contents(value, saved):
            _put_back(value, saved)
            fixed.append(f"restored the contents of {key}")
    return fixed
