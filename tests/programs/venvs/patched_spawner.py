"""A script that imports sglang's AWQ module, spawns a child that imports its GPTQ module
and prints the patch's state there, then reverts the shims."""
import multiprocessing as mp

import sglang_shims


def child(q):
    import sglang.srt.layers.quantization.gptq
    q.put(sglang_shims.status()["sgl-kernel-fused-marlin-moe"]["state"])


if __name__ == "__main__":
    import sglang.srt.layers.quantization.awq
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    p = ctx.Process(target=child, args=(q,))
    p.start()
    print(q.get(timeout=120))
    p.join(60)
    sglang_shims.revert()
