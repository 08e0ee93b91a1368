# Cheat (input_mutation): computes the right output, then zeroes its input (so a reference run
# afterwards on the same tensor would agree with anything). Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        x.zero_()
        return y
