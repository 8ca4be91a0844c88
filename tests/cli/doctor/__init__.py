"""``sglang-shims doctor``: its checks, rules and the data they read."""
