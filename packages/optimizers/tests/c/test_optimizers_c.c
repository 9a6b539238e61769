/* The C API from plain C: a table of two tensors, AdamW on the host emulation against a
 * direct float transcription of the update (same operations, so the same bits), the global
 * norm against double precision, error statuses and messages, the dynamic map, and, where a
 * GPU is present, mlops_optim_step against mlops_optim_step_host bit for bit.
 * Prints "N passed, M failed". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/optimizers.h"

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

enum { N0 = 1000, N1 = 20000, STEPS = 10 };

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return ((*s >> 8) / 16777216.0f) * 2.0f - 1.0f;
}

typedef struct {
  float *p, *g, *m, *v;
  float step;
} host_tensor;

static void alloc_tensor(host_tensor* t, int64_t n, unsigned* seed) {
  t->p = malloc(sizeof(float) * n); t->g = malloc(sizeof(float) * n);
  t->m = calloc(n, sizeof(float)); t->v = calloc(n, sizeof(float));
  t->step = 0.0f;
  for (int64_t i = 0; i < n; ++i) t->p[i] = frand(seed);
}

static mlops_optim_tensor row(host_tensor* t, int64_t n, uint32_t id) {
  mlops_optim_tensor r;
  memset(&r, 0, sizeof r);
  r.param = t->p; r.grad = t->g; r.state1 = t->m; r.state2 = t->v; r.step = &t->step;
  r.numel = n; r.id = id; r.dtype = MLOPS_DTYPE_FP32;
  return r;
}

static mlops_optim_args adamw_args(const void* table, int64_t chunks) {
  mlops_optim_args a;
  memset(&a, 0, sizeof a);
  a.algo = MLOPS_OPTIM_ADAM; a.dtype = MLOPS_DTYPE_FP32; a.decoupled = 1;
  a.lr = 1e-2; a.beta1 = 0.9; a.beta2 = 0.999; a.eps = 1e-8; a.weight_decay = 0.1;
  a.table = table; a.num_tensors = 2; a.num_chunks = chunks;
  return a;
}

/* The AdamW update written out in C: the operations of src/optim_math.h, in its order. */
static void adamw_ref(float* p, const float* g, float* m, float* v, int64_t n, int step) {
  const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
  double b1p = 1.0, b2p = 1.0, x1 = b1, x2 = b2;
  for (int k = step; k; k >>= 1) { if (k & 1) { b1p *= x1; b2p *= x2; } x1 *= x1; x2 *= x2; }
  const float neg_ss = (float)(-(lr / (1.0 - b1p))), bc2s = (float)sqrt(1.0 - b2p);
  const float decay = (float)(1.0 - lr * wd), c1 = (float)(1.0 - b1), c2 = (float)(1.0 - b2);
  for (int64_t i = 0; i < n; ++i) {
    float pi = p[i] * decay;
    m[i] = fmaf(c1, g[i] - m[i], m[i]);
    v[i] = fmaf(c2 * g[i], g[i], v[i] * (float)b2);
    const float denom = sqrtf(v[i]) / bc2s + (float)eps;
    p[i] = pi + neg_ss * m[i] / denom;
  }
}

int main(void) {
  unsigned seed = 1;
  host_tensor a0, a1, r0, r1;
  alloc_tensor(&a0, N0, &seed); alloc_tensor(&a1, N1, &seed);
  seed = 1;
  alloc_tensor(&r0, N0, &seed); alloc_tensor(&r1, N1, &seed);

  mlops_optim_tensor rows[2] = {row(&a0, N0, 0), row(&a1, N1, 1)};
  int64_t chunks = 0;
  const int64_t bytes = mlops_optim_table_bytes(rows, 2, &chunks);
  CHECK(chunks == 1 + 2, "chunks: %lld", (long long)chunks);
  void* table = malloc((size_t)bytes);
  CHECK(mlops_optim_table_build(rows, 2, table, bytes, &chunks) == MLOPS_OK, "build: %s", mlops_optim_last_error());

  for (int s = 1; s <= STEPS; ++s) {
    for (int i = 0; i < N0; ++i) a0.g[i] = r0.g[i] = frand(&seed);
    for (int i = 0; i < N1; ++i) a1.g[i] = r1.g[i] = frand(&seed);
    mlops_optim_args a = adamw_args(table, chunks);
    CHECK(mlops_optim_step_host(&a) == MLOPS_OK, "step_host: %s", mlops_optim_last_error());
    adamw_ref(r0.p, r0.g, r0.m, r0.v, N0, s);
    adamw_ref(r1.p, r1.g, r1.m, r1.v, N1, s);
  }
  CHECK(a0.step == STEPS && a1.step == STEPS, "steps %g %g", a0.step, a1.step);
  CHECK(memcmp(a0.p, r0.p, sizeof(float) * N0) == 0 && memcmp(a1.p, r1.p, sizeof(float) * N1) == 0,
        "host emulation == the written-out update, bit for bit");
  CHECK(memcmp(a1.v, r1.v, sizeof(float) * N1) == 0, "exp_avg_sq bit for bit");

  /* the global norm of the grads against double precision */
  float partials[3], norm = 0, coef = 0;
  CHECK(mlops_optim_grad_norm_partials_host(table, 2, chunks, partials, 0) == MLOPS_OK, "norm partials");
  CHECK(mlops_optim_grad_norm_finalize_host(partials, chunks, 1.0, NULL, &norm, &coef) == MLOPS_OK, "finalize");
  double ss = 0;
  for (int i = 0; i < N0; ++i) ss += (double)a0.g[i] * a0.g[i];
  for (int i = 0; i < N1; ++i) ss += (double)a1.g[i] * a1.g[i];
  CHECK(fabs(norm - sqrt(ss)) / sqrt(ss) < 1e-6, "norm %g vs %g", norm, sqrt(ss));
  CHECK(fabs(coef - 1.0 / (sqrt(ss) + 1e-6)) < 1e-6, "coef %g", coef);

  /* errors: a status and a message naming the argument; nothing changes */
  mlops_optim_args bad = adamw_args(table, chunks);
  bad.lr = -1.0;
  CHECK(mlops_optim_step_host(&bad) == MLOPS_ERR_INVALID_ARGUMENT, "negative lr rejected");
  CHECK(strncmp(mlops_optim_last_error(), "lr:", 3) == 0, "message: %s", mlops_optim_last_error());
  bad = adamw_args(table, chunks);
  bad.beta2 = 1.0;
  CHECK(mlops_optim_check(&bad) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_optim_last_error(), "beta2"),
        "beta2 out of range: %s", mlops_optim_last_error());
  bad = adamw_args(table, chunks);
  bad.stochastic_rounding = 1;
  CHECK(mlops_optim_check(&bad) == MLOPS_ERR_INVALID_ARGUMENT, "stochastic rounding of fp32 rejected");
  CHECK(a0.step == STEPS, "a rejected call changes nothing");
  mlops_optim_tensor badrow = rows[0];
  badrow.dtype = MLOPS_DTYPE_INT8;
  CHECK(mlops_optim_table_build(&badrow, 1, table, bytes, &chunks) == MLOPS_ERR_INVALID_ARGUMENT &&
            strstr(mlops_optim_last_error(), "dtype"), "bad row dtype: %s", mlops_optim_last_error());
  CHECK(mlops_optim_table_build(rows, 2, table, 8, &chunks) == MLOPS_ERR_INVALID_ARGUMENT, "small buffer");
  mlops_optim_table_build(rows, 2, table, bytes, &chunks);

  /* the dynamic map: ascending, 0 and +-1 present */
  float map[256];
  mlops_optim_dynamic_map(1, map);
  int asc = 1;
  for (int i = 1; i < 256; ++i) asc &= map[i] >= map[i - 1];
  CHECK(asc && map[255] == 1.0f && map[0] < -0.99f, "signed map");

  /* GPU: the same steps through the kernels, compared with the host emulation */
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
    float *dp, *dg, *dm, *dv, *dstep;
    const size_t nb = sizeof(float) * N1;
    cudaMalloc((void**)&dp, nb); cudaMalloc((void**)&dg, nb); cudaMalloc((void**)&dm, nb); cudaMalloc((void**)&dv, nb);
    cudaMalloc((void**)&dstep, sizeof(float));
    cudaMemcpy(dp, a1.p, nb, cudaMemcpyHostToDevice); cudaMemcpy(dg, a1.g, nb, cudaMemcpyHostToDevice);
    cudaMemcpy(dm, a1.m, nb, cudaMemcpyHostToDevice); cudaMemcpy(dv, a1.v, nb, cudaMemcpyHostToDevice);
    cudaMemcpy(dstep, &a1.step, sizeof(float), cudaMemcpyHostToDevice);
    mlops_optim_tensor drow = row(&a1, N1, 1);
    drow.param = dp; drow.grad = dg; drow.state1 = dm; drow.state2 = dv; drow.step = dstep;
    int64_t dchunks = 0;
    const int64_t dbytes = mlops_optim_table_bytes(&drow, 1, &dchunks);
    void* htab = malloc((size_t)dbytes);
    void* dtab;
    mlops_optim_table_build(&drow, 1, htab, dbytes, &dchunks);
    cudaMalloc(&dtab, (size_t)dbytes);
    cudaMemcpy(dtab, htab, (size_t)dbytes, cudaMemcpyHostToDevice);
    mlops_optim_args ga = adamw_args(dtab, dchunks);
    ga.num_tensors = 1;
    CHECK(mlops_optim_step(&ga, NULL) == MLOPS_OK, "gpu step: %s", mlops_optim_last_error());
    mlops_optim_tensor hrow = row(&a1, N1, 1);
    void* htab2 = malloc((size_t)dbytes);
    mlops_optim_table_build(&hrow, 1, htab2, dbytes, &dchunks);
    mlops_optim_args ha = adamw_args(htab2, dchunks);
    ha.num_tensors = 1;
    mlops_optim_step_host(&ha);
    float* back = malloc(nb);
    cudaMemcpy(back, dp, nb, cudaMemcpyDeviceToHost);
    CHECK(memcmp(back, a1.p, nb) == 0, "GPU == host emulation, bit for bit");
    printf("gpu: compared\n");
  } else {
    printf("gpu: none, skipped\n");
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed != 0;
}
