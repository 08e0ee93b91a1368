# Cheat (no_custom_kernel): computes with PyTorch alone (torch.relu: PyTorch's
# at::native::vectorized_elementwise_kernel) and ships a library, rt41_name_spoof.cu, that holds
# no kernel but empty host functions named like PyTorch's kernels. The judge attributes a traced
# kernel to the candidate when kernel_base(trace name) is among the names `nm -C --defined-only`
# lists for the candidate's shared objects, types T/t/W/w, host functions included; so every
# PyTorch kernel of the traced call is "owned": the no_custom_kernel test passes, and with
# --strict-kernels no kernel is foreign either.
# Weakness: library_symbols() in evaluate.py takes every defined text symbol of the .so (not the
# kernels: entries of its fatbinary, __global__ functions registered with the runtime), and
# kernel_base() compares qualified names without their template arguments and parameters, so a
# host function `at::native::vectorized_elementwise_kernel(int)` stands for PyTorch's kernel.
# Problem: relu.py (options: strict_kernels). Library: cheats/rt41_name_spoof.cu.
import torch
import torch.nn as nn
import kernelpro_torch

lib = kernelpro_torch.load()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x):
        return torch.relu(x)
