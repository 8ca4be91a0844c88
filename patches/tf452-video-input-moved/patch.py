"""Give ``transformers.image_utils`` its ``VideoInput`` again (transformers >= 4.52).

sglang 0.4.3.post1 - 0.4.4.post1 ship their own ``sglang/srt/configs/qwen2_5_vl_config.py``,
which starts with::

    from transformers.image_utils import (..., VideoInput, ...)

transformers 4.52.0 moved the ``VideoInput`` type alias, with the rest of its video helpers,
into the new ``transformers.video_utils``, and ``image_utils`` no longer mentions it.  Since
``sglang/srt/configs/__init__.py`` imports the file, ``import sglang.srt.configs`` -- every
model load and the server -- fails with ``ImportError: cannot import name 'VideoInput' from
'transformers.image_utils'``.  0.4.4.post2 dropped the file (it uses transformers' own
Qwen2.5-VL config and processor).

The name is a ``typing.Union`` used only in annotations there (``videos: VideoInput =
None``, ``Union[ImageInput, VideoInput]``), never called, so a lazy ``[[provide]]`` proxy
would stay in those annotations as a wrong value; the alias still exists, so the real one,
``transformers.video_utils.VideoInput`` (what transformers' own processors annotate videos
with), is bound under the old name before the file's body runs.  Importing ``video_utils``
that early costs nothing extra: the file imports ``transformers.processing_utils``, which
imports ``video_utils`` itself (read in 4.52.0 and 5.25.0).
"""

from __future__ import annotations

import importlib

from sglang_shims.patching import PatchContext

NAME = "VideoInput"
OLD = "transformers.image_utils"
NEW = "transformers.video_utils"


def apply(ctx: PatchContext) -> None:
    old = importlib.import_module(OLD)
    if NAME in vars(old):
        ctx.retire(f"{OLD} defines {NAME}")
    alias = getattr(importlib.import_module(NEW), NAME)
    ctx.setattr(old, NAME, alias)
    ctx.note(f"{OLD}.{NAME} bound to {NEW}.{NAME}, where transformers 4.52 moved it")
