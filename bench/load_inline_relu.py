"""Baseline of bench/build_latency: times torch.utils.cpp_extension.load_inline of the ReLU
kernel in bench/data/relu.cu, the way KernelBench builds candidates, in a fresh build directory
(a cold build). Prints the seconds on stdout."""
import os
import sys
import time

import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#include <torch/extension.h>
__global__ void relu(const float* x, float* y, long long n) {
  long long i = blockIdx.x * 256LL + threadIdx.x;
  if (i < n) y[i] = x[i] > 0.f ? x[i] : 0.f;
}
torch::Tensor relu_forward(torch::Tensor x) {
  auto y = torch::empty_like(x);
  long long n = x.numel();
  relu<<<(unsigned)((n + 255) / 256), 256>>>(x.data_ptr<float>(), y.data_ptr<float>(), n);
  return y;
}
"""
CPP = "torch::Tensor relu_forward(torch::Tensor x);"

build_dir = sys.argv[1]
os.makedirs(build_dir, exist_ok=True)
start = time.perf_counter()
mod = load_inline(name="kp_bench_relu", cpp_sources=CPP, cuda_sources=CUDA, functions=["relu_forward"],
                  build_directory=build_dir, verbose=False)
elapsed = time.perf_counter() - start
if torch.cuda.is_available():
    x = torch.randn(1024, device="cuda")
    assert torch.equal(mod.relu_forward(x), torch.relu(x))
print(f"{elapsed:.3f}")
