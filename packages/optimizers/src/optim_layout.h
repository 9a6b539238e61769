// The table layout and the lane layout, shared by the kernels, the host emulation and the
// table builder.
#pragma once
#include "mlops/common/hd.h"
#include "mlops/optimizers.h"

namespace mlops::optim {

constexpr int kThreads = 256;  // a CTA: 8 warps
constexpr int kUnitElems = 256;
constexpr int kUnitsPerChunk = MLOPS_OPTIM_CHUNK / kUnitElems;
constexpr uint32_t kFlagAligned = 1u;  // every pointer of the row is 16-byte aligned

// Index within its unit of element e (0..7) of lane `lane` in the update kernel.
MLOPS_HD int unit_pos(int lane, int e) { return (e < 4 ? 4 * lane + e : 128 + 4 * lane + (e - 4)); }

inline const int32_t* chunk_map_of(const void* table, int64_t num_tensors) {
  return reinterpret_cast<const int32_t*>(static_cast<const mlops_optim_tensor*>(table) + num_tensors);
}

}  // namespace mlops::optim
