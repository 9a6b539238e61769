# mlops.cmake — the one helper every package's CMakeLists.txt calls.
#
# mlops_add_package(NAME <name> MIN_ARCH <sm> CUDA_SOURCES ... HOST_SOURCES ... BIND_SOURCES ... [C_TEST <file.c>])
#   Example: mlops_add_package(NAME norm MIN_ARCH 50 CUDA_SOURCES src/norm_launch.cu
#                              HOST_SOURCES src/norm_api.cpp BIND_SOURCES src/norm_bind.cpp)
#   -> static library libmlops_norm.a (target mlops_norm, alias and export mlops::norm) for the
#      archs of cmake/arch.cmake (MLOPS_CUDA_ARCHS, at least sm_<MIN_ARCH>);
#      -> the nanobind module mlops/norm/_C (when built by scikit-build-core, or -DMLOPS_PYTHON=ON);
#      -> install rules: component "c" (lib, headers incl. common/, CMake package, pkg-config
#         file mlops-norm.pc) and component "python" (the module, for the wheel).
#   find_package(mlops COMPONENTS norm) then gives mlops::norm to C and C++ consumers.
#   C_TEST: a plain C test program, built and registered with ctest when -DMLOPS_BUILD_TESTS=ON
#   (executable test_<name>_c).
include_guard(GLOBAL)
# lib/, not lib/<multiarch>: the pkg-config file and the archives assume one layout everywhere
set(CMAKE_INSTALL_LIBDIR lib CACHE PATH "" FORCE)
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(MLOPS_CMAKE_DIR "${CMAKE_CURRENT_LIST_DIR}")
# packages/common travels inside an sdist as common/ (tools/sdist.py); in the tree it is ../packages/common
if(EXISTS "${MLOPS_CMAKE_DIR}/../packages/common/include")
  set(MLOPS_COMMON_INCLUDE "${MLOPS_CMAKE_DIR}/../packages/common/include")
else()
  set(MLOPS_COMMON_INCLUDE "${MLOPS_CMAKE_DIR}/../common/include")
endif()
get_filename_component(MLOPS_COMMON_INCLUDE "${MLOPS_COMMON_INCLUDE}" ABSOLUTE)

# scikit-build-core sets SKBUILD (to 2); a plain CMake build opts in with -DMLOPS_PYTHON=ON
if(SKBUILD)
  set(MLOPS_PYTHON ON)
endif()
option(MLOPS_PYTHON "Build the nanobind module" OFF)
option(MLOPS_BUILD_TESTS "Build the packages' C tests (ctest)" OFF)
if(MLOPS_BUILD_TESTS)
  enable_testing()  # at directory scope: inside a function it generates no CTestTestfile
endif()

# mlops_package_version(<out_var> <pyproject.toml>): the version = "X.Y.Z" line of the
# package's pyproject, the one place a package's version is written.
#   Example: mlops_package_version(v ${CMAKE_CURRENT_SOURCE_DIR}/pyproject.toml) -> v = 0.1.0
function(mlops_package_version out pyproject)
  file(STRINGS "${pyproject}" line REGEX "^version = \"[^\"]+\"")
  string(REGEX REPLACE "^version = \"([^\"]+)\".*" "\\1" v "${line}")
  set(${out} "${v}" PARENT_SCOPE)
endfunction()

function(mlops_add_package)
  cmake_parse_arguments(A "" "NAME;MIN_ARCH;C_TEST" "CUDA_SOURCES;HOST_SOURCES;BIND_SOURCES" ${ARGN})
  set(lib mlops_${A_NAME})
  find_package(CUDAToolkit REQUIRED)

  add_library(${lib} STATIC ${A_CUDA_SOURCES} ${A_HOST_SOURCES})
  add_library(mlops::${A_NAME} ALIAS ${lib})
  mlops_cuda_archs_for(archs MIN ${A_MIN_ARCH})
  message(STATUS "mlops-${A_NAME}: CUDA architectures ${archs} (nvcc ${CMAKE_CUDA_COMPILER_VERSION})")
  set_target_properties(${lib} PROPERTIES
    CUDA_ARCHITECTURES "${archs}"
    OUTPUT_NAME mlops_${A_NAME}
    EXPORT_NAME ${A_NAME}
    POSITION_INDEPENDENT_CODE ON
    CXX_STANDARD 17 CUDA_STANDARD 17
    CXX_VISIBILITY_PRESET hidden CUDA_VISIBILITY_PRESET hidden)
  target_include_directories(${lib}
    PUBLIC $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
           $<BUILD_INTERFACE:${MLOPS_COMMON_INCLUDE}>
           $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  # Reproducibility: no contraction of a*b+c that the source did not write as fmaf, on either
  # side (nvcc contracts by default, gcc does with -mfma / -march=native).
  mlops_cuda_quirk_flags(quirks)
  target_compile_options(${lib} PRIVATE
    $<$<COMPILE_LANGUAGE:CUDA>:-fmad=false>
    $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>
    ${quirks})
  # C consumers link with the C driver: name what the C++ and CUDA runtime objects need.
  target_link_libraries(${lib} PUBLIC CUDA::cudart_static INTERFACE stdc++ m)

  # --- C / C++ consumers -----------------------------------------------------------------
  mlops_package_version(version "${CMAKE_CURRENT_SOURCE_DIR}/pyproject.toml")
  install(TARGETS ${lib} EXPORT mlops-${A_NAME}-targets
          ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT c)
  install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT c)
  # mlops/common/testing/: the test programs' helpers (CHECK), not part of the installed API
  install(DIRECTORY ${MLOPS_COMMON_INCLUDE}/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT c
          PATTERN "testing" EXCLUDE)
  install(EXPORT mlops-${A_NAME}-targets NAMESPACE mlops::
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlops COMPONENT c)
  configure_package_config_file(${MLOPS_CMAKE_DIR}/mlopsConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/mlopsConfig.cmake
    INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlops)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mlopsConfig.cmake
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/mlops COMPONENT c)
  set(MLOPS_PC_NAME ${A_NAME})
  set(MLOPS_PC_VERSION ${version})
  set(MLOPS_PC_CUDA_LIBDIR "${CUDAToolkit_LIBRARY_DIR}")
  configure_file(${MLOPS_CMAKE_DIR}/mlops.pc.in ${CMAKE_CURRENT_BINARY_DIR}/mlops-${A_NAME}.pc @ONLY)
  install(FILES ${CMAKE_CURRENT_BINARY_DIR}/mlops-${A_NAME}.pc
          DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT c)

  # --- the C test (ctest) ------------------------------------------------------------------
  if(MLOPS_BUILD_TESTS AND A_C_TEST)
    add_executable(test_${A_NAME}_c ${A_C_TEST})
    target_link_libraries(test_${A_NAME}_c PRIVATE ${lib})
    add_test(NAME test_${A_NAME}_c COMMAND test_${A_NAME}_c)
  endif()

  # --- Python -----------------------------------------------------------------------------
  if(MLOPS_PYTHON)
    find_package(Python 3.9 REQUIRED COMPONENTS Interpreter Development.Module ${SKBUILD_SABI_COMPONENT})
    if(NOT nanobind_DIR)
      execute_process(COMMAND "${Python_EXECUTABLE}" -m nanobind --cmake_dir
                      OUTPUT_STRIP_TRAILING_WHITESPACE OUTPUT_VARIABLE nanobind_DIR)
    endif()
    find_package(nanobind CONFIG REQUIRED)
    # Bindings are .cpp files (no nanobind header goes through nvcc: faster, no #186 warnings).
    nanobind_add_module(_C NB_STATIC ${A_BIND_SOURCES})
    target_link_libraries(_C PRIVATE ${lib})
    set_target_properties(_C PROPERTIES CXX_STANDARD 17)
    install(TARGETS _C LIBRARY DESTINATION mlops/${A_NAME} COMPONENT python)
  endif()
endfunction()
