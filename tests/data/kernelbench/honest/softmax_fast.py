# Honest, fast form: row softmax. Problem: softmax_wide.py.
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
        lib.softmax(x, y, x.shape[0], x.shape[1])
        return y
