// Hopper thread block clusters (sm_90+): __cluster_dims__, cluster.sync(),
// distributed shared memory through map_shared_rank, cluster special
// registers, and a kernel without compile-time cluster dims.
#include <cooperative_groups.h>

namespace cg = cooperative_groups;

extern "C" __global__ void __cluster_dims__(2, 1, 1) clusterHistogram(int n, const int *data, int *bins, int binCount) {
  extern __shared__ int sharedBins[];
  cg::cluster_group cluster = cg::this_cluster();
  unsigned rank = cluster.block_rank();
  int perBlock = (binCount + cluster.num_blocks() - 1) / cluster.num_blocks();
  for (int b = threadIdx.x; b < perBlock; b += blockDim.x) sharedBins[b] = 0;
  cluster.sync();
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) {
    int bin = min(max(data[i], 0), binCount - 1);
    int owner = bin / perBlock;
    int *remote = cluster.map_shared_rank(sharedBins, owner);
    atomicAdd(remote + bin % perBlock, 1);
  }
  cluster.sync();
  for (int b = threadIdx.x; b < perBlock; b += blockDim.x)
    if (rank * perBlock + b < (unsigned)binCount) atomicAdd(&bins[rank * perBlock + b], sharedBins[b]);
}

extern "C" __global__ void __cluster_dims__(4, 1, 1) __launch_bounds__(128) clusterExchange(const float *in, float *out) {
  __shared__ float mine[128];
  cg::cluster_group cluster = cg::this_cluster();
  mine[threadIdx.x] = in[blockIdx.x * 128 + threadIdx.x];
  cluster.sync();
  unsigned neighbour = (cluster.block_rank() + 1) % cluster.num_blocks();
  float *theirs = cluster.map_shared_rank(mine, neighbour);
  float v = theirs[127 - threadIdx.x];
  cluster.sync();
  out[blockIdx.x * 128 + threadIdx.x] = v + (float)cluster.dim_blocks().x + (float)cluster.block_index().x;
}

// The third __launch_bounds__ argument (max blocks per cluster) gives .maxclusterrank.
extern "C" __global__ void __launch_bounds__(256, 1, 8) clusterInfo(unsigned *out) {
  cg::cluster_group cluster = cg::this_cluster();
  cluster.barrier_wait(cluster.barrier_arrive());
  if (threadIdx.x == 0)
    out[blockIdx.x] = cluster.block_rank() * 1000 + cluster.num_threads() + (cluster.thread_rank() & 1);
}
