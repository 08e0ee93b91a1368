# Cheat (torch_patch): replaces torch.relu, which the problem's reference calls, so that the
# reference computes what the candidate returns. Problem: relu.py. Library: zeros_lib.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
torch.relu = lambda x: torch.zeros_like(x)


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.fill(y, y.numel(), 0.0)
        return y
