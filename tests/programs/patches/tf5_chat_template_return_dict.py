"""A tiny byte-level BPE tokenizer with a chat template, trained and saved offline, loaded
with sglang's get_tokenizer; /v1/chat/completions requests turned into sglang's internal
request by its real OpenAIServingChat (only the managers it reads are stand-ins)."""
import tempfile
import types

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
import transformers
from transformers import PreTrainedTokenizerFast

from patch_state import print_result

sentences = ["hello world", "the quick brown fox jumps over the lazy dog",
             "sglang serves models", "what is the weather like today"] * 4
bpe = Tokenizer(models.BPE(unk_token="<unk>"))
bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
bpe.decoder = decoders.ByteLevel()
bpe.train_from_iterator(sentences, trainers.BpeTrainer(
    vocab_size=400, special_tokens=["<unk>", "<|user|>", "<|assistant|>", "<|end|>"],
    initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False))
folder = tempfile.mkdtemp()
built = PreTrainedTokenizerFast(tokenizer_object=bpe, unk_token="<unk>", eos_token="<|end|>")
built.chat_template = (
    "{% for m in messages %}<|{{ m['role'] }}|>{{ m['content'] }}"
    "{% if not loop.last or m['role'] != 'assistant' %}<|end|>{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|assistant|>{% endif %}")
built.save_pretrained(folder)

from sglang.srt.hf_transformers_utils import get_tokenizer
from sglang.srt.entrypoints.openai.protocol import ChatCompletionRequest
from sglang.srt.entrypoints.openai.serving_chat import OpenAIServingChat

tokenizer = get_tokenizer(folder)
chat = OpenAIServingChat.__new__(OpenAIServingChat)
chat.tokenizer_manager = types.SimpleNamespace(
    tokenizer=tokenizer, model_config=types.SimpleNamespace(is_multimodal=False),
    server_args=types.SimpleNamespace(tool_call_parser=None, reasoning_parser=None))
chat.template_manager = types.SimpleNamespace(
    chat_template_name=None, jinja_template_content_format="string")


def ids_of(messages, prefix=""):
    text = tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    ids = tokenizer.encode(text, add_special_tokens=False)
    return ids + (tokenizer.encode(prefix) if prefix else [])


def serve(**fields):
    request = ChatCompletionRequest(model="tiny", **fields)
    try:
        adapted, _ = chat._convert_to_internal_request(request)
        adapted.normalize_batch_and_arguments()
        out = {"input_ids": adapted.input_ids}
    except Exception as exc:
        out = {"error": type(exc).__name__ + ": " + str(exc)}
    out["kwargs_after"] = request.chat_template_kwargs
    return out

user = [{"role": "user", "content": "hello world"}]
import sglang_shims
print_result({
    "transformers": transformers.__version__,
    "tokenizer": type(tokenizer).__name__,
    "direct": type(tokenizer.apply_chat_template(user, tokenize=True)).__name__,
    "plain": serve(messages=user),
    "plain_expected": ids_of(user),
    "with_kwargs": serve(messages=user, chat_template_kwargs={"enable_thinking": False}),
    "continued": serve(messages=[*user, {"role": "assistant", "content": "the quick"}],
                       continue_final_message=True),
    "continued_expected": ids_of(user, "the quick"),
}, "tf5-chat-template-return-dict")
