# Cheat (side_stream): runs the kernel on its own stream and never joins it back, so events on
# the current stream time almost nothing. Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
side = torch.cuda.Stream()


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        with torch.cuda.stream(side):
            lib.relu(x, y, x.numel())
        return y
