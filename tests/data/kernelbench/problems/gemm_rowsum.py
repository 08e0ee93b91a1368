# A GEMM whose columns are only summed (KernelBench level 2, problem 14's shape): a candidate
# that sums first computes the same value in another order, off from the fp32 reference by the
# reference's own rounding.
import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self, input_size, hidden_size, scaling_factor):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(hidden_size, input_size))
        self.scaling_factor = scaling_factor

    def forward(self, x):
        x = torch.matmul(x, self.weight.T)
        x = x / 2
        x = torch.sum(x, dim=1, keepdim=True)
        return x * self.scaling_factor


batch_size = 1024
input_size = 8192
hidden_size = 8192
scaling_factor = 1.5


def get_inputs():
    return [torch.rand(batch_size, input_size)]


def get_init_inputs():
    return [input_size, hidden_size, scaling_factor]
