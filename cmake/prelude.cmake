# prelude.cmake — what every package's CMakeLists.txt runs before its project() (which CMake wants
# written in the top-level file itself, so it stays there):
#   cmake_minimum_required(VERSION 3.25)
#   find_path(MLOPS_CMAKE prelude.cmake PATHS ... NO_DEFAULT_PATH NO_CACHE REQUIRED)  # this folder
#   include(${MLOPS_CMAKE}/prelude.cmake)
#   project(mlops_<name> LANGUAGES C CXX CUDA)
#   include(${MLOPS_CMAKE}/mlops.cmake)
# The CUDA compiler check's architecture (arch.cmake, mlops_cuda_preproject) must be set before project().
include(${CMAKE_CURRENT_LIST_DIR}/arch.cmake)
mlops_cuda_preproject()
