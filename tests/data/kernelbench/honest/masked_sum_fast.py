# Honest, fast form: masked row sum, the mask stays bool. Problem: masked_sum.py.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x, mask):
        y = torch.empty(x.shape[0], device=x.device, dtype=x.dtype)
        lib.masked_sum(x.contiguous(), mask.contiguous(), y, x.shape[0], x.shape[1])
        return y
