// Non-inlined device functions (call.uni with parameter lists and return
// values), a struct returned by value, recursion, and indirect calls through
// function pointers (which give .callprototype declarations).
struct Stats {
  float mean;
  float variance;
  int count;
};

__device__ __noinline__ float weightedBlend(float a, float b, float weight, int mode, double bias) {
  float r = mode == 0 ? a * weight + b * (1.0f - weight) : fmaxf(a, b) * weight;
  return r + (float)bias;
}

__device__ __noinline__ Stats summarize(const float *values, int count) {
  Stats s{0.0f, 0.0f, count};
  for (int i = 0; i < count; ++i) s.mean += values[i];
  s.mean /= count;
  for (int i = 0; i < count; ++i) s.variance += (values[i] - s.mean) * (values[i] - s.mean);
  return s;
}

__device__ __noinline__ unsigned long long fibonacci(int n) { return n < 2 ? n : fibonacci(n - 1) + fibonacci(n - 2); }

__device__ __noinline__ void writePair(float *out, int index, float2 value) {
  out[2 * index] = value.x;
  out[2 * index + 1] = value.y;
}

typedef float (*UnaryOp)(float, int);

__device__ __noinline__ float opSquare(float x, int) { return x * x; }
__device__ __noinline__ float opShift(float x, int s) { return x + s; }
__device__ __noinline__ float opNegate(float x, int) { return -x; }

__device__ UnaryOp deviceOpTable[3] = {opSquare, opShift, opNegate};

extern "C" __global__ void callDirect(int n, const float *a, const float *b, float *out, Stats *stats,
                                      unsigned long long *fib) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    out[i] = weightedBlend(a[i], b[i], 0.25f, i & 1, 0.5);
    writePair(out + n, i, make_float2(a[i], b[i]));
  }
  if (i == 0) {
    *stats = summarize(a, n < 32 ? n : 32);
    *fib = fibonacci(n & 15);
  }
}

extern "C" __global__ void callIndirect(int n, int which, const float *in, float *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  UnaryOp op = deviceOpTable[(which + i) % 3];
  if (i < n) out[i] = op(in[i], which);
}
