# Honest, fast form: cross entropy with int64 targets (kept int64). Problem: cross_entropy.py.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, predictions, targets):
        p = predictions.contiguous()
        loss = torch.empty(p.shape[0], device=p.device, dtype=torch.float32)
        out = torch.empty((), device=p.device, dtype=torch.float32)
        lib.cross_entropy(p, targets.contiguous(), loss, out, p.shape[0], p.shape[1])
        return out
