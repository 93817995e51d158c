// Thread-private arrays indexed with run-time values: nvcc cannot keep them
// in registers, so the PTX gets a local depot (__local_depot, %SP/%SPL).
extern "C" __global__ void localSortTopK(int n, const float *in, float *out) {
  float window[16];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  for (int k = 0; k < 16; ++k) window[k] = (i + k < n) ? in[i + k] : 0.0f;
  // Insertion sort with data-dependent indices.
  for (int a = 1; a < 16; ++a) {
    float key = window[a];
    int b = a - 1;
    while (b >= 0 && window[b] > key) {
      window[b + 1] = window[b];
      --b;
    }
    window[b + 1] = key;
  }
  if (i < n) out[i] = window[(int)in[i] & 15] + window[15];
}

extern "C" __global__ void localLookup(int n, const int *indices, const double *seeds, double *out) {
  double table[24];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  double s = seeds[i];
  for (int k = 0; k < 24; ++k) table[k] = s * k + 1.0 / (k + 1);
  int idx = indices[i];
  out[i] = table[idx % 24] + table[(idx * 7) % 24];
}

struct Particle {
  float pos[3];
  float vel[3];
  int id;
  char tag[5];
};

extern "C" __global__ void localStructArray(int n, const Particle *in, Particle *out, int pick) {
  Particle scratch[4];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  for (int k = 0; k < 4; ++k) scratch[k] = in[(i + k) % n];
  Particle &p = scratch[pick & 3];
  for (int d = 0; d < 3; ++d) p.pos[d] += p.vel[d];
  p.tag[pick % 5] = 'x';
  out[i] = p;
}
