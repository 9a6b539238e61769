# Tests of cmake/arch.cmake, run as a script:
#   cmake -P cmake/tests/arch_test.cmake                                   # synthetic lists only
#   cmake -DNVCC=<nvcc> -DEXPECT_VERSION=11.8|12.4|13.0 -P cmake/tests/arch_test.cmake   # + a real nvcc
# Cases that must fail run this file again in a child cmake with -DARCH_TEST_EVAL=<code>
# (no semicolons in <code>: they would split the child's argument).
cmake_minimum_required(VERSION 3.18)
include("${CMAKE_CURRENT_LIST_DIR}/../arch.cmake")

if(DEFINED ARCH_TEST_EVAL)
  cmake_language(EVAL CODE "${ARCH_TEST_EVAL}")
  return()
endif()

set(passed 0)
macro(expect_eq name got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "FAIL ${name}:\n  got  '${got}'\n  want '${want}'")
  endif()
  math(EXPR passed "${passed} + 1")
endmacro()

# Run `code` in a child cmake; it must fail with a message matching `regex`.
function(expect_fatal name regex code)
  set(defs)
  if(DEFINED NVCC)
    set(defs "-DNVCC=${NVCC}")
  endif()
  execute_process(COMMAND "${CMAKE_COMMAND}" ${defs} "-DARCH_TEST_EVAL=${code}"
                          -P "${CMAKE_CURRENT_FUNCTION_LIST_FILE}"
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(rc EQUAL 0)
    message(FATAL_ERROR "FAIL ${name}: expected a fatal error, got success:\n${out}${err}")
  endif()
  string(REGEX REPLACE "[ \t\n]+" " " err "${err}")   # CMake wraps long messages
  if(NOT "${err}" MATCHES "${regex}")
    message(FATAL_ERROR "FAIL ${name}: error does not match '${regex}':\n${err}")
  endif()
  math(EXPR n "${passed} + 1")
  set(passed ${n} PARENT_SCOPE)
endfunction()

set(S118 35 37 50 52 53 60 61 62 70 72 75 80 86 87 89 90)        # nvcc 11.8.89 --list-gpu-arch
set(S124 50 52 53 60 61 62 70 72 75 80 86 87 89 90)              # nvcc 12.4 --list-gpu-arch
set(S130 75 80 86 87 88 89 90 100 103 110 120 121)               # nvcc 13.0.88
set(ALL124 "50-real;52-real;53-real;60-real;61-real;62-real;70-real;72-real;75-real;80-real;86-real;87-real;89-real;90-real;90-virtual")
set(ALL130 "75-real;80-real;86-real;87-real;89-real;90-real;90-virtual")

# --- default spec ("" / "all"), with and without MIN
mlops_resolve_archs(r SPEC "" SUPPORTED ${S124})
expect_eq("default 12.4" "${r}" "${ALL124}")
mlops_resolve_archs(r SPEC "" MIN 0 SUPPORTED ${S130})
expect_eq("default 13.0" "${r}" "${ALL130}")
mlops_resolve_archs(r SPEC all SUPPORTED ${S118})                 # 35 / 37: not mlops archs
expect_eq("default 11.8" "${r}" "${ALL124}")
mlops_resolve_archs(r SPEC all MIN 61 SUPPORTED ${S124})
expect_eq("all MIN 61 12.4" "${r}" "61-real;62-real;70-real;72-real;75-real;80-real;86-real;87-real;89-real;90-real;90-virtual")
mlops_resolve_archs(r SPEC " ALL " MIN 61 SUPPORTED ${S130})
expect_eq("all MIN 61 13.0" "${r}" "${ALL130}")
mlops_resolve_archs(r SPEC "" MIN 80 SUPPORTED 50 60 70 80 100)   # 100 supported, not mlops
expect_eq("default ignores non-mlops" "${r}" "80-real;80-virtual")
set(empty "")
mlops_resolve_archs(r SPEC ${empty} MIN 61 SUPPORTED ${S130})    # unquoted empty: keyword alone
expect_eq("unquoted empty spec" "${r}" "${ALL130}")

# --- native
mlops_resolve_archs(r SPEC native MIN 61 SUPPORTED ${S130})
expect_eq("native" "${r}" "native")

# --- explicit lists: forms, separators, normalisation
mlops_resolve_archs(r SPEC "50-real;61-real;75-real;90-real;90-virtual" SUPPORTED ${S124})
expect_eq("list 12.4" "${r}" "50-real;61-real;75-real;90-real;90-virtual")
mlops_resolve_archs(r SPEC "50-real;61-real;75-real;90-real;90-virtual;100-real" SUPPORTED ${S130})
expect_eq("list 13.0 (notes 2.3)" "${r}" "75-real;90-real;90-virtual;100-real")
mlops_resolve_archs(r SPEC "sm_61, compute_90 ,75,SM_80,90a-real" SUPPORTED ${S124})
expect_eq("spellings" "${r}" "61-real;90-virtual;75;80-real;90a-real")
mlops_resolve_archs(r SPEC 61-real 75-real 61-real SUPPORTED ${S124})   # unquoted list, duplicate
expect_eq("unquoted list, duplicates" "${r}" "61-real;75-real")
mlops_resolve_archs(r SPEC "50,61,70,75" MIN 61 SUPPORTED ${S124})
expect_eq("MIN 61 drops 50" "${r}" "61;70;75")
expect_fatal("all dropped on 13.0" "no CUDA architecture left.*sm_50,compute_61.*MIN 61.*75;80"
             "mlops_resolve_archs(r SPEC sm_50,compute_61 MIN 61 SUPPORTED 75 80 90)")
mlops_resolve_archs(r SPEC "61-virtual" SUPPORTED ${S124})
expect_eq("61-virtual on 12.4" "${r}" "61-virtual")

# --- errors
expect_fatal("61-virtual on 13.0" "no CUDA architecture left.*61-virtual"
             "mlops_resolve_archs(r SPEC 61-virtual SUPPORTED 75 80 90)")
expect_fatal("all, MIN above everything" "no CUDA architecture left.*MIN 100"
             "mlops_resolve_archs(r SPEC all MIN 100 SUPPORTED 50 61 90)")
expect_fatal("garbage entry" "cannot parse CUDA arch 'ampere'"
             "mlops_resolve_archs(r SPEC 80,ampere SUPPORTED 80)")
expect_fatal("sm_ + -virtual" "sm_ is SASS" "mlops_resolve_archs(r SPEC sm_80-virtual SUPPORTED 80)")
expect_fatal("compute_ + -real" "compute_ is PTX" "mlops_resolve_archs(r SPEC compute_80-real SUPPORTED 80)")
expect_fatal("archs_for before project" "after project"
             "mlops_cuda_archs_for(r MIN 61)")
expect_fatal("quirks before project" "after project" "mlops_cuda_quirk_flags(r)")

# --- preproject macro and quirk flags (synthetic versions)
unset(CMAKE_CUDA_ARCHITECTURES)
mlops_cuda_preproject()
expect_eq("preproject sets 75" "${CMAKE_CUDA_ARCHITECTURES}" "75")
set(CMAKE_CUDA_ARCHITECTURES 80-real)
mlops_cuda_preproject()
expect_eq("preproject keeps a set value" "${CMAKE_CUDA_ARCHITECTURES}" "80-real")
set(CMAKE_CUDA_COMPILER_VERSION 12.4.131)
mlops_cuda_quirk_flags(q)
expect_eq("quirks 12.4" "${q}" "$<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=186>;$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-attributes>")
set(CMAKE_CUDA_COMPILER_VERSION 11.8.89)
mlops_cuda_quirk_flags(q)
expect_eq("quirks 11.8" "${q}" "$<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=186>;$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-attributes>")
set(CMAKE_CUDA_COMPILER_VERSION 13.0.88)
mlops_cuda_quirk_flags(q)
expect_eq("quirks 13.0" "${q}" "$<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=186>;$<$<COMPILE_LANGUAGE:CUDA>:-diag-error=20280>")
unset(CMAKE_CUDA_COMPILER_VERSION)

# --- a real nvcc
if(DEFINED NVCC)
  if(EXPECT_VERSION STREQUAL "12.4")
    set(want_supported "${S124}")
    set(want_default "${ALL124}")
  elseif(EXPECT_VERSION STREQUAL "11.8")
    set(want_supported "${S118}")
    set(want_default "${ALL124}")                   # the same 14 SASS + compute_90
  elseif(EXPECT_VERSION STREQUAL "13.0")
    set(want_supported "${S130}")
    set(want_default "${ALL130}")
  else()
    message(FATAL_ERROR "EXPECT_VERSION must be 11.8, 12.4 or 13.0, not '${EXPECT_VERSION}'")
  endif()
  execute_process(COMMAND "${NVCC}" --version OUTPUT_VARIABLE v COMMAND_ERROR_IS_FATAL ANY)
  string(REGEX MATCH "release ([0-9]+\\.[0-9]+)" _ "${v}")
  expect_eq("nvcc version" "${CMAKE_MATCH_1}" "${EXPECT_VERSION}")

  mlops_nvcc_archs(sup "${NVCC}")
  expect_eq("nvcc archs ${EXPECT_VERSION}" "${sup}" "${want_supported}")
  string(MAKE_C_IDENTIFIER "MLOPS_NVCC_ARCHS_${NVCC}" var)
  expect_eq("cached in ${var}" "$CACHE{${var}}" "${want_supported}")
  mlops_nvcc_archs(sup2 "${NVCC}")                   # served from the cache
  expect_eq("cached answer" "${sup2}" "${sup}")

  mlops_resolve_archs(r SPEC "" SUPPORTED ${sup})
  expect_eq("real default ${EXPECT_VERSION}" "${r}" "${want_default}")
  if(NOT EXPECT_VERSION STREQUAL "13.0")
    mlops_resolve_archs(r SPEC 61-virtual SUPPORTED ${sup})
    expect_eq("real 61-virtual on ${EXPECT_VERSION}" "${r}" "61-virtual")
  else()
    expect_fatal("real 61-virtual on 13.0" "no CUDA architecture left.*61-virtual"
                 "mlops_nvcc_archs(s \${NVCC})\nmlops_resolve_archs(r SPEC 61-virtual SUPPORTED \${s})")
  endif()
  expect_fatal("nvcc that fails" "list-gpu-arch. failed" "mlops_nvcc_archs(s /bin/false)")
endif()

message(STATUS "arch_test: ${passed} checks passed (NVCC=${NVCC})")
