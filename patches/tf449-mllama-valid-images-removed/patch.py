"""Put ``is_valid_list_of_images`` back on transformers' mllama image processor (>= 4.49).

sglang 0.4.3.post1 and 0.4.3.post2 start ``sglang/srt/configs/qwen2_5_vl_config.py``
with::

    from transformers.models.mllama.image_processing_mllama import is_valid_list_of_images

transformers 4.49.0 dropped that helper from the mllama module, and since
``sglang/srt/configs/__init__.py`` imports the file, ``import sglang.srt.configs`` -- every
model load and the server -- fails with ``ImportError: cannot import name
'is_valid_list_of_images'`` (sglang issue 3946). 0.4.3.post3 defines it locally.

The helper is one line in transformers 4.48 and is written here from that behaviour:
the list itself when it is empty or falsy, else whether every item is a valid image by
``transformers.image_utils.is_valid_image`` (which 4.49 still has).
"""

from __future__ import annotations

from typing import Any

from sglang_shims.patching import PatchContext

MODULE = "transformers.models.mllama.image_processing_mllama"
NAME = "is_valid_list_of_images"


def is_valid_list_of_images(images: Any) -> Any:
    """transformers 4.48's definition: falsy input returned as is, else all items valid."""
    from transformers import image_utils

    valid: Any = image_utils.is_valid_image  # untyped in transformers
    return images and all(valid(image) for image in images)


def apply(ctx: PatchContext) -> None:
    import importlib

    module = importlib.import_module(MODULE)
    if hasattr(module, NAME):
        ctx.retire(f"{MODULE} still defines {NAME}")
    ctx.setattr(module, NAME, is_valid_list_of_images)
    ctx.note(f"{MODULE}.{NAME} put back (transformers 4.48's definition)")
