"""Distribution names that more than one patch (and the doctor) asks about."""

from __future__ import annotations

KERNEL_DISTS = ("sglang-kernel", "sgl-kernel")
"""The distributions that install ``sgl_kernel``, in the order to believe them.

The kernel was published as ``sgl-kernel`` up to 0.3.x and as ``sglang-kernel`` from
0.4.0; the import name stayed ``sgl_kernel``, and both install the same files.  pip knows
nothing of the rename, so an environment can hold both: upgrading sglang (0.5.10 and later
require ``sglang-kernel``) installs the new name over the old one and leaves the old
name's metadata behind.  The files on disk are then the new name's, so ``sglang-kernel``
is asked first.  The exception -- the old name installed after the new one, as a
downgrade of sglang does -- is what the doctor's ``sgl-kernel`` check reports (it reads
the version the files carry) with the remedy: keep one of the two.
"""
