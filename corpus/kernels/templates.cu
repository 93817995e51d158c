// Templates and C++ names: one kernel template instantiated for three
// element types (mangled entry names), with a functor for the operation.
struct Square {
  template <typename T> __device__ T operator()(T x) const { return x * x; }
};
struct Negate {
  template <typename T> __device__ T operator()(T x) const { return -x; }
};

template <typename T, typename Op> __global__ void map_kernel(const T *in, T *out, int n, Op op) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = op(in[i]);
}

template __global__ void map_kernel<float, Square>(const float *, float *, int, Square);
template __global__ void map_kernel<double, Square>(const double *, double *, int, Square);
template __global__ void map_kernel<int, Negate>(const int *, int *, int, Negate);

namespace imaging {
__global__ void rgb_to_gray(const uchar3 *rgb, unsigned char *gray, int pixels) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < pixels) {
    uchar3 p = rgb[i];
    gray[i] = static_cast<unsigned char>(0.299f * p.x + 0.587f * p.y + 0.114f * p.z);
  }
}
} // namespace imaging
