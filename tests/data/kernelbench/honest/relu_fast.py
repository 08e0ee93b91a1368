# Honest, fast form: ReLU through kernelpro_torch.load() and relu_fast.cu. Problem: relu.py.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
