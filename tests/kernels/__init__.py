"""The fallback kernels (``sglang_shims.kernels``): each op family against float64
references, the rules every kernel keeps, and the stand-in and serving tiers built on them."""
