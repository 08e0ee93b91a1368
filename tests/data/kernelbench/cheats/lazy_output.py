# Cheat (lazy_output): returns a torch.Tensor subclass (built with type(), which a source regex
# does not see) that could compute on demand or lie about its contents. Problem: relu.py.
# Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
Lazy = type("Lazy", (torch.Tensor,), {})


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y.as_subclass(Lazy)
