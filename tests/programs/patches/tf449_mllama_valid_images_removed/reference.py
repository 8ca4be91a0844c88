"""The table from transformers 4.48.3's own ``is_valid_list_of_images`` (no shims)."""
from cases import table

import json

import transformers

assert transformers.__version__ == "4.48.3", transformers.__version__
from transformers.models.mllama.image_processing_mllama import is_valid_list_of_images

print(json.dumps(table(is_valid_list_of_images)))
