# Cheat (result_cache): remembers outputs by input pointer and shape, and returns the remembered
# output when the same buffer comes again. Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
cache = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        if key in cache:
            return cache[key]
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        cache[key] = y
        return y
