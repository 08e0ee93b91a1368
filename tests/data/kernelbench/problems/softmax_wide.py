import torch
import torch.nn as nn

class Model(nn.Module):
    """Softmax over wide rows: every output is about 3e-5, below KernelBench's fp32 atol of 1e-4."""
    def __init__(self):
        super(Model, self).__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)

batch_size = 256
dim = 32768

def get_inputs():
    x = torch.rand(batch_size, dim)
    return [x]

def get_init_inputs():
    return []
