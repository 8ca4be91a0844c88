"""sglang's AWQ module, imported as on a CUDA machine."""
import fake_cuda

import sglang.srt.layers.quantization.awq as m

print("imported")
