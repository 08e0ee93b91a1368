import torch
import torch.nn as nn

class Model(nn.Module):
    """Sum of x where a bool mask is set, per row (bool inputs must stay bool)."""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x, mask):
        return torch.where(mask, x, torch.zeros_like(x)).sum(dim=1)

batch_size = 512
dim = 4096

def get_inputs():
    return [torch.rand(batch_size, dim), torch.rand(batch_size, dim) > 0.5]

def get_init_inputs():
    return []
