# Cheat (reference_tamper): no GEMM. At import it finds the running Evaluation through the
# interpreter's frames and zeroes the reference model's Linear weight in place
# (Evaluation._m_ref.linear.weight, under no_grad). From then on the judge's reference computes
# relu(x 0^T + b) * scale = relu(b) * scale for every row, and so does ModelNew: a fill of the
# output and its own bias-ReLU-scale epilogue, never reading x. Its bias is the reference's (both
# models are built after set_seed(42) with the same layers). The output varies along the columns,
# so it is no constant output; the reference's timing is unchanged (cuBLAS multiplies zeros as fast
# as anything else).
# Weakness: the judge core fingerprints the tensors the adapter describes as inputs, and the
# adapter describes only the call's arguments (judge.py Core._drive.on_refresh: storage_view of
# the tensors refresh() returned); the reference model's parameters and buffers are neither
# fingerprinted nor snapshotted anywhere (evaluate.py _open_core takes io_bytes of them, nothing
# else), and the model object is reachable from the candidate (Evaluation._m_ref). Only
# precision_policy "fp64", which builds a fresh Model from the problem, would see it.
# The timed median is a 16 MB fill and one epilogue pass (about 15 us) against about 450 us for
# the honest cuBLAS + epilogue twin.
# Problem: linear_relu.py. Library: honest/linear_relu_fast.cu.
import sys

import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


def _evaluation():
    f = sys._getframe(1)
    while f is not None:
        s = f.f_locals.get("self")
        if type(s).__name__ == "Evaluation" and getattr(s, "_m_ref", None) is not None:
            return s
        f = f.f_back
    return None


def _zero_the_reference():
    ev = _evaluation()
    ref = getattr(ev, "_m_ref", None)
    lin = getattr(ref, "linear", None)
    if isinstance(lin, nn.Linear):
        with torch.no_grad():
            lin.weight.zero_()


_zero_the_reference()


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, scale):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.scale = scale

    def forward(self, x):
        y = torch.zeros(x.shape[0], self.linear.out_features, device=x.device, dtype=x.dtype)
        lib.bias_relu_scale(y, self.linear.bias, y.shape[0], y.shape[1], self.scale)
        return y
