"""Stand-in for triton: @jit keeps the function; a launch is recorded by the harness."""


class JITFunction:
    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__

    def __getitem__(self, grid):
        raise RuntimeError("the harness replaces the kernels before calling")


def jit(fn=None, **options):
    return JITFunction(fn) if fn is not None else JITFunction


def next_power_of_2(n):
    return 1 << (int(n) - 1).bit_length()


def cdiv(a, b):
    return -(-a // b)


from . import language
