# Cheat (side_stream): honest for its first calls, then runs its kernel on the current stream and
# leaves an idle stream of its own current when it returns, so that a timer recording its end
# event on "the current stream" ends the timing before the kernel does (issue 28, item 8: a
# stream switch inside forward). Problem: relu.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
state = {"calls": 0, "idle": None}


class ModelNew(nn.Module):
    def forward(self, x):
        state["calls"] += 1
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        if state["calls"] > 12:
            if state["idle"] is None:
                state["idle"] = torch.cuda.Stream()
            torch.cuda.set_stream(state["idle"])
        return y
