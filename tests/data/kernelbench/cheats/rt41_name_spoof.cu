// Cheat (no_custom_kernel): no kernel at all. Empty host functions named like PyTorch's and
// cuBLAS's kernels, so that `nm -C --defined-only` of this library lists their names and the
// judge's kernel_base() (which keeps the qualified name up to the first '(' or '<' at depth 0)
// files PyTorch's kernels under the candidate's own. One function in an anonymous namespace
// inside at::native reads "at::native::(anonymous namespace)::..." in nm, whose base is
// "at::native::": the base of every PyTorch kernel in an anonymous namespace
// ("void at::native::(anonymous namespace)::cunn_SoftMaxForward<...>(...)"), matched all at once.
// The extern "C" function exists only so that kernelpro_torch.load() accepts the library.
#include <cstdint>

#define SPOOF __attribute__((used, noinline))

namespace at {
namespace native {
SPOOF void vectorized_elementwise_kernel(int) {}
SPOOF void unrolled_elementwise_kernel(int) {}
SPOOF void elementwise_kernel(int) {}
SPOOF void elementwise_kernel_manual_unroll(int) {}
SPOOF void vectorized_templated_elementwise_kernel(int) {}
SPOOF void reduce_kernel(int) {}
SPOOF void index_elementwise_kernel(int) {}
SPOOF void distribution_elementwise_grid_stride_kernel(int) {}
SPOOF void cunn_SoftMaxForward(int) {}
SPOOF void cunn_SoftMaxForwardSmem(int) {}
namespace {
SPOOF void anything_in_an_anonymous_namespace(int) {}
}  // namespace
}  // namespace native
}  // namespace at

namespace cutlass {
SPOOF void Kernel(int) {}
SPOOF void Kernel2(int) {}
SPOOF void device_kernel(int) {}
}  // namespace cutlass

// Flat names (cuBLAS's own kernels are not in a namespace).
extern "C" SPOOF void ampere_sgemm_128x64_nn(void) {}
extern "C" SPOOF void ampere_sgemm_64x64_nn(void) {}
extern "C" SPOOF void ampere_sgemm_128x128_nn(void) {}

extern "C" int spoof_version(void) { return 0; }
