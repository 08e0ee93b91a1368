import torch
import torch.nn as nn

class Model(nn.Module):
    """A level-2 style fusion: Linear, then ReLU, then a scale."""
    def __init__(self, in_features, out_features, scale):
        super(Model, self).__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        return torch.relu(self.linear(x)) * self.scale

batch_size = 1024
in_features = 2048
out_features = 4096
scale = 0.5

def get_inputs():
    return [torch.rand(batch_size, in_features)]

def get_init_inputs():
    return [in_features, out_features, scale]
