// What every package's C API (src/*_api.cpp) shares: its thread-local last-error message and the
// checks its argument validation repeats. C++ only (the public headers stay plain C: status.h).
// A package keeps its own `thread_local ErrorSlot` in its anonymous namespace, so two packages linked
// into one program keep separate messages (mlops_<name>_last_error reads its own).
#pragma once
#include <cstdarg>
#include <cstdint>
#include <cstdio>
#include <string>

#include "mlops/common/status.h"

namespace mlops::common {

class ErrorSlot {
 public:
  // The message formatted (printf rules, at most 511 bytes) into the slot; returns s, so a check reads
  // `return g_err.fail(MLOPS_ERR_INVALID_ARGUMENT, "x: ...", ...);`.
  mlops_status fail(mlops_status s, const char* fmt, ...) __attribute__((format(printf, 3, 4))) {
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    msg = buf;
    return s;
  }
  void clear() { msg.clear(); }
  const char* message() const { return msg.c_str(); }

 private:
  std::string msg;
};

inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }

inline bool is_float_type(mlops_dtype t) {
  return t == MLOPS_DTYPE_BF16 || t == MLOPS_DTYPE_FP16 || t == MLOPS_DTYPE_FP32;
}

}  // namespace mlops::common
