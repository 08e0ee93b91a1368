// Built with an architecture nvcc does not know: the driver itself fails.
__global__ void noop() {}
