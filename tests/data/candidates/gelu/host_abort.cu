// Test candidate for examples/gelu: calls abort() on the host: crash (the worker dies with SIGABRT)
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>
KP_EXPORT int kp_run(kp_args*) {
  std::fprintf(stderr, "candidate: giving up\n");
  std::abort();
}
