// A header that does not exist: the host preprocessor (gcc) reports it in gcc's format.
#include "kernel_helpers_that_do_not_exist.cuh"

__global__ void noop() {}
