// Cooperative groups: thread_block, tiled_partition (static and dynamic),
// cg::reduce with plus/greater, coalesced_threads, and labeled partitions.
#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>

namespace cg = cooperative_groups;

extern "C" __global__ void cgReduce(int n, const float *in, float *out) {
  cg::thread_block block = cg::this_thread_block();
  cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
  float v = 0.0f;
  for (int i = block.group_index().x * block.size() + block.thread_rank(); i < n; i += gridDim.x * block.size())
    v += in[i];
  float warpTotal = cg::reduce(warp, v, cg::plus<float>());
  __shared__ float partial[32];
  if (warp.thread_rank() == 0) partial[warp.meta_group_rank()] = warpTotal;
  block.sync();
  if (warp.meta_group_rank() == 0) {
    float w = warp.thread_rank() < warp.meta_group_size() ? partial[warp.thread_rank()] : 0.0f;
    w = cg::reduce(warp, w, cg::plus<float>());
    if (warp.thread_rank() == 0) atomicAdd(out, w);
  }
}

extern "C" __global__ void cgTiles(int n, const int *in, int *maxOut, int *counts) {
  cg::thread_block block = cg::this_thread_block();
  auto tile16 = cg::tiled_partition<16>(block);
  auto tile4 = cg::tiled_partition<4>(tile16);
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int v = i < n ? in[i] : -1;
  int tileMax = cg::reduce(tile16, v, cg::greater<int>());
  int quadSum = 0;
  for (int k = 0; k < 4; ++k) quadSum += tile4.shfl(v, k);
  if (tile16.thread_rank() == 0) maxOut[i / 16] = tileMax + tile16.any(v > 100) + tile16.all(v > 0);
  if (v > 0) {
    cg::coalesced_group active = cg::coalesced_threads();
    int rank = active.thread_rank();
    if (rank == 0) atomicAdd(counts, (int)active.size());
  }
  cg::thread_group dynamicTile = cg::tiled_partition(block, 8);
  dynamicTile.sync();
  if (i < n) counts[1 + i] = quadSum + (int)dynamicTile.thread_rank() + tile4.ballot(v & 1);
}

extern "C" __global__ void cgLabeled(int n, const int *keys, int *leaders) {
  auto warp = cg::tiled_partition<32>(cg::this_thread_block());
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  int key = i < n ? keys[i] & 3 : 0;
  auto group = cg::labeled_partition(warp, key);
  int total = cg::reduce(group, 1, cg::plus<int>());
  if (group.thread_rank() == 0 && i < n) leaders[i] = total * 10 + key + __match_any_sync(0xffffffffu, key);
}
