# mlops CUDA architectures: which SASS/PTX targets a build gets, asked from the nvcc in use.
#
# mlops supports Maxwell .. Hopper: sm_50 52 53 60 61 62 70 72 75 80 86 87 89 90. No single nvcc
# covers that range (notes/toolchains.md §1.2): 11.8 and 12.4 build 50..90 (11.8 also lists 35 and
# 37, outside the mlops list), 13.x only 75..121. So the list below is intersected with what
# `nvcc --list-gpu-arch` reports, never with hard-coded versions.
#
# Usage (the order matters, see mlops_cuda_preproject):
#   include(cmake/arch.cmake)
#   mlops_cuda_preproject()                 # before project(): a compiler check every nvcc passes
#   project(foo LANGUAGES CXX CUDA)
#   mlops_cuda_archs_for(archs MIN 61)      # honours -DMLOPS_CUDA_ARCHS=... / env MLOPS_CUDA_ARCHS
#   set_target_properties(k PROPERTIES CUDA_ARCHITECTURES "${archs}")
#   mlops_cuda_quirk_flags(quirks)
#   target_compile_options(k PRIVATE ${quirks})
#
# Needs CMake >= 3.18 (list(SORT ... COMPARE NATURAL), cmake_language); tested with 3.25 and 4.4.
include_guard(GLOBAL)

# The mlops arch list (SASS targets of a default build). A global property, so that functions see it
# from any directory scope.
set_property(GLOBAL PROPERTY MLOPS_CUDA_ARCH_LIST 50 52 53 60 61 62 70 72 75 80 86 87 89 90)

#
# Ask `NVCC` which virtual architectures it can compile for (`nvcc --list-gpu-arch`) and store the
# numbers, ascending, in `OUT`. The `a`/`f` variants (compute_90a, compute_100f) fold into their
# number. The answer is cached in a CACHE INTERNAL variable keyed by the nvcc path (and refreshed if
# the file's mtime changes), so it costs one nvcc call per build dir.
#
# Example:
#   mlops_nvcc_archs(out /opt/cuda-12.4/bin/nvcc)
#     out="50;52;53;60;61;62;70;72;75;80;86;87;89;90"
#   mlops_nvcc_archs(out /opt/cuda-11.8/bin/nvcc)             # 11.8.89
#     out="35;37;50;52;53;60;61;62;70;72;75;80;86;87;89;90"
#   mlops_nvcc_archs(out .../nvidia/cu13/bin/nvcc)            # 13.0.2 wheel
#     out="75;80;86;87;88;89;90;100;103;110;120;121"
#
function(mlops_nvcc_archs OUT NVCC)
  string(MAKE_C_IDENTIFIER "MLOPS_NVCC_ARCHS_${NVCC}" var)
  file(TIMESTAMP "${NVCC}" stamp "%s" UTC)
  if(DEFINED CACHE{${var}} AND "$CACHE{${var}_STAMP}" STREQUAL "${stamp}")
    set(${OUT} "$CACHE{${var}}" PARENT_SCOPE)
    return()
  endif()
  execute_process(COMMAND "${NVCC}" --list-gpu-arch
                  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
  string(REGEX MATCHALL "compute_[0-9]+" found "${out}")   # compute_90a -> compute_90
  list(TRANSFORM found REPLACE "^compute_" "")
  list(REMOVE_DUPLICATES found)
  list(SORT found COMPARE NATURAL)                          # 13.0 prints 110 before 103
  if(NOT rc EQUAL 0 OR NOT found)
    message(FATAL_ERROR "mlops: `${NVCC} --list-gpu-arch` failed (rc ${rc}): ${out}${err}")
  endif()
  set(${var} "${found}" CACHE INTERNAL "compute_XX numbers ${NVCC} supports")
  set(${var}_STAMP "${stamp}" CACHE INTERNAL "mtime of ${NVCC} when asked")
  set(${OUT} "${found}" PARENT_SCOPE)
endfunction()

#
# Turn an arch spec into a CUDA_ARCHITECTURES list, keeping only what nvcc supports (`SUPPORTED`,
# numbers as from mlops_nvcc_archs) and what the code needs (`MIN`, e.g. 61 for attention). Pure:
# no nvcc call, testable with `cmake -P`.
#   SPEC "" or "all": every mlops arch that is supported and >= MIN as `NN-real`, plus
#                     `HH-virtual` for the highest one (PTX, JIT-compiled on future GPUs).
#   SPEC "native":    `native` (CMake asks the GPU; fails on a machine without one).
#   otherwise:        a ;- or ,-separated list of `NN`, `NN-real`, `NN-virtual`, `sm_NN` (= NN-real)
#                     or `compute_NN` (= NN-virtual); NN may carry an a/f suffix (90a), checked by
#                     its number only (12.4 lists no compute_90a yet builds sm_90a). An entry that
#                     is unsupported or below MIN is dropped with a STATUS message; arches outside
#                     the mlops list are kept when asked for explicitly.
# An empty result is a FATAL_ERROR naming the spec, MIN and the supported list.
#
# Example:
#   SPEC=""                         MIN=61 SUPPORTED="75;80;86;87;88;89;90;100;103;110;120;121"
#     OUT="75-real;80-real;86-real;87-real;89-real;90-real;90-virtual"
#   SPEC="sm_50,61-real,compute_90" MIN=61 SUPPORTED="50;52;...;90"
#     OUT="61-real;90-virtual"      (50 dropped: below MIN)
#   SPEC="61-virtual"               MIN=0  SUPPORTED="75;...;121"        -> FATAL_ERROR
#
function(mlops_resolve_archs OUT)
  # SPEC is a multi-value keyword so that a ;-list passed unquoted or quoted stays whole.
  cmake_parse_arguments(arg "" "MIN" "SPEC;SUPPORTED" ${ARGN})
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "mlops_resolve_archs: unexpected arguments ${arg_UNPARSED_ARGUMENTS}")
  endif()
  if(NOT DEFINED arg_MIN OR arg_MIN STREQUAL "")
    set(arg_MIN 0)
  endif()
  string(REPLACE "," ";" items "${arg_SPEC}")
  set(spec)
  foreach(e IN LISTS items)
    string(STRIP "${e}" e)
    string(TOLOWER "${e}" e)
    if(NOT e STREQUAL "")
      list(APPEND spec "${e}")
    endif()
  endforeach()
  string(REPLACE ";" "," spec_text "${spec}")   # for messages

  set(result)
  if("${spec}" STREQUAL "native")
    set(result native)
  elseif("${spec}" STREQUAL "" OR "${spec}" STREQUAL "all")
    get_property(mlops_list GLOBAL PROPERTY MLOPS_CUDA_ARCH_LIST)
    set(highest)
    foreach(n IN LISTS mlops_list)
      if(n IN_LIST arg_SUPPORTED AND n GREATER_EQUAL arg_MIN)
        list(APPEND result "${n}-real")
        set(highest ${n})
      endif()
    endforeach()
    if(highest)
      list(APPEND result "${highest}-virtual")
    endif()
  else()
    foreach(e IN LISTS spec)
      if(NOT e MATCHES "^(sm_|compute_)?([0-9]+)([af]?)(-real|-virtual)?$")
        message(FATAL_ERROR "mlops: cannot parse CUDA arch '${e}' in '${spec_text}'; want NN, "
                            "NN-real, NN-virtual, sm_NN or compute_NN (NN may end in a or f)")
      endif()
      set(prefix "${CMAKE_MATCH_1}")
      set(n "${CMAKE_MATCH_2}")
      set(kind "${CMAKE_MATCH_4}")
      if(prefix STREQUAL "sm_")
        if(kind STREQUAL "-virtual")
          message(FATAL_ERROR "mlops: '${e}': sm_ is SASS, -virtual is PTX")
        endif()
        set(kind "-real")
      elseif(prefix STREQUAL "compute_")
        if(kind STREQUAL "-real")
          message(FATAL_ERROR "mlops: '${e}': compute_ is PTX, -real is SASS")
        endif()
        set(kind "-virtual")
      endif()
      if(NOT n IN_LIST arg_SUPPORTED)
        message(STATUS "mlops: dropping CUDA arch ${e}: nvcc does not support compute_${n} "
                       "(it supports ${arg_SUPPORTED})")
      elseif(n LESS arg_MIN)
        message(STATUS "mlops: dropping CUDA arch ${e}: below the minimum ${arg_MIN} of this target")
      else()
        list(APPEND result "${n}${CMAKE_MATCH_3}${kind}")
      endif()
    endforeach()
    list(REMOVE_DUPLICATES result)
  endif()
  if(NOT result)
    message(FATAL_ERROR "mlops: no CUDA architecture left: spec '${spec_text}' (empty = all mlops "
                        "archs), MIN ${arg_MIN}, nvcc supports '${arg_SUPPORTED}'. Use another "
                        "nvcc (tools/cuda_toolkit.py 12.4 builds sm_50..sm_90) or change "
                        "MLOPS_CUDA_ARCHS.")
  endif()
  set(${OUT} "${result}" PARENT_SCOPE)
endfunction()

#
# The CUDA_ARCHITECTURES for a target that needs at least sm_`MIN`, for ${CMAKE_CUDA_COMPILER}
# (so: after project(... CUDA) or enable_language(CUDA)). The spec is the variable
# MLOPS_CUDA_ARCHS (cache or normal, e.g. -DMLOPS_CUDA_ARCHS=...) when non-empty, else the
# environment variable MLOPS_CUDA_ARCHS, else "" (all mlops archs); see mlops_resolve_archs.
#
# Example (nvcc 13.0, MLOPS_CUDA_ARCHS unset):
#   mlops_cuda_archs_for(archs MIN 61)
#     archs="75-real;80-real;86-real;87-real;89-real;90-real;90-virtual"
# Example (nvcc 12.4, MLOPS_CUDA_ARCHS="50-real;61-real;90-real;90-virtual"):
#   mlops_cuda_archs_for(archs MIN 61)
#     archs="61-real;90-real;90-virtual"
#
function(mlops_cuda_archs_for OUT)
  cmake_parse_arguments(arg "" "MIN" "" ${ARGN})
  if(NOT CMAKE_CUDA_COMPILER)
    message(FATAL_ERROR "mlops_cuda_archs_for: no CMAKE_CUDA_COMPILER; call it after "
                        "project(... CUDA) or enable_language(CUDA)")
  endif()
  if(NOT "${MLOPS_CUDA_ARCHS}" STREQUAL "")
    set(spec "${MLOPS_CUDA_ARCHS}")
  else()
    set(spec "$ENV{MLOPS_CUDA_ARCHS}")
  endif()
  mlops_nvcc_archs(supported "${CMAKE_CUDA_COMPILER}")
  mlops_resolve_archs(result SPEC ${spec} MIN ${arg_MIN} SUPPORTED ${supported})
  # say it once per (spec, MIN) and not for every target
  get_property(said GLOBAL PROPERTY _MLOPS_CUDA_ARCHS_SAID)
  string(MD5 key "${spec}|${arg_MIN}")
  if(NOT key IN_LIST said)
    set_property(GLOBAL APPEND PROPERTY _MLOPS_CUDA_ARCHS_SAID "${key}")
    message(STATUS "mlops: nvcc ${CMAKE_CUDA_COMPILER_VERSION}, MLOPS_CUDA_ARCHS='${spec}', "
                   "MIN ${arg_MIN}: CUDA_ARCHITECTURES ${result}")
  endif()
  set(${OUT} "${result}" PARENT_SCOPE)
endfunction()

#
# Call before project(): CMake's compiler check compiles for CMAKE_CUDA_ARCHITECTURES (also when
# taken from the CUDAARCHS environment variable), so an arch the nvcc lacks fails configure with
# "Check for working CUDA compiler ... - broken" (e.g. 50 with 13.0, notes §2.3). When unset, this
# sets it to 75, which every nvcc mlops uses has (11.8, 12.4, 13.0, 13.5), and so also overrides
# CUDAARCHS; ask for archs through MLOPS_CUDA_ARCHS instead. Targets then get their real list
# from mlops_cuda_archs_for via set_target_properties(... CUDA_ARCHITECTURES ...).
# (A macro: it sets the variable in the caller's scope.)
#
# Example:
#   mlops_cuda_preproject()   # CMAKE_CUDA_ARCHITECTURES unset -> "75"; already set -> unchanged
#
macro(mlops_cuda_preproject)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 75)
  endif()
endmacro()

#
# nvcc-version quirk flags for CUDA compiles, each wrapped in $<$<COMPILE_LANGUAGE:CUDA>:...> for
# target_compile_options(). Needs CMAKE_CUDA_COMPILER_VERSION (after project). Every flag below was
# checked with the real nvcc 12.4.131 and 13.0.88 (tools/cuda_toolkit.py); 11.8.89 takes 12.4's
# (cmake/tests/test_arch.py builds a nanobind .cu with each and finds no warning).
#
# Example:
#   nvcc 11.8, 12.4: OUT="$<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=186>;$<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wno-attributes>"
#   nvcc 13.0: OUT="$<$<COMPILE_LANGUAGE:CUDA>:-diag-suppress=186>;$<$<COMPILE_LANGUAGE:CUDA>:-diag-error=20280>"
#
# Not flags, but notes for the same versions:
# - 12.8+ has -static-global-template-stub; 13.0 turns it on by default: the host stub of a
#   __global__ template is static to its object. So launch a kernel template only from the .cu that
#   defines/instantiates it (e.g. behind a non-template host function); a launch from another .cu
#   warns #20280 and fails to link ("undefined reference to void fill<float>(...)"). 12.4 has no
#   such flag (weak stubs, the cross-TU launch links). Defaults of 12.8/12.9 were not checked.
# - -Wno-deprecated-gpu-targets is not needed: 11.8 and 12.4 print no deprecation warning for
#   sm_50..sm_72 (11.8 warns for sm_35 / sm_37 only, outside the mlops list) and 13.0 cannot build
#   them at all. (12.8/12.9 may warn; no such nvcc was available.)
#
function(mlops_cuda_quirk_flags OUT)
  if(NOT CMAKE_CUDA_COMPILER_VERSION)
    message(FATAL_ERROR "mlops_cuda_quirk_flags: no CMAKE_CUDA_COMPILER_VERSION; call it after "
                        "project(... CUDA)")
  endif()
  set(flags)
  # 12.4, 13.0: nanobind/nb_func.h(49): warning #186-D: pointless comparison of unsigned integer
  # with zero (any .cu that includes nanobind). Making nanobind's headers SYSTEM also works.
  list(APPEND flags -diag-suppress=186)
  if(CMAKE_CUDA_COMPILER_VERSION VERSION_LESS 13.0)
    # 12.4: cudafe++'s host output makes g++ warn "declaration of 'nanobind::detail::
    # raise_python_error()' with attribute 'noinline' follows inline declaration [-Wattributes]"
    # (3x per nanobind .cu); 13.0's output does not.
    list(APPEND flags -Xcompiler=-Wno-attributes)
  else()
    # 13.0: promote #20280 (kernel template launched in a TU that does not define it, see the note
    # above) from a warning + obscure link error to a compile error. 12.4 rejects this flag
    # ("invalid error number in diagnostic control option: 20280").
    list(APPEND flags -diag-error=20280)
  endif()
  list(TRANSFORM flags REPLACE "^(.+)$" "$<$<COMPILE_LANGUAGE:CUDA>:\\1>")
  set(${OUT} "${flags}" PARENT_SCOPE)
endfunction()
