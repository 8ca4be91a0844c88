"""Inputs for ``is_valid_list_of_images``: images, arrays, nested, empty and mixed lists; a
helper's answers on them, as a table."""
import json

import numpy as np
import PIL.Image

img = PIL.Image.new("RGB", (4, 4))
arr = np.zeros((4, 4, 3), dtype=np.uint8)
INPUTS = [[img], [img, arr], [arr], [], [img, "x"], ["x"], [img, None], [[img]], [1, 2]]


def table(check):
    out = []
    for value in INPUTS:
        got = check(value)
        out.append(got if isinstance(got, bool) else repr(got))
    return out
