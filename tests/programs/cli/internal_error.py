"""``sglang-shims check`` whose command raises a bug of ours: exits with the CLI's code."""
import sglang_shims.cli as c


def boom(args):
    raise KeyError("bug")


c.cmd_check = boom
raise SystemExit(c.main(["check"]))
