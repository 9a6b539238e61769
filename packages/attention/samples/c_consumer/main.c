/* A plain C program using the installed mlops-attention: a one-sequence FBLA cache filled on the
 * host emulation (300 tokens: the sink, one closed group, a filling group), then one decode step.
 * Built by find_package(mlops COMPONENTS attention) (CMakeLists.txt) or by pkg-config:
 *   cc main.c $(pkg-config --cflags --libs mlops-attention) -o fbla_demo */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/fbla.h"

enum { D = 64, T = 300, CAP = 384 };

static uint16_t bf16(float f) {
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

int main(void) {
  const int64_t rb = mlops_fbla_record_bytes(D);
  const int slots = CAP / 128 - 1;
  uint8_t* records = aligned_alloc(256, (size_t)slots * rb);
  static uint16_t sk[128 * D], sv[128 * D], tk[128 * D], tv[128 * D], k[T * D], v[T * D], q[D];
  int32_t length = 0, flags = 0;
  mlops_fbla_cache c = {1, 1, CAP, D, MLOPS_FBLA_3_3, slots, rb, records, sk, sv, tk, tv, &length, &flags};
  for (int i = 0; i < T * D; ++i) {
    k[i] = bf16((float)((i * 7) % 13) / 13.0f - 0.5f);
    v[i] = bf16((float)((i * 5) % 11) / 11.0f);
  }
  for (int d = 0; d < D; ++d) q[d] = bf16(d % 2 ? 0.25f : -0.25f);
  mlops_fbla_kv kv = {k, v, 0, 0, D, 0, 0, D, NULL, T, T};
  mlops_status s = mlops_fbla_append_host(&c, &kv);
  float out[D];
  mlops_fbla_decode_args a;
  memset(&a, 0, sizeof a);
  a.q = q; a.q_heads = 1; a.q_head_stride = D; a.out = out; a.out_dtype = MLOPS_DTYPE_FP32;
  a.scale = 0.125f; a.exact = 1; a.gap = 20.0f;
  size_t sb = mlops_fbla_decode_scratch_bytes(&c, 1);
  void* scratch = aligned_alloc(256, (sb + 255) / 256 * 256);
  if (s == MLOPS_OK) s = mlops_fbla_decode_host(&c, &a, scratch, sb);
  if (s != MLOPS_OK) {
    printf("mlops_fbla: %s: %s\n", mlops_status_string(s), mlops_fbla_last_error());
    return 1;
  }
  printf("out[0..3] = %.6f %.6f %.6f %.6f (%d tokens)\n", out[0], out[1], out[2], out[3], length);
  free(records);
  free(scratch);
  return 0;
}
