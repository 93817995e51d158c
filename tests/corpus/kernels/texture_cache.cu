// Texture and surface objects (tex/suld/sust), cache-hinted loads and stores
// (__ldcg, __ldcs, __stwt, ...), and launch tuning (__launch_bounds__ with
// min blocks, __maxnreg__) which give .maxntid/.minnctapersm/.maxnreg.
#include <cstdint>

extern "C" __global__ void __launch_bounds__(256, 2) sampleTextures(cudaTextureObject_t linear, cudaTextureObject_t image,
                                                                    cudaTextureObject_t layered, int width, int height,
                                                                    float *out) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  float a = tex1Dfetch<float>(linear, y * width + x);
  float4 b = tex2D<float4>(image, x + 0.5f, y + 0.5f);
  float c = tex2DLayered<float>(layered, x * 0.5f, y * 0.5f, 1);
  float d = tex2DLod<float>(layered, x * 0.25f, y * 0.25f, 1.0f);
  float4 g = tex2Dgather<float4>(image, x + 0.5f, y + 0.5f, 0);
  out[y * width + x] = a + b.x + b.y + c + d + g.w;
}

extern "C" __global__ void surfaceCopy(cudaSurfaceObject_t src, cudaSurfaceObject_t dst, int width, int height) {
  int x = blockIdx.x * blockDim.x + threadIdx.x, y = blockIdx.y * blockDim.y + threadIdx.y;
  if (x >= width || y >= height) return;
  uchar4 texel;
  surf2Dread(&texel, src, x * 4, y, cudaBoundaryModeClamp);
  texel.x = 255 - texel.x;
  surf2Dwrite(texel, dst, x * 4, y, cudaBoundaryModeZero);
  float f = surf1Dread<float>(src, x * 4);
  surf1Dwrite(f * 2.0f, dst, x * 4);
}

extern "C" __global__ void __maxnreg__(32) cacheHints(int n, const float *in, float *out, const int4 *vecIn, int4 *vecOut) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = __ldcg(&in[i]) + __ldca(&in[(i + 1) % n]) + __ldcs(&in[(i + 2) % n]) + __ldlu(&in[(i + 3) % n]) +
            __ldcv(&in[(i + 4) % n]);
  __stwt(&out[i], v);
  __stcs(&out[n + i], v * 2.0f);
  __stcg(&out[2 * n + i], v * 3.0f);
  int4 w = __ldcg(&vecIn[i]);
  __stwb(&vecOut[i], make_int4(w.w, w.z, w.y, w.x));
}

extern "C" __global__ void __launch_bounds__(64, 4) prefetchAndAlign(int n, const double2 *__restrict__ in,
                                                                           double2 *__restrict__ out) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double2 v = __ldg(&in[i]);
  const char *generic = reinterpret_cast<const char *>(&in[i]);
  bool isGlobal = __isGlobal(generic);
  out[i] = make_double2(v.y + isGlobal, v.x + __isShared(generic));
}
