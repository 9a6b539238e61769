/* A plain C program using the installed mlops-positional: RoPE on one token's q head on the host
 * emulation, cos/sin computed on the fly. Built by find_package(mlops COMPONENTS positional)
 * (CMakeLists.txt) or by pkg-config:
 *   cc main.c $(pkg-config --cflags --libs mlops-positional) -o rope_demo */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "mlops/rope.h"

int main(void) {
  float q[128], out[128], inv_freq[64];
  long long pos = 7;
  for (int i = 0; i < 128; ++i) q[i] = (float)(i % 5) - 2.0f;
  for (int i = 0; i < 64; ++i) inv_freq[i] = 1.0f / powf(10000.0f, (2.0f * i) / 128.0f);
  mlops_rope_args a;
  memset(&a, 0, sizeof a);
  a.batch = 1; a.seq = 1; a.head_dim = 128; a.rotary_dim = 128;
  a.layout = MLOPS_ROPE_NEOX; a.dtype = MLOPS_DTYPE_FP32;
  a.q.x = q; a.q.out = out; a.q.heads = 1; a.q.seq_stride = 128; a.q.head_stride = 128;
  a.q.out_seq_stride = 128; a.q.out_head_stride = 128;
  a.pos_dtype = MLOPS_DTYPE_INT64; a.positions = &pos;
  a.max_positions = 4096; a.inv_freq = inv_freq; a.attention_scaling = 1.0f;
  mlops_status s = mlops_rope_host(&a);
  if (s != MLOPS_OK) {
    printf("mlops_rope_host: %s: %s\n", mlops_status_string(s), mlops_rope_last_error());
    return 1;
  }
  printf("q'[0..3] = %.6f %.6f %.6f %.6f\n", out[0], out[1], out[2], out[3]);
  return 0;
}
