// conv2d_3x3: direct 3x3 convolution, stride 1, zero padding 1, NCHW, f32, no bias.
//   out[b][co][y][x] = sum_{ci, dy, dx} in[b][ci][y+dy-1][x+dx-1] * weight[co][ci][dy][dx]
// A 16x16 block computes a 16x16 output tile for COB = 8 output channels. Input channels are
// processed CIB = 8 at a time: the 18x18 haloed input tiles (zero-filled outside the image)
// and the 8x8x9 weights are staged in shared memory; each thread keeps 8 accumulators
// (one pixel, 8 output channels) and reuses each loaded input value 8 times.
#define TW 16
#define TH 16
#define COB 8
#define CIB 8
#define HALO_W (TW + 2)
#define HALO_H (TH + 2)

extern "C" __global__ void __launch_bounds__(TW * TH)
conv2d_3x3(const float* __restrict__ in, const float* __restrict__ weight, float* __restrict__ out,
           int batch, int cin, int cout, int h, int w) {
    __shared__ float tile[CIB][HALO_H][HALO_W + 1];
    __shared__ float ws[COB][CIB][9];

    const int groups = (cout + COB - 1) / COB;
    const int b = blockIdx.z / groups;
    const int co0 = (blockIdx.z % groups) * COB;
    if (b >= batch) return;
    const int tx = threadIdx.x, ty = threadIdx.y, tid = ty * TW + tx;
    const int x0 = blockIdx.x * TW, y0 = blockIdx.y * TH;
    const int ox = x0 + tx, oy = y0 + ty;
    const size_t plane = (size_t)h * w;

    float acc[COB];
#pragma unroll
    for (int c = 0; c < COB; ++c) acc[c] = 0.0f;

    for (int ci0 = 0; ci0 < cin; ci0 += CIB) {
        // Stage CIB haloed input tiles.
        for (int e = tid; e < CIB * HALO_H * HALO_W; e += TW * TH) {
            const int c = e / (HALO_H * HALO_W);
            const int r = (e / HALO_W) % HALO_H;
            const int q = e % HALO_W;
            const int gy = y0 + r - 1, gx = x0 + q - 1, ci = ci0 + c;
            float v = 0.0f;
            if (ci < cin && gy >= 0 && gy < h && gx >= 0 && gx < w)
                v = in[((size_t)b * cin + ci) * plane + (size_t)gy * w + gx];
            tile[c][r][q] = v;
        }
        // Stage the COB x CIB x 9 weights.
        for (int e = tid; e < COB * CIB * 9; e += TW * TH) {
            const int co = e / (CIB * 9), c = (e / 9) % CIB, k = e % 9;
            float v = 0.0f;
            if (co0 + co < cout && ci0 + c < cin) v = weight[((size_t)(co0 + co) * cin + ci0 + c) * 9 + k];
            ws[co][c][k] = v;
        }
        __syncthreads();
#pragma unroll
        for (int c = 0; c < CIB; ++c) {
            float v[9];
#pragma unroll
            for (int dy = 0; dy < 3; ++dy)
#pragma unroll
                for (int dx = 0; dx < 3; ++dx) v[dy * 3 + dx] = tile[c][ty + dy][tx + dx];
#pragma unroll
            for (int co = 0; co < COB; ++co)
#pragma unroll
                for (int k = 0; k < 9; ++k) acc[co] = fmaf(v[k], ws[co][c][k], acc[co]);
        }
        __syncthreads();
    }

    if (ox < w && oy < h) {
#pragma unroll
        for (int co = 0; co < COB; ++co)
            if (co0 + co < cout) out[((size_t)b * cout + co0 + co) * plane + (size_t)oy * w + ox] = acc[co];
    }
}
