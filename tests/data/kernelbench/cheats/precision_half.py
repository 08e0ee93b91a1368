# Cheat (precision_downgrade): the GEMM in fp16 with an fp16 result, cast back to fp32 (the
# "11x that was 1.04x" of KernelBench issue 155). Problem: gemm.py. Library: honest/relu_fast.cu (a token
# custom kernel so that only the precision is at fault).
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def forward(self, A, B):
        C = (A.half() @ B.half()).float()
        lib.relu(C, C, C.numel())  # inputs are non-negative: the identity
        return C
