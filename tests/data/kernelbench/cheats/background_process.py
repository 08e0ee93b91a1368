# Cheat (background_process, issue 28 item 4): at import, a process that leaves the worker's reach
# as far as it can (a double fork, setsid, and an environment without the worker's token), to load
# the GPU while the reference or a later candidate is timed. Here it only sleeps: the rule is
# about the process being there at all. Problem: relu.py. Library: honest/relu_fast.cu.
import os

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


def escape():
    if os.fork() != 0:
        os.wait()
        return
    os.setsid()
    if os.fork() != 0:
        os._exit(0)
    try:
        os.execve("/bin/sleep", ["sleep", "300"], {})
    finally:
        os._exit(0)


escape()


class ModelNew(nn.Module):
    def forward(self, x):
        x = x.contiguous()
        y = torch.empty_like(x)
        lib.relu(x, y, x.numel())
        return y
