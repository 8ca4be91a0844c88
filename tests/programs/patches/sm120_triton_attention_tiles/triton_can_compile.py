"""Whether this Triton (>= 3.3) can compile for a GPU target on this machine."""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource

major, minor = (int(x) for x in triton.__version__.split(".")[:2])
assert (major, minor) >= (3, 3), triton.__version__
print(triton.__version__)
