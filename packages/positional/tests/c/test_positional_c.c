/* The C API from plain C: the host emulation against a double-precision rotation, the cache
 * builder against the on-the-fly path, out-of-range positions, error statuses and messages,
 * and, where a GPU is present, mlops_rope against mlops_rope_host bit for bit.
 * Prints "N passed, M failed". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/rope.h"

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

enum { T = 6, HQ = 4, HK = 2, D = 128, RD = 128, HALF = RD / 2, MAXPOS = 64 };

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return ((*s >> 8) / 16777216.0f) * 4.0f - 2.0f;
}

static mlops_rope_args base_args(const float* q, float* qo, const float* k, float* ko, const long long* pos,
                                 const float* inv_freq) {
  mlops_rope_args a;
  memset(&a, 0, sizeof a);
  a.batch = 1; a.seq = T; a.head_dim = D; a.rotary_dim = RD;
  a.layout = MLOPS_ROPE_NEOX; a.dtype = MLOPS_DTYPE_FP32;
  mlops_rope_tensor tq = {q, qo, HQ, 0, HQ * D, D, 0, HQ * D, D};
  mlops_rope_tensor tk = {k, ko, HK, 0, HK * D, D, 0, HK * D, D};
  a.q = tq; a.k = tk;
  a.pos_dtype = MLOPS_DTYPE_INT64; a.positions = pos;
  a.max_positions = MAXPOS; a.inv_freq = inv_freq; a.attention_scaling = 1.0f;
  return a;
}

int main(void) {
  static float q[T * HQ * D], k[T * HK * D], qo[T * HQ * D], ko[T * HK * D], qo2[T * HQ * D], ko2[T * HK * D];
  static float inv_freq[HALF], cache[MAXPOS * RD];
  long long pos[T] = {0, 5, 63, 17, 2, 40};
  unsigned seed = 7;
  for (int i = 0; i < T * HQ * D; ++i) q[i] = frand(&seed);
  for (int i = 0; i < T * HK * D; ++i) k[i] = frand(&seed);
  for (int i = 0; i < HALF; ++i) inv_freq[i] = (float)(1.0 / pow(10000.0, (2.0 * i) / RD));

  /* on the fly, against double precision */
  mlops_rope_args a = base_args(q, qo, k, ko, pos, inv_freq);
  CHECK(mlops_rope_host(&a) == MLOPS_OK, "host: %s", mlops_rope_last_error());
  double worst = 0;
  for (int t = 0; t < T; ++t)
    for (int h = 0; h < HQ; ++h)
      for (int i = 0; i < HALF; ++i) {
        const float* x = q + (t * HQ + h) * D;
        const float* o = qo + (t * HQ + h) * D;
        double ang = (double)((float)pos[t] * inv_freq[i]);
        double c = cos(ang), s = sin(ang);
        double e1 = fabs(o[i] - (x[i] * c - x[i + HALF] * s));
        double e2 = fabs(o[i + HALF] - (x[i + HALF] * c + x[i] * s));
        if (e1 > worst) worst = e1;
        if (e2 > worst) worst = e2;
      }
  CHECK(worst < 4e-6, "rotation error %g", worst);

  /* the cache path gives the same bits as on the fly */
  CHECK(mlops_rope_cache_host(inv_freq, HALF, 1.0f, MAXPOS, cache) == MLOPS_OK, "cache: %s", mlops_rope_last_error());
  a = base_args(q, qo2, k, ko2, pos, NULL);
  a.cos_sin_cache = cache;
  CHECK(mlops_rope_host(&a) == MLOPS_OK, "host cache: %s", mlops_rope_last_error());
  CHECK(memcmp(qo, qo2, sizeof qo) == 0 && memcmp(ko, ko2, sizeof ko) == 0, "cache bits == on-the-fly bits");

  /* out of range: flag, token left unrotated (copied out of place), nothing else touched */
  long long bad_pos[T] = {0, 5, 64, 17, -3, 40};
  int flag = 0;
  a = base_args(q, qo2, k, ko2, bad_pos, NULL);
  a.cos_sin_cache = cache;
  a.out_of_range = &flag;
  CHECK(mlops_rope_host(&a) == MLOPS_OK, "host bad pos: %s", mlops_rope_last_error());
  CHECK(flag == 1, "out-of-range flag set");
  CHECK(memcmp(qo2 + 2 * HQ * D, q + 2 * HQ * D, HQ * D * sizeof(float)) == 0, "token 2 copied unrotated");
  CHECK(memcmp(ko2 + 4 * HK * D, k + 4 * HK * D, HK * D * sizeof(float)) == 0, "token 4 copied unrotated");
  CHECK(memcmp(qo2 + 3 * HQ * D, qo + 3 * HQ * D, HQ * D * sizeof(float)) == 0, "token 3 rotated as before");

  /* bad input: a status and a message naming the argument */
  a = base_args(q, qo, k, ko, pos, inv_freq);
  a.rotary_dim = 127;
  CHECK(mlops_rope_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_rope_last_error(), "rotary_dim:", 11) == 0,
        "odd rotary_dim -> %s", mlops_rope_last_error());
  a = base_args(q, qo, k, ko, pos, inv_freq);
  a.head_dim = 32;
  CHECK(mlops_rope_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_rope_last_error(), "head_dim:", 9) == 0,
        "head_dim 32 -> %s", mlops_rope_last_error());
  a = base_args(q, qo, k, ko, pos, inv_freq);
  a.pos_dtype = MLOPS_DTYPE_FP32;
  CHECK(mlops_rope_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_rope_last_error(), "positions"),
        "fp32 positions -> %s", mlops_rope_last_error());
  a = base_args(q, qo, k, ko, pos, NULL);
  CHECK(mlops_rope(&a, NULL) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_rope_last_error(), "cos_sin_cache:", 14) == 0,
        "no frequencies -> %s", mlops_rope_last_error());
  a = base_args(q, qo, k, ko, pos, inv_freq);
  a.mrope_section[0] = 10;
  CHECK(mlops_rope_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_rope_last_error(), "mrope_section"),
        "mrope sections -> %s", mlops_rope_last_error());
  {
    int tpc = 0, hpc = 0;
    mlops_rope_plan(1, 40, 128, 132, &tpc, &hpc);  /* decode: dec, 8 tokens a CTA, 4 heads a warp (run 27) */
    CHECK(tpc == 8 && hpc == 4, "planner decode: %d tokens x %d heads a CTA", tpc, hpc);
    mlops_rope_plan(32768, 40, 128, 132, &tpc, &hpc);
    CHECK(tpc >= 2 && hpc == 40, "planner prefill: %d tokens x %d heads a CTA", tpc, hpc);
    int picked = 0;
    mlops_rope_plan_path(0, 1, 32768, 40, 128, 132, &tpc, &hpc, &picked);  /* on the fly: early2x5, 4 tokens (run 17) */
    CHECK(picked == 5 && tpc == 4 && hpc == 40, "planner prefill on the fly: variant %d, %d x %d", picked, tpc, hpc);
    mlops_rope_plan_path(0, 0, 32768, 40, 128, 132, &tpc, &hpc, &picked);  /* cache: early2x5, 3 tokens (run 17) */
    CHECK(picked == 5 && tpc == 3 && hpc == 40, "planner prefill from the cache: variant %d, %d x %d", picked, tpc, hpc);
    mlops_rope_variant vs[32];
    const int nv = mlops_rope_variants(vs, 32);
    CHECK(nv >= 2 && vs[0].id == 1 && vs[0].name && vs[nv - 1].id == nv, "variant table: %d entries", nv);
    for (int v = 1; v <= nv; ++v) {
      int used = 0;
      mlops_rope_plan_variant(v, 4096, 40, 128, 132, &tpc, &hpc, &used);
      if (strncmp(vs[v - 1].name, "dec", 3) == 0)  /* a warp a (token, head group): 8 tokens a CTA, its warp's heads */
        CHECK(used == v && tpc == 8 && hpc >= 1 && hpc <= 40, "plan of variant %d: %d x %d", v, tpc, hpc);
      else
        CHECK(used == v && tpc >= 1 && tpc * 320 <= 4 * 256 * 2 && hpc == 40, "plan of variant %d: %d x %d", v, tpc, hpc);
    }
    a = base_args(q, qo, k, ko, pos, inv_freq);
    a.variant = nv + 1;
    CHECK(mlops_rope_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_rope_last_error(), "variant:", 8) == 0,
          "unknown variant -> %s", mlops_rope_last_error());
  }

  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    a = base_args(q, qo, k, ko, pos, inv_freq);
    CHECK(mlops_rope(&a, NULL) == MLOPS_ERR_CUDA, "no GPU: CUDA error status");
    printf("no GPU: GPU checks skipped\n");
  } else {
    float *dq, *dk, *dqo, *dko, *df, *dc;
    long long* dp;
    cudaMalloc((void**)&dq, sizeof q); cudaMalloc((void**)&dk, sizeof k);
    cudaMalloc((void**)&dqo, sizeof qo); cudaMalloc((void**)&dko, sizeof ko);
    cudaMalloc((void**)&df, sizeof inv_freq); cudaMalloc((void**)&dc, sizeof cache);
    cudaMalloc((void**)&dp, sizeof pos);
    cudaMemcpy(dq, q, sizeof q, cudaMemcpyHostToDevice);
    cudaMemcpy(dk, k, sizeof k, cudaMemcpyHostToDevice);
    cudaMemcpy(df, inv_freq, sizeof inv_freq, cudaMemcpyHostToDevice);
    cudaMemcpy(dp, pos, sizeof pos, cudaMemcpyHostToDevice);
    for (int tpc = 0; tpc <= 4; tpc += 2)
    for (int v = 0; v <= mlops_rope_variants(NULL, 0); ++v) {
      mlops_rope_args d = base_args(dq, dqo, dk, dko, dp, df);
      d.variant = v;
      d.tokens_per_cta = tpc;
      d.heads_per_cta = tpc == 2 ? 5 : 0;
      CHECK(mlops_rope(&d, NULL) == MLOPS_OK, "gpu: %s", mlops_rope_last_error());
      cudaMemcpy(qo2, dqo, sizeof qo2, cudaMemcpyDeviceToHost);
      cudaMemcpy(ko2, dko, sizeof ko2, cudaMemcpyDeviceToHost);
      CHECK(memcmp(qo, qo2, sizeof qo) == 0 && memcmp(ko, ko2, sizeof ko) == 0, "gpu bits == host (tpc %d, variant %d)", tpc, v);
    }
    static float cache2[MAXPOS * RD];
    CHECK(mlops_rope_cache(df, HALF, 1.0f, MAXPOS, dc, NULL) == MLOPS_OK, "gpu cache: %s", mlops_rope_last_error());
    cudaMemcpy(cache2, dc, sizeof cache2, cudaMemcpyDeviceToHost);
    CHECK(memcmp(cache, cache2, sizeof cache) == 0, "gpu cache bits == host cache");
    cudaFree(dq); cudaFree(dk); cudaFree(dqo); cudaFree(dko); cudaFree(df); cudaFree(dc); cudaFree(dp);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
