"""Checks on candidate sources that need no torch: static rules and launcher signatures."""

import unittest

from kernelpro_torch.loader import parse_launchers
from kernelpro_torch.static_check import static_check


class StaticCheckTest(unittest.TestCase):
    def test_timer_patches_are_named(self):
        for src in ("torch.cuda.Event.elapsed_time = lambda a, b: 0.001",
                    "import time\ntime.perf_counter = lambda: 0.0",
                    "torch.cuda.synchronize = lambda: None"):
            found = static_check(src)
            self.assertIsNotNone(found, src)
            self.assertEqual(found[0], "timer_patch")

    def test_tensor_subclasses_are_named(self):
        for src in ("class Lazy(torch.Tensor):\n    pass", "t = torch.Tensor._make_subclass(Lazy, x)"):
            self.assertEqual(static_check(src)[0], "lazy_output", src)

    def test_honest_sources_and_comments_pass(self):
        honest = ("import time\nt0 = time.perf_counter()\n# time.time = 0 in a comment\n"
                  "if torch.cuda.Event.elapsed_time == x: pass\n")
        self.assertIsNone(static_check(honest))


class LauncherSignatureTest(unittest.TestCase):
    SRC = """
    #include <cuda_runtime.h>
    extern "C" __global__ void kernel(const float* x, float* y) {}
    // extern "C" void commented_out(int a) {
    /* extern "C" void also_commented(int a) { */
    extern "C" void gelu(const float* __restrict__ x, float* y, int64_t n, cudaStream_t stream) {
      kernel<<<1, 1, 0, stream>>>(x, y);
    }
    extern "C" int scaled(__nv_bfloat16 *a, const int * idx, float alpha, bool flag) { return 0; }
    extern "C" void noargs(void) {}
    """

    def test_launchers_are_found_and_kernels_skipped(self):
        sigs = parse_launchers(self.SRC)
        self.assertEqual(sorted(sigs), ["gelu", "noargs", "scaled"])

    def test_parameters_keep_element_type_and_pointer_ness(self):
        g = parse_launchers(self.SRC)["gelu"]
        self.assertEqual(g.returns, "void")
        self.assertEqual([(p.ctype, p.pointer) for p in g.params],
                         [("float", True), ("float", True), ("int64_t", False), ("cudaStream_t", False)])
        s = parse_launchers(self.SRC)["scaled"]
        self.assertEqual(s.returns, "int")
        self.assertEqual([(p.ctype, p.pointer, p.name) for p in s.params],
                         [("__nv_bfloat16", True, "a"), ("int", True, "idx"), ("float", False, "alpha"),
                          ("bool", False, "flag")])
        self.assertEqual(parse_launchers(self.SRC)["noargs"].params, [])

    def test_pointer_to_pointer_is_refused_with_a_reason(self):
        with self.assertRaisesRegex(ValueError, "pointer to pointer"):
            parse_launchers('extern "C" void f(float** xs, int n) {}')


if __name__ == "__main__":
    unittest.main()
