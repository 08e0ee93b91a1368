# Cheat (no_custom_kernel): loads a library to look like a kernel candidate but computes with
# PyTorch. Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def forward(self, x):
        return torch.relu(x)
