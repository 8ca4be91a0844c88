"""The same pseudo-random cases in both interpreters: causal masks (batch, query and past
lengths, sliding windows) and padding masks, in three dtypes."""
import random

import torch

DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def causal_cases():
    rng = random.Random(20240)
    for _ in range(60):
        yield dict(input_shape=(rng.randint(1, 4), rng.randint(1, 9)), dtype=rng.choice(DTYPES),
                   device="cpu", past_key_values_length=rng.choice([0, 0, rng.randint(1, 7)]),
                   sliding_window=rng.choice([None, None, rng.randint(1, 8)]))


def padding_cases():
    rng = random.Random(7)
    gen = torch.Generator().manual_seed(7)
    for _ in range(40):
        bsz, src = rng.randint(1, 4), rng.randint(1, 9)
        mask = torch.randint(0, 2, (bsz, src), generator=gen)
        mask = rng.choice([mask, mask.bool(), mask.float()])
        yield dict(mask=mask, dtype=rng.choice(DTYPES),
                   tgt_len=rng.choice([None, rng.randint(1, 9)]))


def compute(causal, padding):
    return ([causal(**c) for c in causal_cases()], [padding(**c) for c in padding_cases()])
