// Test candidate for examples/gelu: exports no kp_run (a typo in the name): load_error
#include <kernelpro/kp_abi.h>
#include <cuda_runtime.h>

KP_EXPORT int kp_runn(kp_args*) { return KP_OK; }
