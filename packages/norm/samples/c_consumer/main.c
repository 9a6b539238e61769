/* A plain C program using the installed mlops-norm: RMSNorm of one row on the host emulation
 * (and on the GPU when there is one). Built by find_package(mlops COMPONENTS norm) (CMakeLists.txt)
 * or by pkg-config:  cc main.c $(pkg-config --cflags --libs mlops-norm) -o norm_demo */
#include <stdio.h>
#include <string.h>

#include "mlops/norm.h"

int main(void) {
  float x[256], w[256], y[256];
  for (int i = 0; i < 256; ++i) { x[i] = (float)(i % 7) - 3.0f; w[i] = 1.0f; }
  mlops_norm_args a;
  memset(&a, 0, sizeof a);
  a.rows = 1; a.hidden = 256; a.kind = MLOPS_NORM_RMS; a.order = MLOPS_ORDER_SINGLE; a.eps = 1e-6f;
  a.x_dtype = MLOPS_DTYPE_FP32; a.x = x; a.x_stride = 256;
  a.w_dtype = MLOPS_DTYPE_FP32; a.weight = w; a.y = y; a.y_stride = 256; a.variant = -1;
  mlops_status s = mlops_norm_host(&a);
  if (s != MLOPS_OK) {
    printf("mlops_norm_host: %s: %s\n", mlops_status_string(s), mlops_norm_last_error());
    return 1;
  }
  printf("y[0..3] = %.6f %.6f %.6f %.6f\n", y[0], y[1], y[2], y[3]);
  return 0;
}
