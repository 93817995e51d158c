// Register-heavy kernel: 64 live accumulators, so a low -maxrregcount forces spills.
__global__ void heavy(const float* x, float* y, int n){
  float acc[64];
  #pragma unroll
  for(int j=0;j<64;j++) acc[j]=x[threadIdx.x+j*n];
  #pragma unroll
  for(int r=0;r<2;r++){
  #pragma unroll
  for(int j=0;j<64;j++) acc[j]=acc[j]*acc[(j+r+1)%64]+acc[(j*7)%64];}
  float s=0;
  #pragma unroll
  for(int j=0;j<64;j++) s+=acc[j]*j;
  y[threadIdx.x]=s;
}
