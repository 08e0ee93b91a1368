# Honest, fast form, KernelBench style: keeps nn.Linear for its weights, does the GEMM with
# PyTorch (cuBLAS) and fuses the epilogue into one kernel. Problem: linear_relu.py.
# Under --strict-kernels it is rejected (it launches a cuBLAS kernel).
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = torch.matmul(x, self.linear.weight.t())
        lib.bias_relu_scale(y, self.linear.bias, y.shape[0], y.shape[1], self.scale)
        return y
