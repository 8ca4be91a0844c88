"""Instances of sglang's dataclasses (ServerArgs, ForwardBatch) built without running them."""
import dataclasses


def with_defaults(cls):
    """An instance of ``cls`` made without ``__init__``/``__post_init__``: each dataclass
    field at its default (None where it has none)."""
    obj = cls.__new__(cls)
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            setattr(obj, f.name, f.default)
        elif f.default_factory is not dataclasses.MISSING:
            setattr(obj, f.name, f.default_factory())
        else:
            setattr(obj, f.name, None)
    return obj
