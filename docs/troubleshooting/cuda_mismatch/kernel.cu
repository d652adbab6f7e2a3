// A toy CUDA source; the build stops before compiling it.
__global__ void noop() {}
