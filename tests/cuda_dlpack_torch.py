"""Child process of tests/test_cuda.py: DLPack between nbxtensor and torch on the GPU.
Exit 3 (with the reason) where torch or its CUDA is absent."""

import sys

import numpy as np

import nbxtensor as nbx
from nbxtensor.backend import runtime

try:
    import torch
except ImportError:
    print("torch is not installed here")
    sys.exit(3)
if not torch.cuda.is_available():
    print("torch sees no CUDA device")
    sys.exit(3)

rng = np.random.default_rng(4)
x = rng.standard_normal((128, 64), dtype=np.float32)

# nbxtensor -> torch: same memory
ours = nbx.asarray(x).to("cuda")
theirs = torch.from_dlpack(ours)
assert theirs.device.type == "cuda" and theirs.shape == (128, 64)
np.testing.assert_array_equal(theirs.cpu().numpy(), x)
theirs.mul_(2)  # a write on torch's stream, seen by nbxtensor
torch.cuda.synchronize()
np.testing.assert_array_equal(ours.to("cpu").numpy(), 2 * x)

# torch -> nbxtensor: same memory, the producer's writes ordered before ours
source = torch.arange(4096, dtype=torch.float32, device="cuda").reshape(64, 64) * 0.5
imported = nbx.from_dlpack(source.t())
assert imported.device == "cuda:0" and imported.strides == (1, 64)
np.testing.assert_array_equal(imported.to("cpu").numpy(), source.t().cpu().numpy())
doubled = nbx.ops.mul(imported, imported)
source.fill_(1.0)
torch.cuda.synchronize()
runtime.synchronize()
assert imported.to("cpu").numpy().max() == 1.0, "a write by torch shows through nbxtensor"
np.testing.assert_allclose(doubled.to("cpu").numpy(), (np.arange(4096, dtype=np.float32).reshape(64, 64).T * 0.5) ** 2)

# bfloat16 both ways
b = torch.randn(32, 8, device="cuda").to(torch.bfloat16)
nb = nbx.from_dlpack(b)
assert nb.dtype == "bfloat16"
round_trip = torch.from_dlpack(nb)
assert torch.equal(round_trip, b) and round_trip.data_ptr() == b.data_ptr()
print("zero-copy both ways")
