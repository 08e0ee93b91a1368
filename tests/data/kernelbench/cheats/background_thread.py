# Cheat (background_thread): a persistent helper thread does the work after forward returns.
# Problem: relu.py. Library: honest/relu_fast.cu.
import queue
import threading

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()
jobs = queue.Queue()


def serve():
    while True:
        x, y = jobs.get()
        lib.relu(x, y, x.numel(), 0)


threading.Thread(target=serve, daemon=True).start()


class ModelNew(nn.Module):
    def forward(self, x):
        y = torch.empty_like(x)
        jobs.put((x, y))
        return y
