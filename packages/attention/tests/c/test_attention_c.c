/* The C API from plain C: a small cache filled by mlops_fbla_append_host (two closed groups, a
 * sink, a filling group), mlops_fbla_decode_host against a double-precision softmax attention over
 * the dequantized cache, exact == skip with a huge gap, a full cache refused (status, flag, nothing
 * written), bad arguments named; where a GPU is present, the device calls against the host bits.
 * Prints "N passed, M failed". */
#include <cuda_runtime_api.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mlops/fbla.h"

#include "mlops/common/testing/check.h"  // CHECK, passed, failed

enum { B = 1, HK = 2, HQ = 4, D = 64, CAP = 512, T = 420 };

static float frand(unsigned* s) {
  *s = *s * 1664525u + 1013904223u;
  return ((*s >> 8) / 16777216.0f) * 4.0f - 2.0f;
}

static uint16_t bf16(float f) { /* RNE, finite inputs */
  uint32_t u;
  memcpy(&u, &f, 4);
  u += 0x7fffu + ((u >> 16) & 1u);
  return (uint16_t)(u >> 16);
}

static float f32(uint16_t h) {
  uint32_t u = (uint32_t)h << 16;
  float f;
  memcpy(&f, &u, 4);
  return f;
}

#if MLOPS_FBLA_RECORD_VERSION != 4
#error "kv_value below reads record version 4 (K fields and V codes fragment-ordered, bf16 scale arrays)"
#endif

/* field (bits wide) of token r, channel d from a fragment-ordered K region (the map in fbla.h) */
static int k_field(const uint8_t* region, int bits, int r, int d) {
  const uint32_t* w = (const uint32_t*)region;
  const int S = D / 32, nw = D * bits / 64, n4 = nw & ~3, n2 = (nw - n4) & ~1;
  const int cw = 8 * (d / 32) + d % 8, i = (d / 8) % 4, tig = cw / (2 * S), rem = cw % (2 * S);
  const int blk = r / 16, lane = 4 * (r % 8) + tig, n = 4 * (rem / 2) + 2 * (rem % 2) + (r / 8) % 2;
  uint32_t lw[8];
  for (int v = 0; v < nw; ++v) { /* the lane's words: parts of 4, then 2, then 1 a lane */
    const int ps = v < n4 ? v / 4 * 4 : (v < n4 + n2 ? n4 : n4 + n2), psz = v < n4 ? 4 : (v < n4 + n2 ? 2 : 1);
    lw[v] = w[blk * 32 * nw + 32 * ps + lane * psz + (v - ps)];
  }
#define BYTE(v) ((int)((lw[v] >> (8 * i)) & 0xffu))
  if (bits == 4) return (BYTE(n / 2) >> (4 * (n % 2))) & 15;
  if (bits == 2) return (BYTE(n / 4) >> (2 * (n % 4))) & 3;
  {
    const int h = 3 * (n / 8), rr = n % 8;
    if (rr < 6) return (BYTE(h + rr / 2) >> (3 * (rr % 2))) & 7;
    if (rr == 6) return ((BYTE(h) >> 6) & 3) | (((BYTE(h + 1) >> 6) & 1) << 2);
    return ((BYTE(h + 1) >> 7) & 1) | (((BYTE(h + 2) >> 6) & 3) << 1);
  }
#undef BYTE
}

/* the value decode attends to for token t of kv head h, channel d (the format of fbla.h) */
static double kv_value(const mlops_fbla_cache* c, int is_v, int h, int t, int d) {
  const int G = MLOPS_FBLA_GROUP, g = t / G;
  const size_t tile = (size_t)G * D;
  const int len = c->lengths[0];
  if (g == 0) return f32((is_v ? c->sink_v : c->sink_k)[h * tile + t * D + d]);
  if ((g + 1) * G > len) return f32((is_v ? c->tail_v : c->tail_k)[h * tile + (t % G) * D + d]);
  const uint8_t* rec = c->records + ((size_t)h * c->slots + g - 1) * c->record_bytes;
  const uint16_t* kmin = (const uint16_t*)rec; /* bf16 arrays (record version 4) */
  const uint16_t* kscale = (const uint16_t*)(rec + 2 * D);
  const uint16_t* vmin = (const uint16_t*)(rec + 4 * D);
  const uint16_t* vscale = (const uint16_t*)(rec + 4 * D + 256);
  const int fb = c->mode == MLOPS_FBLA_4_2 ? 2 : 3, cb = 6 - fb, r = t % G;
  const uint8_t* kc = rec + 4 * D + 512;
  const uint8_t* kf = kc + 16 * cb * D;
  const uint8_t* vc = kf + 16 * fb * D;
  int code = 0;
  if (is_v) { /* fragment-ordered (MLOPS_FBLA_RECORD_VERSION 2 on, the map in fbla.h) */
    const uint32_t* vw = (const uint32_t*)vc;
    const int s = r / 32, tt = r % 32, lane = 4 * (d % 8) + (tt % 16) / 4, i = tt % 4, T = d / 16;
    const int j = 2 * ((tt / 16) % 2) + (d / 8) % 2;
    for (int v = 0; v < 3; ++v) {
      const uint32_t w = vw[s * 6 * D + ((3 * T + v) / 4) * 128 + 4 * lane + (3 * T + v) % 4];
      const int byte = (int)((w >> (8 * i)) & 0xffu);
      if (v == j) code |= byte & 63;
      if (j == 3) code |= ((byte >> 6) & 3) << (2 * v);
    }
    return (double)f32(vmin[r]) + (double)f32(vscale[r]) * code;
  }
  code = k_field(kc, cb, r, d) << fb | k_field(kf, fb, r, d);
  return (double)f32(kmin[d]) + (double)f32(kscale[d]) * code;
}

int main(void) {
  const int64_t rb = mlops_fbla_record_bytes(D);
  CHECK(rb == 196 * D + 512, "record bytes %lld", (long long)rb);
  CHECK(mlops_fbla_record_bytes(80) == 0, "head_dim 80 has no record");
  const int slots = CAP / 128 - 1;
  const size_t tile = (size_t)128 * D * HK;
  uint8_t* records = aligned_alloc(256, (size_t)slots * HK * rb);
  uint16_t *sk = calloc(tile, 2), *sv = calloc(tile, 2), *tk = calloc(tile, 2), *tv = calloc(tile, 2);
  int32_t lengths[B] = {0}, flags[1] = {0};
  mlops_fbla_cache c = {B, HK, CAP, D, MLOPS_FBLA_3_3, slots, rb, records, sk, sv, tk, tv, lengths, flags};
  CHECK(mlops_fbla_check_cache(&c) == MLOPS_OK, "cache: %s", mlops_fbla_last_error());

  /* K/V [HK][T][D] with an outlier channel in K */
  static uint16_t k[HK * T * D], v[HK * T * D], q[HQ * D];
  unsigned seed = 11;
  for (int i = 0; i < HK * T * D; ++i) {
    k[i] = bf16(frand(&seed) * ((i % D) == 5 ? 8.0f : 1.0f));
    v[i] = bf16(frand(&seed));
  }
  for (int i = 0; i < HQ * D; ++i) q[i] = bf16(frand(&seed));
  mlops_fbla_kv kv = {k, v, 0, (int64_t)T * D, D, 0, (int64_t)T * D, D, NULL, 300, 300};
  CHECK(mlops_fbla_append_host(&c, &kv) == MLOPS_OK, "append 300: %s", mlops_fbla_last_error());
  kv.k = k + 300 * D; kv.v = v + 300 * D; kv.count = T - 300; kv.max_count = T - 300;
  CHECK(mlops_fbla_append_host(&c, &kv) == MLOPS_OK, "append 120: %s", mlops_fbla_last_error());
  CHECK(lengths[0] == T, "length %d", lengths[0]);

  /* decode against a double-precision attention over the stored values */
  size_t sb = mlops_fbla_decode_scratch_bytes(&c, HQ);
  void* scratch = aligned_alloc(256, (sb + 255) / 256 * 256);
  float out[HQ * D], out2[HQ * D];
  mlops_fbla_decode_args a;
  memset(&a, 0, sizeof a);
  a.q = q; a.q_batch_stride = HQ * D; a.q_head_stride = D; a.q_heads = HQ; a.out = out;
  a.out_dtype = MLOPS_DTYPE_FP32; a.scale = 0.125f; a.exact = 1; a.gap = 20.0f;
  CHECK(mlops_fbla_decode_host(&c, &a, scratch, sb) == MLOPS_OK, "decode: %s", mlops_fbla_last_error());
  double worst = 0;
  for (int h = 0; h < HQ; ++h) {
    const int kh = h / (HQ / HK);
    static double s[T];
    double m = -1e300, l = 0;
    for (int t = 0; t < T; ++t) {
      double dot = 0;
      for (int d = 0; d < D; ++d) dot += (double)f32(q[h * D + d]) * kv_value(&c, 0, kh, t, d);
      s[t] = dot * 0.125;
      if (s[t] > m) m = s[t];
    }
    for (int t = 0; t < T; ++t) l += exp(s[t] - m);
    for (int d = 0; d < D; ++d) {
      double o = 0;
      for (int t = 0; t < T; ++t) o += exp(s[t] - m) * kv_value(&c, 1, kh, t, d);
      o /= l;
      double e = fabs(o - out[h * D + d]);
      if (e > worst) worst = e;
    }
  }
  /* q is quantized to int8 per (head, group) against the codes: |error| stays well below 0.02 */
  CHECK(worst < 2e-2, "decode vs float64 over the cache: max error %g", worst);
  a.exact = 0; a.gap = 1e30f; a.out = out2;
  CHECK(mlops_fbla_decode_host(&c, &a, scratch, sb) == MLOPS_OK, "decode skip: %s", mlops_fbla_last_error());
  CHECK(memcmp(out, out2, sizeof out) == 0, "skip with every block refined == exact, bit for bit");

  /* a full cache: status, flag, nothing written */
  kv.count = CAP; kv.max_count = CAP;
  uint8_t* before = malloc((size_t)slots * HK * rb);
  memcpy(before, records, (size_t)slots * HK * rb);
  CHECK(mlops_fbla_append_host(&c, &kv) == MLOPS_ERR_DATA, "full cache: status");
  CHECK(flags[0] == MLOPS_FBLA_FLAG_FULL, "full cache: flag %d", flags[0]);
  CHECK(lengths[0] == T && memcmp(before, records, (size_t)slots * HK * rb) == 0, "full cache: nothing written");
  CHECK(strstr(mlops_fbla_last_error(), "capacity") != NULL, "full cache message: %s", mlops_fbla_last_error());

  /* bad arguments, named */
  mlops_fbla_cache bad = c;
  bad.head_dim = 96;
  CHECK(mlops_fbla_check_cache(&bad) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_fbla_last_error(), "head_dim"),
        "head_dim 96: %s", mlops_fbla_last_error());
  a.q_heads = 3;
  CHECK(mlops_fbla_decode_host(&c, &a, scratch, sb) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_fbla_last_error(), "q_heads"),
        "q_heads 3: %s", mlops_fbla_last_error());
  a.q_heads = HK * (int)((1LL << 31) / ((long long)HK * c.batch * (1 + (c.slots + 1) / 2)) + 1);  /* int32 partial rows */
  CHECK(mlops_fbla_decode_host(&c, &a, scratch, sb) == MLOPS_ERR_INVALID_ARGUMENT && strstr(mlops_fbla_last_error(), "2^31"),
        "q_heads %d: %s", a.q_heads, mlops_fbla_last_error());
  a.q_heads = HQ;
  CHECK(mlops_fbla_decode_host(&c, &a, scratch, sb - 4) == MLOPS_ERR_INVALID_ARGUMENT &&
            strstr(mlops_fbla_last_error(), "scratch_bytes"), "small scratch: %s", mlops_fbla_last_error());
  CHECK(strcmp(mlops_status_string(MLOPS_ERR_DATA), "bad data") == 0, "status string");

  int ndev = 0;
  if (cudaGetDeviceCount(&ndev) == cudaSuccess && ndev > 0) {
    /* the GPU: the same cache built on the device, then decode; both against the host bits */
    const size_t rbytes = (size_t)slots * HK * rb;
    mlops_fbla_cache g = c;
    void *dk, *dv, *dq, *dout, *dscr;
    cudaMalloc((void**)&g.records, rbytes);
    cudaMalloc((void**)&g.sink_k, tile * 2); cudaMalloc((void**)&g.sink_v, tile * 2);
    cudaMalloc((void**)&g.tail_k, tile * 2); cudaMalloc((void**)&g.tail_v, tile * 2);
    cudaMalloc((void**)&g.lengths, 4); cudaMalloc((void**)&g.flags, 4);
    cudaMemset(g.lengths, 0, 4); cudaMemset(g.flags, 0, 4);
    cudaMalloc(&dk, sizeof k); cudaMalloc(&dv, sizeof v); cudaMalloc(&dq, sizeof q);
    cudaMalloc(&dout, sizeof out); cudaMalloc(&dscr, sb);
    cudaMemcpy(dk, k, sizeof k, cudaMemcpyHostToDevice);
    cudaMemcpy(dv, v, sizeof v, cudaMemcpyHostToDevice);
    cudaMemcpy(dq, q, sizeof q, cudaMemcpyHostToDevice);
    mlops_fbla_kv gkv = {dk, dv, 0, (int64_t)T * D, D, 0, (int64_t)T * D, D, NULL, 300, 300};
    CHECK(mlops_fbla_append(&g, &gkv, NULL) == MLOPS_OK, "gpu append: %s", mlops_fbla_last_error());
    gkv.k = (const uint16_t*)dk + 300 * D; gkv.v = (const uint16_t*)dv + 300 * D; gkv.count = T - 300; gkv.max_count = T - 300;
    CHECK(mlops_fbla_append(&g, &gkv, NULL) == MLOPS_OK, "gpu append 2: %s", mlops_fbla_last_error());
    uint8_t* grec = malloc(rbytes);
    cudaMemcpy(grec, g.records, rbytes, cudaMemcpyDeviceToHost);
    CHECK(memcmp(grec, records, rbytes) == 0, "gpu records == host records");
    a.q = dq; a.out = dout; a.exact = 1; a.gap = 20.0f;
    CHECK(mlops_fbla_decode(&g, &a, dscr, sb, NULL) == MLOPS_OK, "gpu decode: %s", mlops_fbla_last_error());
    cudaMemcpy(out2, dout, sizeof out2, cudaMemcpyDeviceToHost);
    CHECK(cudaDeviceSynchronize() == cudaSuccess, "gpu sync");
    CHECK(memcmp(out, out2, sizeof out) == 0, "gpu decode == host decode");
    free(grec);
  }
  printf("%d passed, %d failed\n", passed, failed);
  free(records); free(sk); free(sv); free(tk); free(tv); free(scratch); free(before);
  return failed ? 1 : 0;
}
