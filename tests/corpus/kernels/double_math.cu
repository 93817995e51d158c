// Double precision: fma, division, sqrt, rsqrt, transcendentals, and
// conversions between double, float and 64-bit integers.
extern "C" __global__ void doubleMath(int n, const double *x, const double *y, double *out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double a = x[i], b = y[i];
  double r = fma(a, b, 1.0) / (b + 2.0);
  r += sqrt(fabs(a)) + rsqrt(b * b + 1.0);
  r += exp(a * 0.001) + log1p(fabs(b)) + sin(a) * cos(b);
  r += pow(fabs(a) + 1.0, 0.37) + atan2(a, b) + cbrt(b);
  out[i] = r;
}

extern "C" __global__ void doubleConvert(int n, const double *x, long long *asLong, unsigned long long *asUlong,
                                         float *asFloat, double *roundTrip) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double v = x[i];
  asLong[i] = __double2ll_rn(v) + llrint(v);
  asUlong[i] = __double2ull_rz(v) ^ __double_as_longlong(v);
  asFloat[i] = __double2float_rd(v) + (float)v;
  roundTrip[i] = (double)(long long)v + __hiloint2double(__double2hiint(v), 0) + floor(v) - trunc(v);
}

extern "C" __global__ void kahanSum(int n, const double *x, double *out) {
  double sum = 0.0, compensation = 0.0;
  for (int i = threadIdx.x; i < n; i += blockDim.x) {
    double y = x[i] - compensation;
    double t = __dadd_rn(sum, y);
    compensation = __dsub_rn(__dsub_rn(t, sum), y);
    sum = t;
  }
  out[threadIdx.x] = __dmul_ru(sum, 1.0) + __ddiv_rz(compensation, 3.0) + __drcp_rn(sum + 1.0);
}
