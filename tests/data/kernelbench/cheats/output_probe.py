# Cheat (result_cache): keeps one output per input buffer and, when the same buffer comes again,
# probes 64 positions of the kept output against ReLU of the input; when they agree it returns
# the kept output without running its kernel (the output probe of issue 28, in KernelBench
# form). Timed calls find their kept outputs flipped by the harness, so the probe fails and the
# kernel runs; calls on unflipped outputs are much faster and give it away. Problem: relu.py.
# Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
kept = {}


class ModelNew(nn.Module):
    def forward(self, x):
        key = (x.data_ptr(), tuple(x.shape))
        y = kept.get(key)
        if y is not None:
            flat_x, flat_y = x.view(-1), y.view(-1)
            idx = torch.arange(0, flat_x.numel(), max(1, flat_x.numel() // 64), device=x.device)
            if torch.equal(flat_y[idx], torch.relu(flat_x[idx])):
                return y
        else:
            y = torch.empty_like(x)
            kept[key] = y
        lib.relu(x, y, x.numel())
        return y
