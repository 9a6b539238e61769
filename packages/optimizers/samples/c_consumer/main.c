/* A plain C program using the installed mlops-optimizers: one SGD-with-momentum step of a
 * four-element tensor on the host emulation. Built by find_package(mlops COMPONENTS optimizers)
 * (CMakeLists.txt) or by pkg-config:
 *   cc main.c $(pkg-config --cflags --libs mlops-optimizers) -o optimizers_demo */
#include <stdio.h>
#include <string.h>

#include "mlops/optimizers.h"

int main(void) {
  float p[4] = {1.0f, 2.0f, 3.0f, 4.0f}, g[4] = {0.5f, -0.5f, 1.0f, -1.0f}, buf[4] = {0}, step = 0.0f;
  mlops_optim_tensor t;
  memset(&t, 0, sizeof t);
  t.param = p; t.grad = g; t.state1 = buf; t.step = &step; t.numel = 4; t.dtype = MLOPS_DTYPE_FP32;
  _Alignas(16) unsigned char table[256]; /* rows hold pointers: 8-byte alignment at least */
  int64_t chunks = 0;
  if (mlops_optim_table_build(&t, 1, table, sizeof table, &chunks) != MLOPS_OK) {
    printf("table: %s\n", mlops_optim_last_error());
    return 1;
  }
  mlops_optim_args a;
  memset(&a, 0, sizeof a);
  a.algo = MLOPS_OPTIM_SGD; a.dtype = MLOPS_DTYPE_FP32; a.lr = 0.1; a.beta1 = 0.9;
  a.table = table; a.num_tensors = 1; a.num_chunks = chunks;
  mlops_status s = mlops_optim_step_host(&a);
  if (s != MLOPS_OK) {
    printf("mlops_optim_step_host: %s: %s\n", mlops_status_string(s), mlops_optim_last_error());
    return 1;
  }
  printf("p[0..3] = %.6f %.6f %.6f %.6f\n", p[0], p[1], p[2], p[3]);
  return 0;
}
