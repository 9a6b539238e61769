# FlashInfer on the GPU machine (no network), from the wheels tools/device_bundle.py laid out in
# .carry/flashinfer/callN (docs/vocab.md, "FlashInfer on the device"). Source it, in the repo root,
# at the start of each call that carries a call folder, so that what it exports stays set:
#
#     . ci/device/flashinfer_setup.sh && python3 packages/vocab/bench/bench_vocab.py ...
#
# It copies what this call brought (every .carry/flashinfer/call*/ present, or the folders given as
# arguments) into $FI_STAGE (/tmp/fi_stage: the machine keeps /tmp while warm, 30 s after a call),
# joins each wheel's parts (NAME.partKK-of-NN, in name order) and checks it against SHA256SUMS.
# Parts still missing: it says which and returns 3 (carry the next call folder in the next call).
# All there: pip install --no-index --no-deps --target $FI_TARGET (/tmp/fi), then exports
# PYTHONPATH, CUDA_HOME, FLASHINFER_CUDA_ARCH_LIST (9.0), FLASHINFER_WORKSPACE_BASE (/tmp/fiws: the
# JIT cache) and, where $CUDA_HOME/include has no curand.h (sampling.cuh includes it), the nvidia
# wheels' include folder in FLASHINFER_EXTRA_CUDAFLAGS (and, with no libcuda.so in $CUDA_HOME/lib64
# or its stubs/, a link to the driver's libcuda.so.1 in FLASHINFER_EXTRA_LDFLAGS); prints flashinfer's version, and with
# FI_WARM=1 (the default) JIT-builds the sampling module (timed) so that no bench pays for it.
# FI_JOIN_ONLY=1 stops after joining (tools/tests/test_device_bundle.py runs it so on the CPU).

_fi_setup() {
  local stage=${FI_STAGE:-/tmp/fi_stage} target=${FI_TARGET:-/tmp/fi} d f name n k missing=0 sum
  local -a srcs=("$@")
  if [ ${#srcs[@]} -eq 0 ]; then
    for d in .carry/flashinfer/call*/; do [ -d "$d" ] && srcs+=("$d"); done
  fi
  mkdir -p "$stage/parts" "$stage/wheels" || return 1
  for d in "${srcs[@]}"; do
    # sourced from a script, "$@" may be that script's own arguments: only folders count
    [ -d "$d" ] || { echo "flashinfer_setup: $d is no folder, ignored"; continue; }
    for f in "$d"/*; do
      [ -f "$f" ] || continue
      case $(basename "$f") in
        SHA256SUMS) cp "$f" "$stage/SHA256SUMS" ;;
        *) cp "$f" "$stage/parts/" ;;
      esac
    done
    echo "flashinfer_setup: took $(ls "$d" | wc -l) files from $d"
  done
  if [ ! -f "$stage/SHA256SUMS" ]; then
    echo "flashinfer_setup: no SHA256SUMS: carry a .carry/flashinfer/callN folder (tools/device_bundle.py)"
    return 2
  fi
  while read -r sum name; do
    [ -n "$name" ] || continue
    if [ -f "$stage/wheels/$name" ]; then continue; fi
    if [ -f "$stage/parts/$name" ]; then
      mv "$stage/parts/$name" "$stage/wheels/$name"
    else
      f=$(ls "$stage/parts/" | grep -F "$name.part" | head -1)
      if [ -z "$f" ]; then
        echo "flashinfer_setup: $name: no part yet"; missing=$((missing + 1)); continue
      fi
      n=${f##*-of-}
      k=$(ls "$stage/parts/$name".part*-of-"$n" | wc -l)
      if [ "$k" -ne "$((10#$n))" ]; then
        echo "flashinfer_setup: $name: $k of $((10#$n)) parts so far"; missing=$((missing + 1)); continue
      fi
      cat "$stage/parts/$name".part*-of-"$n" > "$stage/wheels/$name.tmp" && mv "$stage/wheels/$name.tmp" "$stage/wheels/$name" || return 1
      rm -f "$stage/parts/$name".part*-of-"$n"
    fi
    if [ "$(sha256sum "$stage/wheels/$name" | cut -d' ' -f1)" != "$sum" ]; then
      echo "flashinfer_setup: $name: sha256 mismatch"; rm -f "$stage/wheels/$name"; return 1
    fi
    echo "flashinfer_setup: $name ready ($(du -m "$stage/wheels/$name" | cut -f1) MiB)"
  done < "$stage/SHA256SUMS"
  if [ "$missing" -gt 0 ]; then
    echo "flashinfer_setup: $missing wheels incomplete; carry the next call folder within 30 s"
    return 3
  fi
  [ "${FI_JOIN_ONLY:-0}" = 1 ] && return 0
  if [ ! -d "$target/flashinfer" ]; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$target" \
      "$stage"/wheels/*.whl || return 1
  fi
  case ":${PYTHONPATH:-}:" in *":$target:"*) ;; *) export PYTHONPATH=$target${PYTHONPATH:+:$PYTHONPATH} ;; esac
  if [ -z "${CUDA_HOME:-}" ]; then
    if [ -x /usr/local/cuda/bin/nvcc ]; then export CUDA_HOME=/usr/local/cuda
    else export CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")"); fi
  fi
  export FLASHINFER_CUDA_ARCH_LIST=${FLASHINFER_CUDA_ARCH_LIST:-9.0}
  export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-/tmp/fiws}
  if [ ! -f "$CUDA_HOME/include/curand.h" ] && [ -z "${FLASHINFER_EXTRA_CUDAFLAGS:-}" ]; then
    local inc
    inc=$(python3 -c "import nvidia, pathlib; print(*[str(p.parent) for d in nvidia.__path__ for p in pathlib.Path(d).glob('*/include/curand.h')][:1])" 2>/dev/null)
    [ -n "$inc" ] && export FLASHINFER_EXTRA_CUDAFLAGS="-isystem $inc"
  fi
  # the JIT links -lcuda from $CUDA_HOME/lib64(/stubs); without one there, the driver's libcuda.so.1
  if [ -z "${FLASHINFER_EXTRA_LDFLAGS:-}" ] && ! ls "$CUDA_HOME"/lib64/libcuda.so "$CUDA_HOME"/lib64/stubs/libcuda.so >/dev/null 2>&1; then
    local drv
    drv=$(ldconfig -p 2>/dev/null | grep -o '/[^ ]*/libcuda\.so\.1$' | head -1)
    [ -z "$drv" ] && drv=$(ls /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1 2>/dev/null | head -1)
    if [ -n "$drv" ]; then
      mkdir -p /tmp/fi_libcuda && ln -sf "$drv" /tmp/fi_libcuda/libcuda.so
      export FLASHINFER_EXTRA_LDFLAGS="-L/tmp/fi_libcuda"
    fi
  fi
  echo "flashinfer_setup: CUDA_HOME=$CUDA_HOME nvcc=$("$CUDA_HOME/bin/nvcc" --version | grep -o 'release [0-9.]*')" \
    "FLASHINFER_EXTRA_CUDAFLAGS=${FLASHINFER_EXTRA_CUDAFLAGS:-} FLASHINFER_EXTRA_LDFLAGS=${FLASHINFER_EXTRA_LDFLAGS:-}"
  python3 -c "import flashinfer; print(flashinfer.__version__)" || return 1
  if [ "${FI_WARM:-1}" = 1 ]; then
    python3 -c "
import time; t = time.time()
from flashinfer.sampling import get_sampling_module
get_sampling_module()
print(f'flashinfer_setup: sampling module JIT-built / loaded in {time.time() - t:.1f} s')" || return 1
  fi
}

_fi_setup "$@"
_fi_rc=$?
# sourced: return the status; run as a script: exit with it
(return 0 2>/dev/null) && return $_fi_rc || exit $_fi_rc
