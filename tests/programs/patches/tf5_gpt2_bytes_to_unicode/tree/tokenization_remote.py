"""A remote-code tokenizer module with Kimi-K2's import line."""
from transformers.models.gpt2.tokenization_gpt2 import bytes_to_unicode


class ByteLevelTable:
    def __init__(self):
        self.byte_encoder = bytes_to_unicode()
        self.byte_decoder = {v: k for k, v in self.byte_encoder.items()}
