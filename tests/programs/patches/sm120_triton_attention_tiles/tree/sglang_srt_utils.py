"""Stand-in for sglang.srt.utils: what the attention modules import from it."""
import torch


def is_cuda():
    return torch.version.hip is None and torch.cuda.is_available()


def is_hip():
    return torch.version.hip is not None


def is_gfx95_supported():
    return False
