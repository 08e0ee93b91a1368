"""Kernel attribution (kernel_names.py) on real builds: a library's kernels are found in its device
code, and a library of host functions named like PyTorch's kernels owns none of them (issue 41's
red team, tests/data/kernelbench/cheats/rt41_name_spoof.cu)."""

import os
import shutil
import subprocess
import tempfile
import unittest

from kernelpro_torch import kernel_names

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NVCC = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if os.path.exists("/usr/local/cuda/bin/nvcc") else None)
TOOLS = NVCC and kernel_names._CUOBJDUMP and kernel_names._CXXFILT


def build(tmp, name, source_text=None, source_path=None):
    src = source_path or os.path.join(tmp, name + ".cu")
    if source_text is not None:
        with open(src, "w") as f:
            f.write(source_text)
    so = os.path.join(tmp, name + ".so")
    subprocess.run([NVCC, "-arch=sm_90", "-shared", "-Xcompiler", "-fPIC", "-o", so, src], check=True,
                   capture_output=True)
    return so


class KernelBaseTest(unittest.TestCase):
    def test_trace_and_demangled_names_reduce_to_the_same_base(self):
        self.assertEqual(kernel_names.kernel_base("void relu_vec4<float>(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(kernel_names.kernel_base("relu_vec4(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(kernel_names.kernel_base("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                                  "FillFunctor<float>, std::array<char*, 1ul> >(int, ...)"),
                         "at::native::vectorized_elementwise_kernel")
        self.assertEqual(kernel_names.kernel_base("gelu"), "gelu")

    def test_entries_are_read_from_cuobjdumps_symbol_table(self):
        text = ("symbols:\nSTT_OBJECT       STB_WEAK   STV_DEFAULT  U .nv.reservedSmem.offset0\n"
                "STT_FUNC         STB_WEAK   STV_DEFAULT    $__internal_0_$__cuda_sm20_div_u64\n"
                "STT_FUNC         STB_GLOBAL STO_ENTRY      _Z9relu_tailPKfPfll\n")
        self.assertEqual(kernel_names.entry_symbols(text), ["_Z9relu_tailPKfPfll"])


@unittest.skipUnless(TOOLS, "needs nvcc, cuobjdump (scripts/setup.sh installs one) and c++filt")
class DeviceKernelsTest(unittest.TestCase):
    def test_a_librarys_kernels_and_templates_are_its_own(self):
        with tempfile.TemporaryDirectory() as tmp:
            so = build(tmp, "k", 'template <typename T> __global__ void scale_k(T* x, long n) {}\n'
                                 'template __global__ void scale_k<float>(float*, long);\n'
                                 'namespace ns { __global__ void plain(int* y) { *y = 1; } }\n'
                                 'extern "C" void launch(float* x, long n) { scale_k<float><<<1, 1>>>(x, n); }\n')
            names = kernel_names.device_kernels([so])
        self.assertEqual(names, {"scale_k", "ns::plain"})

    def test_host_functions_named_like_pytorchs_kernels_own_nothing(self):
        with tempfile.TemporaryDirectory() as tmp:
            spoof = build(tmp, "spoof", source_path=os.path.join(ROOT, "tests", "data", "kernelbench", "cheats",
                                                                 "rt41_name_spoof.cu"))
            honest = build(tmp, "relu", source_path=os.path.join(ROOT, "tests", "data", "kernelbench", "honest",
                                                                 "relu_fast.cu"))
            self.assertEqual(kernel_names.device_kernels([spoof]), set())
            self.assertEqual(kernel_names.device_kernels([spoof, honest]), {"relu_vec4", "relu_tail"})


if __name__ == "__main__":
    unittest.main()
