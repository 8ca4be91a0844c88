"""A process that has imported torch once and forks a child per program to run.

Started by ``tests/support/zygote.py`` (``python -S`` with this environment's
site-packages on ``PYTHONPATH``); reads one JSON request a line on stdin and answers each
with two JSON lines on stdout: ``{"pid": N}`` when the child is forked, then
``{"returncode": N}`` when it has ended.  The child becomes what ``python -S -c CODE ARGS``
with that environment, that ``PYTHONPATH`` and that folder would have been, torch
already imported: its own ``__main__``, ``sys.argv``, ``sys.path``, ``os.environ``,
working folder and standard streams (files the client named).  It leaves through the
interpreter's own exit, so ``atexit`` handlers run and an uncaught exception prints its
traceback (without this file's frames) and exits 1, as ``-c`` does.

Why: a test program that imports sglang pays 1.5-2 s of CPU for ``import torch`` alone,
and the patch tests start hundreds of them; what sglang's import then loads from this
environment (:data:`PRELOAD`) is another ~2.5 s, the same in every program.
"""
import importlib
import json
import os
import sys
import types

import torch  # the point of this process

PRELOAD = ("torchvision", "torch._dynamo", "torch._inductor.compile_fx", "sympy", "networkx",
           "numpy", "PIL.Image", "aiohttp", "requests", "pydantic", "fastapi", "uvicorn",
           "zmq", "jinja2", "IPython", "gguf", "httpx", "psutil", "yaml", "tqdm", "einops",
           "msgspec", "orjson", "scipy")
"""What importing sglang loads from this environment besides torch (read from the patch
programs' ``sys.modules``, 2026-12-05): ~2.5 s of CPU a program on a 2-core machine,
torchvision and torch's compiler the most of it.  Never a package a patch watches or a
test's stack brings (``tests/process/test_fork_runs.py`` holds that): the first would be
imported before the shims could see it, the second would refuse every such stack."""

for _name in PRELOAD:
    try:
        importlib.import_module(_name)
    except Exception:  # absent or broken here: a program that needs it meets that itself
        pass

# sys.path as `python -S` builds it, less our own PYTHONPATH: what a child keeps after it
_STDLIB = [p for p in sys.path[1:] if p not in os.environ.get("PYTHONPATH", "").split(os.pathsep)]


def _child(request):
    """Become the requested program (never returns: leaves by SystemExit)."""
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    # fd 0 is the server's request pipe: a process the program starts must not inherit it
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the child's stdin for its whole life
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    entries = [p for p in request["env"].get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:] = ["", *entries, *_STDLIB]
    sys.argv[:] = ["-c", *request["args"]]
    main = types.ModuleType("__main__")
    main.__dict__["__builtins__"] = __builtins__
    sys.modules["__main__"] = main
    try:
        exec(compile(request["code"], "<string>", "exec"), main.__dict__)
    except SystemExit:
        raise
    except BaseException as exc:  # what `-c` does with it: traceback, exit status 1
        tb = exc.__traceback__.tb_next if exc.__traceback__ is not None else None
        sys.excepthook(type(exc), exc.with_traceback(tb), tb)
        raise SystemExit(1) from None
    raise SystemExit(0)


def serve():
    roots = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    loaded = sorted({name.partition(".")[0] for name, module in list(sys.modules.items())
                     if str(getattr(module, "__file__", None) or "").startswith(tuple(roots))})
    print(json.dumps({"loaded": loaded}), flush=True)  # what a stack must not bring again
    for line in sys.stdin:
        request = json.loads(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(request)
        print(json.dumps({"pid": pid}), flush=True)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"returncode": os.waitstatus_to_exitcode(status)}), flush=True)


serve()
