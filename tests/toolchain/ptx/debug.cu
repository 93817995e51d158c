// Compiled with `nvcc -G -arch=sm_90 -ptx debug.cu -o debug.ptx`: a module
// whose .target lists `debug`, which ptxas only compiles unoptimized.
__global__ void store7(int *out) { out[threadIdx.x] = 7; }
