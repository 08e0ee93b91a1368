# Honest, fast form: tiled fp32 GEMM. Problem: gemm.py.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        A, B = A.contiguous(), B.contiguous()
        C = torch.empty(A.shape[0], B.shape[1], device=A.device, dtype=A.dtype)
        lib.gemm(A, B, C, A.shape[0], B.shape[1], A.shape[1])
        return C
