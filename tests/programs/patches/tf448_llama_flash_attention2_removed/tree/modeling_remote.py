"""A remote modeling file written for transformers 4.47, as DeepSeek-OCR's is."""
from transformers.models.llama.modeling_llama import LlamaAttention, LlamaFlashAttention2


class RemoteFlashAttention(LlamaFlashAttention2):
    """As remote code specialises the flash-attention class."""


ATTENTION_CLASSES = {"eager": LlamaAttention, "flash_attention_2": RemoteFlashAttention}
