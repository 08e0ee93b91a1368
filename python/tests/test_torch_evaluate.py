"""Pieces of evaluate.py that run on the CPU: kernel attribution, compulsory traffic and input rotation."""

import os
import shutil
import subprocess
import tempfile
import unittest

import torch

from kernelpro_torch import evaluate


class KernelNameTest(unittest.TestCase):
    def test_trace_and_nm_names_reduce_to_the_same_base(self):
        self.assertEqual(evaluate.kernel_base("void relu_vec4<float>(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(evaluate.kernel_base("relu_vec4(float4 const*, float4*, long)"), "relu_vec4")
        self.assertEqual(evaluate.kernel_base("void at::native::vectorized_elementwise_kernel<4, at::native::"
                                              "FillFunctor<float>, std::array<char*, 1ul> >(int, ...)"),
                         "at::native::vectorized_elementwise_kernel")
        self.assertEqual(evaluate.kernel_base("gelu"), "gelu")

    @unittest.skipUnless(shutil.which("nvcc") and shutil.which("nm"), "needs nvcc and nm")
    def test_symbols_of_a_built_library_include_its_kernels(self):
        with tempfile.TemporaryDirectory() as tmp:
            src = os.path.join(tmp, "k.cu")
            with open(src, "w") as f:
                f.write('template <typename T> __global__ void scale_k(T* x, long n) {}\n'
                        'template __global__ void scale_k<float>(float*, long);\n'
                        'extern "C" void launch(float* x, long n) { scale_k<float><<<1, 1>>>(x, n); }\n')
            so = os.path.join(tmp, "k.so")
            subprocess.run(["nvcc", "-shared", "-Xcompiler", "-fPIC", "-o", so, src], check=True)
            names = evaluate.library_symbols([so])
            self.assertIn("scale_k", names)
            self.assertIn("launch", names)
            self.assertNotIn("at::native::vectorized_elementwise_kernel", names)


class CompulsoryBytesTest(unittest.TestCase):
    def test_inputs_outputs_and_each_parameter_and_buffer_once(self):
        lin = torch.nn.Linear(8, 4)  # a weight of 32 floats and a bias of 4
        lin.register_buffer("scale", torch.ones(2, dtype=torch.float16))
        model = torch.nn.Sequential(lin, lin)  # the same module twice: its parameters count once
        xs = [torch.zeros(16, 8), 3]  # a scalar argument moves nothing
        outs = [torch.zeros(16, 4, dtype=torch.float64)]
        self.assertEqual(evaluate.compulsory_bytes(xs, outs, model), 16 * 8 * 4 + 16 * 4 * 8 + (32 + 4) * 4 + 2 * 2)
        self.assertEqual(evaluate.module_bytes(lambda x: x), 0)


class RollTest(unittest.TestCase):
    def test_rolled_inputs_keep_pointers_and_values_but_move_every_position(self):
        x = torch.rand(64, 100)
        t = torch.randint(0, 10, (64,))
        ptr, before, tb = x.data_ptr(), x.clone(), t.clone()
        evaluate.roll_inputs([x, t, 3.5], 7919)
        self.assertEqual(x.data_ptr(), ptr)
        self.assertFalse(torch.equal(x, before))
        self.assertTrue(torch.equal(x.flatten().sort()[0], before.flatten().sort()[0]))
        self.assertEqual(sorted(t.tolist()), sorted(tb.tolist()))


if __name__ == "__main__":
    unittest.main()
