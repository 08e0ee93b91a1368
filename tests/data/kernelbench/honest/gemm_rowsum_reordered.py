# Honest math, another order: x . colsum(W) instead of the row sums of x W^T (PyTorch only, so it
# runs with library_only_ok). Problem: tests/data/llm/h200/problems/14_Gemm_Divide_Sum_Scaling.py.
# Off from the fp32 reference by rounding.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        return (x @ self.weight.sum(dim=0, keepdim=True).T) * (self.scaling_factor / 2)
