"""What sglang (0.5.13 and later) needs before it builds a model's layers on CPU."""
import tempfile


def cpu_world(config):
    """The global ServerArgs, read from a folder holding ``config`` (ServerArgs reads the
    model's config.json), and a one-process gloo world."""
    from sglang.srt import server_args as sa
    from sglang.srt.distributed import parallel_state as ps

    folder = tempfile.mkdtemp()
    config.save_pretrained(folder)
    sa.set_global_server_args_for_scheduler(sa.ServerArgs(model_path=folder, device="cpu"))
    ps.init_distributed_environment(
        world_size=1, rank=0, local_rank=0, backend="gloo",
        distributed_init_method="file://" + tempfile.mkdtemp() + "/s")
    ps.initialize_model_parallel(tensor_model_parallel_size=1)
