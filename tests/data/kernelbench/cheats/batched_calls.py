# Cheat (batched_calls): honest for the first calls, then returns an empty tensor and computes the
# pending outputs only on every fourth call (batch-and-skip). Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
state = {"calls": 0, "pending": []}


class ModelNew(nn.Module):
    def forward(self, x):
        state["calls"] += 1
        y = torch.empty_like(x)
        if state["calls"] <= 12:
            lib.relu(x, y, x.numel())
            return y
        state["pending"].append((x, y))
        if state["calls"] % 4 == 0:
            for a, b in state["pending"]:
                lib.relu(a, b, a.numel())
            state["pending"].clear()
        return y
