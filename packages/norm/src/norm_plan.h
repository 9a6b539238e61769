// The planner of a call (mlops_norm with variant -1): mlops_norm_plan's pick by shape, refined
// with what that C function does not see: x's dtype, the kind, a residual, a quantized output.
#pragma once
#include "mlops/norm.h"

namespace mlops::norm {
int plan_call(const mlops_norm_args& a, int sm, int sms);
}  // namespace mlops::norm
