"""The part of sglang's ``ModelRunner`` the step trace wraps: ``forward(forward_batch)``."""

from __future__ import annotations

from typing import Any


class ModelRunner:
    def forward(self, forward_batch: Any, *args: Any, **kwargs: Any) -> Any:
        return ("ran", forward_batch.batch_size, args, kwargs)
