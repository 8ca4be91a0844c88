"""A stand-in for tilelang's Python surface that sglang's kernel module touches at import.

Only ``tilelang/transform/pass_config.py`` is tilelang's own, copied from a real wheel
beside this file; tilelang's library needs a CUDA driver to load.  ``jit`` records the
pass options each kernel is declared with instead of compiling anything.
"""
from .transform.pass_config import PassConfigKey

__all__ = ["JIT_CONFIGS", "PassConfigKey", "cdiv", "jit", "set_log_level"]

JIT_CONFIGS = []


def set_log_level(level):
    return None


def cdiv(a, b):
    return -(-a // b)


def jit(func=None, **options):
    JIT_CONFIGS.append(options.get("pass_configs"))
    if func is None:
        return lambda inner: inner
    return func
