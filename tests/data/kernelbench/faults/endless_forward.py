# Fault (not a cheat): forward never returns. For relu.py. The worker is busy in the candidate's
# call, not reading its request pipe; tests/e2e/worker_lifetime_e2e_test.cc kills kernelpro then
# and expects the worker, and its GPU memory, gone within 2 s.
import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        while True:
            y = y + 0
