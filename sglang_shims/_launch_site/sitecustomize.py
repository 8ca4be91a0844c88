# sglang-shims launcher bootstrap.  `python -m sglang_shims.launch` puts this folder at the
# front of PYTHONPATH when the .pth hook is not processed (e.g. a `pip install --target`
# folder reached through PYTHONPATH), so that every child interpreter -- multiprocessing
# spawn/forkserver children, subprocesses -- activates the shims at start-up too.
#
# Rules, learned from ddtrace's and OpenTelemetry's bootstraps:
# * it never recurses: this folder leaves sys.path before anything else is imported;
# * it does not leak: it activates only in the interpreter the launcher started (same
#   sys.prefix and a Python that sglang-shims supports); anywhere else it only chains;
# * it chains: the user's own sitecustomize (next on sys.path) is imported afterwards;
# * it never raises.
# Plain syntax on purpose: an older interpreter that inherits PYTHONPATH must parse it.
import os
import sys


def _sglang_shims_launch_site():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    try:
        if (os.environ.get("SGLANG_SHIMS_LAUNCH_PREFIX") == sys.prefix
                and sys.version_info >= (3, 10)):
            import sglang_shims._bootstrap
            sglang_shims._bootstrap.activate("launch-site")
    except Exception as exc:
        sys.stderr.write("sglang-shims: launcher bootstrap failed (%s: %s)\n"
                         % (type(exc).__name__, exc))
    this = sys.modules.pop("sitecustomize", None)
    try:
        import sitecustomize  # noqa: F401  (the user's own, if any)
    except ImportError as exc:
        if this is not None:
            sys.modules["sitecustomize"] = this
        if getattr(exc, "name", None) != "sitecustomize":
            raise  # the user's sitecustomize failed: let site report it as usual


_sglang_shims_launch_site()
