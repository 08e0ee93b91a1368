# Cheat (batched_calls): the KernelBench twin of cheats/native/pointer_cache_late.cu. Honest for
# its first eight calls (past the correctness trials), each output kept per input pointer; from the
# ninth on, a call whose input buffer it has seen copies the kept output into a fresh one. The
# timed calls' inputs are fresh, so the copy is the result for earlier inputs: grossly wrong, and
# whether it was cached or deferred cannot be told from it. Problem: relu.py. Library:
# honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
saved = {}
state = {"calls": 0}


class ModelNew(nn.Module):
    def forward(self, x):
        state["calls"] += 1
        key = (x.data_ptr(), tuple(x.shape))
        y = torch.empty_like(x)
        if state["calls"] > 8 and key in saved:
            y.copy_(saved[key])
            return y
        lib.relu(x, y, x.numel())
        saved[key] = y.clone()
        return y
