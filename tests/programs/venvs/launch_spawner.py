"""A script that spawns a child (multiprocessing's "spawn"): in both, whether sglang's GPTQ
module imports (patched or stock) and whether the user's sitecustomize ran."""
import json
import multiprocessing as mp
import os


def probe():
    try:
        import sglang.srt.layers.quantization.gptq
        outcome = "patched"
    except ImportError:
        outcome = "stock"
    return {"pid": os.getpid(), "outcome": outcome,
            "user_site": os.environ.get("USER_SITECUSTOMIZE_RAN")}


def child(queue):
    queue.put(probe())


if __name__ == "__main__":
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=child, args=(queue,))
    proc.start()
    kid = queue.get(timeout=120)
    proc.join(60)
    print(json.dumps({"parent": probe(), "child": kid}))
