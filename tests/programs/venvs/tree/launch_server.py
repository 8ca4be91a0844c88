"""Stand-in for ``sglang.launch_server``: the import chain every launch takes, and --help."""
import sys

import sglang.srt.layers.quantization.awq  # the import chain every launch takes

if __name__ == "__main__" and "--help" in sys.argv:
    print("usage: launch_server [--model-path MODEL_PATH] ...")
