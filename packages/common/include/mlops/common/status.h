/* mlops common status codes and dtypes, shared by every package's C API.
 * Plain C. Everything here is static inline, so two packages linked into one
 * program never define the same symbol twice. */
#ifndef MLOPS_COMMON_STATUS_H
#define MLOPS_COMMON_STATUS_H

#ifdef __cplusplus
extern "C" {
#endif

typedef enum mlops_status {
  MLOPS_OK = 0,
  MLOPS_ERR_INVALID_ARGUMENT = 1, /* a shape, dtype, stride, pointer or value is wrong; nothing launched */
  MLOPS_ERR_UNSUPPORTED = 2,      /* valid, but no kernel of this build handles it (arch, variant) */
  MLOPS_ERR_CUDA = 3,             /* the CUDA runtime failed (no driver, launch error) */
  MLOPS_ERR_DATA = 4              /* the kernel met bad data (out-of-range id, NaN) and flagged it */
} mlops_status;

static inline const char* mlops_status_string(mlops_status s) {
  switch (s) {
    case MLOPS_OK: return "ok";
    case MLOPS_ERR_INVALID_ARGUMENT: return "invalid argument";
    case MLOPS_ERR_UNSUPPORTED: return "unsupported";
    case MLOPS_ERR_CUDA: return "CUDA error";
    case MLOPS_ERR_DATA: return "bad data";
  }
  return "unknown status";
}

/* Element types crossing the C APIs. Values are stable (part of the ABI). */
typedef enum mlops_dtype {
  MLOPS_DTYPE_NONE = 0,
  MLOPS_DTYPE_BF16 = 1,
  MLOPS_DTYPE_FP16 = 2,
  MLOPS_DTYPE_FP32 = 3,
  MLOPS_DTYPE_INT8 = 4,
  MLOPS_DTYPE_UINT8 = 5,
  MLOPS_DTYPE_FP8_E4M3 = 6,
  MLOPS_DTYPE_INT32 = 7,
  MLOPS_DTYPE_INT64 = 8
} mlops_dtype;

static inline int mlops_dtype_size(mlops_dtype t) {
  switch (t) {
    case MLOPS_DTYPE_BF16: case MLOPS_DTYPE_FP16: return 2;
    case MLOPS_DTYPE_FP32: case MLOPS_DTYPE_INT32: return 4;
    case MLOPS_DTYPE_INT8: case MLOPS_DTYPE_UINT8: case MLOPS_DTYPE_FP8_E4M3: return 1;
    case MLOPS_DTYPE_INT64: return 8;
    default: return 0;
  }
}

static inline const char* mlops_dtype_name(mlops_dtype t) {
  switch (t) {
    case MLOPS_DTYPE_BF16: return "bfloat16";
    case MLOPS_DTYPE_FP16: return "float16";
    case MLOPS_DTYPE_FP32: return "float32";
    case MLOPS_DTYPE_INT8: return "int8";
    case MLOPS_DTYPE_UINT8: return "uint8";
    case MLOPS_DTYPE_FP8_E4M3: return "float8_e4m3fn";
    case MLOPS_DTYPE_INT32: return "int32";
    case MLOPS_DTYPE_INT64: return "int64";
    default: return "none";
  }
}

#ifdef __cplusplus
}
#endif
#endif
