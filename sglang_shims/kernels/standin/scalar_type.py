"""Scalar type descriptors for ``sgl_kernel.scalar_type`` when sgl_kernel cannot load.

sglang's quantization code builds ``scalar_types.uint4b8`` and friends at import time
(awq.py, gptq.py, marlin helpers) even for unquantized models; only their identity and
a few properties are used then.  Types are created on first access by name, so every
name sglang asks for exists: ``uint4b8`` is 4 bits with bias 8, ``float8_e4m3fn`` is 8
bits, and so on.  Quantized kernels themselves are not provided by the fallback.
"""

from __future__ import annotations

import re
import zlib


class ScalarType:
    """A named scalar type; equal by name, with a stable id."""

    def __init__(self, name: str) -> None:
        self.name = name
        digits = re.findall(r"\d+", name)
        self.size_bits = int(digits[0]) if digits else 0
        bias = re.search(r"b(\d+)$", name)
        self.bias = int(bias.group(1)) if bias else 0
        self.id = zlib.crc32(name.encode()) & 0x7FFFFFFF

    def is_signed(self) -> bool:
        """``int*`` and ``float*`` are signed; ``uint*`` are not."""
        return self.name.startswith(("int", "float"))

    def is_floating_point(self) -> bool:
        """The ``float*`` types."""
        return self.name.startswith("float")

    def is_integer(self) -> bool:
        """Every type that is not floating point."""
        return not self.is_floating_point()

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ScalarType) and other.name == self.name

    def __hash__(self) -> int:
        return hash(self.name)

    def __repr__(self) -> str:
        return f"ScalarType.{self.name}"

    @classmethod
    def from_id(cls, scalar_type_id: int) -> ScalarType:
        """The type with this :attr:`id`, among those created so far."""
        for value in vars(scalar_types).values():
            if isinstance(value, ScalarType) and value.id == scalar_type_id:
                return value
        raise ValueError(f"no scalar type with id {scalar_type_id}")


class _ScalarTypes:
    def __getattr__(self, name: str) -> ScalarType:
        if name.startswith("__"):
            raise AttributeError(name)
        value = ScalarType(name)
        setattr(self, name, value)
        return value


scalar_types = _ScalarTypes()
NanRepr = ScalarType
