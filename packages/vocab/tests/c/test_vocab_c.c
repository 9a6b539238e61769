/* The C API from plain C: the host emulations against double-precision references, error statuses
 * and messages, and, where a GPU is present, the GPU calls against the host emulation bit for bit.
 * Prints "N passed, M failed". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/vocab.h"

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

enum { V = 1001, H = 512, M = 3, B = 2 };

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return ((*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}
static uint16_t to_bf16(float f) { /* truncation is fine for test data: the value is what it is */
  uint32_t u;
  memcpy(&u, &f, 4);
  return (uint16_t)(u >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

static uint16_t table[V * H], xs[M * H];
static float out[M * H], out2[M * H], logits[M * V], logits2[M * V], zs[B * V];

int main(void) {
  unsigned seed = 7;
  for (int i = 0; i < V * H; ++i) table[i] = to_bf16(frand(&seed) * 0.1f);
  for (int i = 0; i < M * H; ++i) xs[i] = to_bf16(frand(&seed));

  /* embed: rows, rms_r, OOV */
  int32_t ids[M] = {0, 1000, 1001};
  float r[M], r2[M];
  int32_t oov = 0;
  mlops_embed_args e;
  memset(&e, 0, sizeof e);
  e.tokens = M; e.hidden = H; e.vocab = V;
  e.id_dtype = MLOPS_DTYPE_INT32; e.ids = ids;
  e.table_dtype = MLOPS_DTYPE_BF16; e.table = table; e.table_stride = H;
  e.out = out; e.out_stride = H; e.rms_r = r; e.eps = 1e-6f; e.oov_flag = &oov; e.variant = -1;
  CHECK(mlops_embed_host(&e) == MLOPS_OK, "embed host: %s", mlops_vocab_last_error());
  CHECK(out[5] == from_bf16(table[5]) && out[H + 3] == from_bf16(table[1000 * H + 3]), "embed rows");
  CHECK(oov == 1 && out[2 * H] == 0.0f, "OOV id: flag and zero row");
  double ss = 0;
  for (int i = 0; i < H; ++i) ss += (double)out[i] * out[i];
  CHECK(fabs(r[0] - 1.0 / sqrt(ss / H + 1e-6)) < 1e-5 * r[0], "embed rms_r %g", r[0]);

  /* lm_head: host emulation against double, stats */
  uint64_t best[M];
  uint32_t hist[M * 256];
  mlops_lm_head_args l;
  memset(&l, 0, sizeof l);
  l.tokens = M; l.hidden = H; l.vocab = V;
  l.x = xs; l.x_stride = H; l.weight = table; l.weight_stride = H;
  l.logits = logits; l.logits_stride = V; l.logit_scale = 1.0f; l.best = best; l.key_hist = hist; l.variant = -1;
  CHECK(mlops_lm_head_host(&l) == MLOPS_OK, "lm_head host: %s", mlops_vocab_last_error());
  double worst = 0;
  for (int m = 0; m < M; ++m)
    for (int v = 0; v < V; ++v) {
      double s = 0, mag = 0;
      for (int k = 0; k < H; ++k) {
        s += (double)from_bf16(xs[m * H + k]) * from_bf16(table[v * H + k]);
        mag += fabs((double)from_bf16(xs[m * H + k]) * from_bf16(table[v * H + k]));
      }
      double err = fabs(logits[m * V + v] - s) / (mag + 1e-30);
      if (err > worst) worst = err;
    }
  CHECK(worst < 1e-5, "lm_head relative error %g", worst);
  uint32_t am = 0xffffffffu - (uint32_t)(best[0] & 0xffffffffu);
  for (int v = 0; v < V; ++v) CHECK(logits[v] <= logits[am], "argmax %u is a max (v=%d)", am, v);
  uint32_t total = 0;
  for (int b = 0; b < 256; ++b) total += hist[b];
  CHECK(total == V, "histogram counts every logit (%u)", total);

  /* errors, named */
  l.tokens = 9;
  CHECK(mlops_lm_head_host(&l) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_vocab_last_error(), "x:", 2) == 0,
        "M = 9 -> %s", mlops_vocab_last_error());
  l.tokens = M;
  l.hidden = 500;
  CHECK(mlops_lm_head_host(&l) == MLOPS_ERR_INVALID_ARGUMENT, "hidden 500 -> %s", mlops_vocab_last_error());
  l.hidden = H;
  mlops_sample_config bad = {1.0f, 0, 0.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0};
  CHECK(mlops_sample_check_configs(&bad, 1) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_vocab_last_error(), "top_p:", 6) == 0,
        "top_p 0 -> %s", mlops_vocab_last_error());
  bad.top_p = 1.0f; bad.top_k = -2;
  CHECK(mlops_sample_check_configs(&bad, 1) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_vocab_last_error(), "top_k:", 6) == 0,
        "top_k -2 -> %s", mlops_vocab_last_error());

  /* sample: greedy = argmax, a top-k draw lands in the top k */
  for (int i = 0; i < B * V; ++i) zs[i] = frand(&seed) * 4.0f;
  mlops_sample_config cfg[B] = {{0.0f, 0, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0}, {1.0f, 5, 1.0f, 0.0f, 1.0f, 0.0f, 0.0f, 0}};
  uint64_t seeds[B] = {1, 2};
  int64_t steps[B] = {0, 0};
  int32_t toks[B], flags[B];
  mlops_sample_args s;
  memset(&s, 0, sizeof s);
  s.rows = B; s.vocab = V; s.logits = zs; s.logits_stride = V; s.configs = cfg; s.seeds = seeds; s.steps = steps;
  s.tokens = toks; s.flags = flags; s.variant = -1;
  CHECK(mlops_sample_host(&s) == MLOPS_OK, "sample host: %s", mlops_vocab_last_error());
  int g = 0, above = 0;
  for (int v = 1; v < V; ++v) if (zs[v] > zs[g]) g = v;
  for (int v = 0; v < V; ++v) above += zs[V + v] > zs[V + toks[1]];
  CHECK(toks[0] == g, "greedy token %d, argmax %d", toks[0], g);
  CHECK(above < 5, "top-5 draw has %d larger logits", above);
  CHECK(steps[0] == 1 && steps[1] == 1, "steps advanced");
  /* the split variant needs a workspace of mlops_sample_workspace_bytes(); named error without */
  CHECK(mlops_sample_workspace_bytes(B, V, 3) > 0 && mlops_sample_workspace_bytes(B, V, 2) == 0, "workspace sizes");
  s.variant = 3;
  CHECK(mlops_sample_host(&s) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_vocab_last_error(), "workspace:", 10) == 0,
        "split without workspace -> %s", mlops_vocab_last_error());
  s.variant = -1;

  /* The GPU, when there is one: the same bits as the host emulation */
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    CHECK(mlops_lm_head(&l, NULL) == MLOPS_ERR_CUDA, "no GPU: CUDA error status");
    printf("no GPU: GPU checks skipped\n");
  } else {
    void *dt, *dx, *dl, *dids, *dout, *dr;
    cudaMalloc(&dt, sizeof table); cudaMalloc(&dx, sizeof xs); cudaMalloc(&dl, sizeof logits);
    cudaMalloc(&dids, sizeof ids); cudaMalloc(&dout, sizeof out); cudaMalloc(&dr, sizeof r);
    cudaMemcpy(dt, table, sizeof table, cudaMemcpyHostToDevice);
    cudaMemcpy(dx, xs, sizeof xs, cudaMemcpyHostToDevice);
    cudaMemcpy(dids, ids, sizeof ids, cudaMemcpyHostToDevice);
    mlops_embed_args de = e;
    de.ids = dids; de.table = dt; de.out = (float*)dout; de.rms_r = (float*)dr; de.oov_flag = NULL;
    CHECK(mlops_embed(&de, NULL) == MLOPS_OK, "embed gpu: %s", mlops_vocab_last_error());
    cudaMemcpy(out2, dout, sizeof out2, cudaMemcpyDeviceToHost);
    cudaMemcpy(r2, dr, sizeof r2, cudaMemcpyDeviceToHost);
    CHECK(memcmp(out, out2, sizeof out) == 0 && memcmp(r, r2, sizeof r) == 0, "embed gpu bits == host");
    mlops_lm_head_variant vs[32];
    int nv = mlops_lm_head_variants(vs, 32);
    CHECK(nv <= 32, "lm_head variants: %d listed", nv);
    if (nv > 32) nv = 32;
    for (int v = 0; v < nv; ++v) {
      if (vs[v].kind != MLOPS_LM_HEAD_CUDA_CORE) continue;
      mlops_lm_head_args dlh = l;
      dlh.x = dx; dlh.weight = dt; dlh.logits = dl; dlh.best = NULL; dlh.key_hist = NULL; dlh.variant = v;
      CHECK(mlops_lm_head(&dlh, NULL) == MLOPS_OK, "lm_head gpu %s: %s", vs[v].name, mlops_vocab_last_error());
      cudaMemcpy(logits2, dl, sizeof logits2, cudaMemcpyDeviceToHost);
      CHECK(memcmp(logits, logits2, sizeof logits) == 0, "lm_head %s bits == host", vs[v].name);
    }
    cudaFree(dt); cudaFree(dx); cudaFree(dl); cudaFree(dids); cudaFree(dout); cudaFree(dr);

    /* the sampler: every variant (split with its workspace) gives the host's tokens and steps */
    for (int i = 0; i < B * V; ++i) zs[i] = frand(&seed) * 4.0f;
    mlops_sample_config cfg2[B] = {{0.9f, 0, 0.9f, 0.0f, 1.0f, 0.0f, 0.0f, 0}, {1.0f, 30, 1.0f, 0.02f, 1.0f, 0.0f, 0.0f, 0}};
    int32_t htoks[B];
    int64_t hsteps[B] = {5, 9};
    mlops_sample_args hs = s;
    hs.configs = cfg2; hs.steps = hsteps; hs.tokens = htoks; hs.flags = NULL;
    float* zcopy = (float*)malloc(sizeof zs);
    memcpy(zcopy, zs, sizeof zs);
    hs.logits = zcopy;
    CHECK(mlops_sample_host(&hs) == MLOPS_OK, "sample host: %s", mlops_vocab_last_error());
    void *dz, *dcfg, *dseeds, *dsteps, *dtoks, *dws;
    cudaMalloc(&dz, sizeof zs); cudaMalloc(&dcfg, sizeof cfg2); cudaMalloc(&dseeds, sizeof seeds);
    cudaMalloc(&dsteps, sizeof hsteps); cudaMalloc(&dtoks, sizeof htoks);
    mlops_sample_variant sv[32];
    int nsv = mlops_sample_variants(sv, 32);  /* the count, even past the capacity: 21 now */
    CHECK(nsv <= 32, "sample variants: %d, more than this test's table", nsv);
    for (int v = 0; v < nsv && v < 32; ++v) {
      int64_t steps0[B] = {5, 9}, steps1[B];
      int32_t dtk[B];
      cudaMemcpy(dz, zs, sizeof zs, cudaMemcpyHostToDevice);
      cudaMemcpy(dcfg, cfg2, sizeof cfg2, cudaMemcpyHostToDevice);
      cudaMemcpy(dseeds, seeds, sizeof seeds, cudaMemcpyHostToDevice);
      cudaMemcpy(dsteps, steps0, sizeof steps0, cudaMemcpyHostToDevice);
      int64_t wsb = mlops_sample_workspace_bytes(B, V, v);
      CHECK((wsb > 0) == (sv[v].split != 0), "workspace bytes for %s: %lld", sv[v].name, (long long)wsb);
      dws = NULL;
      if (wsb) cudaMalloc(&dws, (size_t)wsb);
      mlops_sample_args ds;
      memset(&ds, 0, sizeof ds);
      ds.rows = B; ds.vocab = V; ds.logits = (float*)dz; ds.logits_stride = V; ds.configs = (mlops_sample_config*)dcfg;
      ds.seeds = (uint64_t*)dseeds; ds.steps = (int64_t*)dsteps; ds.tokens = (int32_t*)dtoks; ds.workspace = dws;
      ds.variant = v;
      CHECK(mlops_sample(&ds, NULL) == MLOPS_OK, "sample gpu %s: %s", sv[v].name, mlops_vocab_last_error());
      cudaMemcpy(dtk, dtoks, sizeof dtk, cudaMemcpyDeviceToHost);
      cudaMemcpy(steps1, dsteps, sizeof steps1, cudaMemcpyDeviceToHost);
      CHECK(dtk[0] == htoks[0] && dtk[1] == htoks[1], "sample %s tokens %d %d == host %d %d", sv[v].name, dtk[0], dtk[1],
            htoks[0], htoks[1]);
      CHECK(steps1[0] == 6 && steps1[1] == 10, "sample %s steps advanced on the device", sv[v].name);
      if (dws) cudaFree(dws);
    }
    free(zcopy);
    cudaFree(dz); cudaFree(dcfg); cudaFree(dseeds); cudaFree(dsteps); cudaFree(dtoks);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
