"""Stand-in for triton 3.4's knobs: ``knobs.cache`` reads the variables triton's does."""
import os


class _CacheKnobs:
    @property
    def home_dir(self):
        return os.environ.get("TRITON_HOME") or os.path.expanduser("~/")

    def _get(self, var, folder):
        if os.environ.get("FAKE_TRITON_EMPTY_KNOBS"):
            return ""
        return os.environ.get(var) or os.path.join(self.home_dir, ".triton", folder)

    dir = property(lambda self: self._get("TRITON_CACHE_DIR", "cache"))
    dump_dir = property(lambda self: self._get("TRITON_DUMP_DIR", "dump"))
    override_dir = property(lambda self: self._get("TRITON_OVERRIDE_DIR", "override"))


cache = _CacheKnobs()
