// dtype codes -> element types, for the launcher and the host emulation alike.
#pragma once
#include "norm_math.h"

namespace mlops::norm {

template <class T> struct Tag { using type = T; };

// Calls f(Tag<XT>, Tag<WT>) for the runtime dtypes (the caller validated them). A call with
// no weight uses WT = XT: nothing reads it.
template <class F>
void dispatch_types(mlops_dtype xt, mlops_dtype wt, F&& f) {
  auto with_w = [&](auto xtag) {
    using X = typename decltype(xtag)::type;
    switch (wt) {
      case MLOPS_DTYPE_BF16: return f(xtag, Tag<bf16>{});
      case MLOPS_DTYPE_FP16: return f(xtag, Tag<f16>{});
      case MLOPS_DTYPE_FP32: return f(xtag, Tag<float>{});
      default: return f(xtag, Tag<X>{});
    }
  };
  switch (xt) {
    case MLOPS_DTYPE_BF16: return with_w(Tag<bf16>{});
    case MLOPS_DTYPE_FP16: return with_w(Tag<f16>{});
    default: return with_w(Tag<float>{});
  }
}

void run_host(const Params& p, mlops_dtype xt, mlops_dtype wt);

}  // namespace mlops::norm
