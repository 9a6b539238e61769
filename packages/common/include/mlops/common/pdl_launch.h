// A kernel launch that may be a programmatic dependent (PDL) of the kernel before it on its stream:
// with pdl, the launch carries cudaLaunchAttributeProgrammaticStreamSerialization, so its CTAs may
// start once that kernel's CTAs have all run griddepcontrol.launch_dependents (or ended); the
// kernel's griddepcontrol.wait then orders what it reads of its predecessor's writes. The caller
// decides pdl: only where the kernel's code has the wait (sm_90 SASS / PTX >= 9.0; a compute_80 build
// JIT-compiled on an H200 has none) and the device is sm_90+. Without pdl: an ordinary launch.
// One copy for every package (vocab's LM head and its statistics' decode, attention's decode chain).
#pragma once
#include <cuda_runtime.h>

namespace mlops {

template <typename... P, typename... A>
inline cudaError_t launch_pdl(bool pdl, void (*kernel)(P...), dim3 grid, dim3 block, size_t smem, cudaStream_t s,
                              A... args) {
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = s;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, args...);
}

}  // namespace mlops
