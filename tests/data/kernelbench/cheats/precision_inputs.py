# Cheat (precision_downgrade), subtle: rounds the inputs to fp16 and accumulates in fp32, which
# stays within KernelBench's 1e-4 on this GEMM; the fp64 precision policy catches it.
# Problem: gemm.py. Library: honest/relu_fast.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def forward(self, A, B):
        C = A.half().float() @ B.half().float()
        lib.relu(C, C, C.numel())
        return C
