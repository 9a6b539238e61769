/* The C API from plain C: the host emulation against a double-precision RMSNorm/LayerNorm,
 * error statuses and messages, and, where a GPU is present, mlops_norm against
 * mlops_norm_host bit for bit. Prints "N passed, M failed". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/norm.h"

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

enum { T = 5, H = 1000 };

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return ((*s >> 8) / 16777216.0f) * 4.0f - 2.0f;
}

static mlops_norm_args base_args(const float* x, const float* w, float* y) {
  mlops_norm_args a;
  memset(&a, 0, sizeof a);
  a.rows = T; a.hidden = H; a.kind = MLOPS_NORM_RMS; a.order = MLOPS_ORDER_SINGLE; a.eps = 1e-6f;
  a.x_dtype = MLOPS_DTYPE_FP32; a.x = x; a.x_stride = H;
  a.w_dtype = MLOPS_DTYPE_FP32; a.weight = w;
  a.y = y; a.y_stride = H; a.variant = -1;
  return a;
}

int main(void) {
  static float x[T * H], w[H], b[H], y[T * H], y2[T * H];
  unsigned seed = 1;
  for (int i = 0; i < T * H; ++i) x[i] = frand(&seed);
  for (int i = 0; i < H; ++i) { w[i] = frand(&seed); b[i] = frand(&seed); }

  mlops_norm_variant vs[48];
  CHECK(mlops_norm_variants(NULL, 0) == 48, "48 variants (the count alone)");
  CHECK(mlops_norm_variants(vs, 4) == 48 && strcmp(vs[3].name, "w8") == 0 && vs[3].warps_per_row == 8,
        "variant table, capacity 4");
  CHECK(mlops_norm_variants(vs, 48) == 48 && strcmp(vs[20].name, "r16lx2") == 0 &&
            strcmp(vs[21].name, "r16lx4w") == 0 && strcmp(vs[22].name, "r16lx2e") == 0 &&
            vs[22].warps_per_row == 2 && strcmp(vs[23].name, "r16lx4we") == 0 && vs[23].warps_per_row == 4 &&
            strcmp(vs[24].name, "r16lx4wb") == 0 && vs[24].warps_per_row == 4 &&
            strcmp(vs[25].name, "r16lx2f") == 0 && vs[25].warps_per_row == 2 &&
            strcmp(vs[26].name, "r16lx4wf") == 0 && vs[26].warps_per_row == 4 &&
            strcmp(vs[27].name, "r16lxp2") == 0 && strcmp(vs[28].name, "r16lxp4") == 0 &&
            strcmp(vs[29].name, "r16lxp8") == 0 && vs[29].warps_per_row == 4 &&
            strcmp(vs[30].name, "r16lx2g") == 0 && vs[30].warps_per_row == 2 &&
            strcmp(vs[31].name, "r16lx4wg") == 0 && vs[31].warps_per_row == 4 &&
            strcmp(vs[32].name, "r16lx4wh") == 0 && vs[32].warps_per_row == 4 &&
            strcmp(vs[33].name, "r16lx2k") == 0 && vs[33].warps_per_row == 2 &&
            strcmp(vs[34].name, "r16lx4wk") == 0 && vs[34].warps_per_row == 4 &&
            strcmp(vs[35].name, "r16lx4wk2") == 0 && vs[35].warps_per_row == 4 &&
            strcmp(vs[36].name, "r32lx4we") == 0 && vs[36].warps_per_row == 4 && vs[36].units_in_registers == 8 &&
            strcmp(vs[37].name, "r32lx4wf") == 0 && strcmp(vs[38].name, "r32lx4wg") == 0 && vs[38].warps_per_row == 4 &&
            strcmp(vs[39].name, "ln1") == 0 && vs[39].warps_per_row == 1 && strcmp(vs[40].name, "ln2") == 0 &&
            vs[40].warps_per_row == 2 && strcmp(vs[41].name, "ln4w") == 0 && vs[41].warps_per_row == 4 &&
            strcmp(vs[42].name, "ln4wp") == 0 && vs[42].warps_per_row == 4 &&
            strcmp(vs[43].name, "lu2m") == 0 && vs[43].warps_per_row == 0 && vs[43].units_in_registers == 2 &&
            strcmp(vs[44].name, "lu2mp") == 0 && strcmp(vs[45].name, "lu4mp") == 0 && vs[45].units_in_registers == 4 &&
            strcmp(vs[46].name, "r8lx2g") == 0 && vs[46].warps_per_row == 2 && strcmp(vs[47].name, "r8lx4wg") == 0,
        "variant table, all");

  /* RMSNorm, float32, against double precision */
  mlops_norm_args a = base_args(x, w, y);
  CHECK(mlops_norm_host(&a) == MLOPS_OK, "host rms: %s", mlops_norm_last_error());
  double worst = 0;
  for (int r = 0; r < T; ++r) {
    double ss = 0;
    for (int i = 0; i < H; ++i) ss += (double)x[r * H + i] * x[r * H + i];
    double rr = 1.0 / sqrt(ss / H + 1e-6);
    for (int i = 0; i < H; ++i) {
      double ref = x[r * H + i] * rr * w[i];
      double e = fabs(y[r * H + i] - ref) / (fabs(ref) + 1e-30);
      if (e > worst) worst = e;
    }
  }
  CHECK(worst < 1e-5, "rms relative error %g", worst);

  /* LayerNorm with bias */
  a.kind = MLOPS_NORM_LAYER; a.bias = b;
  CHECK(mlops_norm_host(&a) == MLOPS_OK, "host layer: %s", mlops_norm_last_error());
  worst = 0;
  for (int r = 0; r < T; ++r) {
    double m = 0, var = 0;
    for (int i = 0; i < H; ++i) m += x[r * H + i];
    m /= H;
    for (int i = 0; i < H; ++i) var += (x[r * H + i] - m) * (x[r * H + i] - m);
    double rr = 1.0 / sqrt(var / H + 1e-6);
    for (int i = 0; i < H; ++i) {
      double nw = (x[r * H + i] - m) * rr * w[i];
      double e = fabs(y[r * H + i] - (nw + b[i])) / (fabs(nw) + fabs(b[i]) + 1e-30);
      if (e > worst) worst = e;
    }
  }
  CHECK(worst < 1e-5, "layer relative error %g", worst);

  /* Bad input: a status and a message naming the argument, before anything runs */
  a = base_args(x, w, y);
  a.hidden = 0;
  CHECK(mlops_norm_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_norm_last_error(), "x:", 2) == 0,
        "hidden 0 -> %s", mlops_norm_last_error());
  a = base_args(x, w, y);
  a.group_size = 300;
  CHECK(mlops_norm_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_norm_last_error(), "group_size"),
        "group 300 -> %s", mlops_norm_last_error());
  a = base_args(x, w, y);
  a.y = NULL;
  CHECK(mlops_norm(&a, NULL) == MLOPS_ERR_INVALID_ARGUMENT && strncmp(mlops_norm_last_error(), "y:", 2) == 0,
        "y NULL -> %s", mlops_norm_last_error());
  a = base_args(x, w, y);
  a.x_dtype = MLOPS_DTYPE_INT8;
  CHECK(mlops_norm_host(&a) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_norm_last_error(), "int8"),
        "int8 x -> %s", mlops_norm_last_error());
  CHECK(strcmp(mlops_status_string(MLOPS_ERR_CUDA), "CUDA error") == 0, "status string");

  /* The GPU, when there is one: the same bits as the host emulation for every variant */
  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
    a = base_args(x, w, y);
    CHECK(mlops_norm(&a, NULL) == MLOPS_ERR_CUDA, "no GPU: CUDA error status");
    printf("no GPU: GPU checks skipped\n");
  } else {
    float *dx, *dw, *dy;
    cudaMalloc((void**)&dx, sizeof x);
    cudaMalloc((void**)&dw, sizeof w);
    cudaMalloc((void**)&dy, sizeof y);
    cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice);
    cudaMemcpy(dw, w, sizeof w, cudaMemcpyHostToDevice);
    a = base_args(x, w, y);
    mlops_norm_host(&a);
    for (int v = 0; v < 11; ++v) {
      mlops_norm_args d = base_args(dx, dw, dy);
      d.variant = v;
      cudaMemset(dy, 0xff, sizeof y);
      CHECK(mlops_norm(&d, NULL) == MLOPS_OK, "gpu variant %d: %s", v, mlops_norm_last_error());
      cudaMemcpy(y2, dy, sizeof y2, cudaMemcpyDeviceToHost);
      CHECK(memcmp(y, y2, sizeof y) == 0, "gpu variant %d bits == host emulation", v);
    }
    cudaFree(dx); cudaFree(dw); cudaFree(dy);
  }
  printf("%d passed, %d failed\n", passed, failed);
  return failed ? 1 : 0;
}
