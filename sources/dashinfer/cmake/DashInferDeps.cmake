# Third-party dependencies: protobuf, glog, gtest (via Conan [platform_requires]
# these are the system packages, found by CMake's own modules / the packages'
# config files), OpenMP, and optionally CUDA (+cuBLAS, NCCL).
#
# DASHINFER_WITH_SYSTEM_DEPS=OFF skips protobuf/glog/gtest entirely (model
# files unavailable, logging shim, no gtest suites) for smoke builds on
# machines that lack them; dashinfer_selftest still runs.

if(DASHINFER_WITH_SYSTEM_DEPS)
  # --- protobuf: FindProtobuf (Debian ships no protobuf-config.cmake) or the
  # config package when present (Conan-built protobuf); both give
  # protobuf::libprotobuf, protobuf::protoc and protobuf_generate().
  find_package(Protobuf REQUIRED)
  if(NOT TARGET protobuf::libprotobuf)
    message(FATAL_ERROR "protobuf found but no protobuf::libprotobuf target")
  endif()
  message(STATUS "dashinfer: protobuf ${Protobuf_VERSION}")
  if(NOT DASHINFER_CXX11_ABI)
    # Fail at configure, not with pages of undefined std::string symbols at link.
    include(CheckCXXSourceCompiles)
    set(CMAKE_REQUIRED_DEFINITIONS -D_GLIBCXX_USE_CXX11_ABI=0)
    set(CMAKE_REQUIRED_LIBRARIES protobuf::libprotobuf)
    check_cxx_source_compiles([[
      #include <google/protobuf/stubs/common.h>
      int main() { return int(google::protobuf::internal::VersionString(3021000).size()); }
    ]] DASHINFER_PROTOBUF_OLD_ABI_OK)
    unset(CMAKE_REQUIRED_DEFINITIONS)
    unset(CMAKE_REQUIRED_LIBRARIES)
    if(NOT DASHINFER_PROTOBUF_OLD_ABI_OK)
      message(FATAL_ERROR "DASHINFER_CXX11_ABI=OFF, but this protobuf was built with the new "
                          "libstdc++ ABI (_GLIBCXX_USE_CXX11_ABI=1). Use old-ABI builds of "
                          "protobuf/glog/gtest (e.g. Conan with compiler.libcxx=libstdc++), "
                          "DASHINFER_CXX11_ABI=ON, or DASHINFER_WITH_SYSTEM_DEPS=OFF.")
    endif()
  endif()

  # --- glog: config package (glog >= 0.5, Debian 0.6 ships glog-config.cmake),
  # else pkg-config libglog, else a bare find_library.
  find_package(glog CONFIG QUIET)
  add_library(dashinfer_glog INTERFACE)
  if(TARGET glog::glog)
    target_link_libraries(dashinfer_glog INTERFACE glog::glog)
    message(STATUS "dashinfer: glog ${glog_VERSION} (config)")
  else()
    find_package(PkgConfig QUIET)
    if(PkgConfig_FOUND)
      pkg_check_modules(GLOG QUIET IMPORTED_TARGET libglog)
    endif()
    if(TARGET PkgConfig::GLOG)
      target_link_libraries(dashinfer_glog INTERFACE PkgConfig::GLOG)
      message(STATUS "dashinfer: glog ${GLOG_VERSION} (pkg-config)")
    else()
      find_library(GLOG_LIBRARY glog)
      find_path(GLOG_INCLUDE_DIR glog/logging.h)
      if(NOT GLOG_LIBRARY OR NOT GLOG_INCLUDE_DIR)
        message(FATAL_ERROR "glog not found (Debian: libgoogle-glog-dev); "
                            "or configure with -DDASHINFER_WITH_SYSTEM_DEPS=OFF")
      endif()
      target_include_directories(dashinfer_glog INTERFACE ${GLOG_INCLUDE_DIR})
      target_link_libraries(dashinfer_glog INTERFACE ${GLOG_LIBRARY})
      message(STATUS "dashinfer: glog ${GLOG_LIBRARY} (find_library)")
    endif()
  endif()

  if(BUILD_TESTING)
    find_package(GTest REQUIRED)  # GTest::gtest_main (config or FindGTest)
  endif()
endif()

# --- OpenMP for the CPU ops.
set(DASHINFER_HAVE_OPENMP 0)
if(DASHINFER_USE_OPENMP)
  find_package(OpenMP COMPONENTS CXX)
  if(OpenMP_CXX_FOUND)
    set(DASHINFER_HAVE_OPENMP 1)
  else()
    message(WARNING "OpenMP not found: CPU ops run single-threaded")
  endif()
endif()

# --- CUDA. Architectures: the caller's CMAKE_CUDA_ARCHITECTURES (e.g.
# "80;86;89;90a"), else env AS_CUDA_SM (DashInfer passes it quoted:
# "'80;86;89;90a'"), else CMake's default for the compiler.
set(DASHINFER_HAVE_CUBLAS 0)
set(DASHINFER_HAVE_NCCL 0)
set(DASHINFER_CUDA_ARCHS_INFO "")
if(DASHINFER_ENABLE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND DEFINED ENV{AS_CUDA_SM})
    string(REPLACE "'" "" _sm "$ENV{AS_CUDA_SM}")
    set(CMAKE_CUDA_ARCHITECTURES "${_sm}" CACHE STRING "CUDA architectures (from AS_CUDA_SM)")
  endif()
  enable_language(CUDA)
  set(CMAKE_CUDA_STANDARD 17)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  set(DASHINFER_CUDA_ARCHS_INFO "${CMAKE_CUDA_ARCHITECTURES}")
  if(DASHINFER_CUDA_VERSION AND NOT CUDAToolkit_VERSION VERSION_EQUAL DASHINFER_CUDA_VERSION
     AND NOT CUDAToolkit_VERSION MATCHES "^${DASHINFER_CUDA_VERSION}\\.")
    message(WARNING "DASHINFER_CUDA_VERSION=${DASHINFER_CUDA_VERSION} but found CUDA ${CUDAToolkit_VERSION}")
  endif()
  option(DASHINFER_USE_CUBLAS "Use cuBLAS for GEMM when available" ON)
  if(DASHINFER_USE_CUBLAS AND TARGET CUDA::cublas)
    set(DASHINFER_HAVE_CUBLAS 1)
  endif()
  message(STATUS "dashinfer: CUDA ${CUDAToolkit_VERSION}, archs '${CMAKE_CUDA_ARCHITECTURES}', "
                 "cuBLAS ${DASHINFER_HAVE_CUBLAS} (0: own GEMM kernels)")

  if(DASHINFER_ENABLE_NCCL)
    find_path(NCCL_INCLUDE_DIR nccl.h HINTS ${NCCL_ROOT} ENV NCCL_ROOT ENV NCCL_HOME
              ${CUDAToolkit_INCLUDE_DIRS} PATH_SUFFIXES include)
    find_library(NCCL_LIBRARY nccl HINTS ${NCCL_ROOT} ENV NCCL_ROOT ENV NCCL_HOME
                 ${CUDAToolkit_LIBRARY_DIR} PATH_SUFFIXES lib lib64)
    if(NOT NCCL_INCLUDE_DIR OR NOT NCCL_LIBRARY)
      message(FATAL_ERROR "DASHINFER_ENABLE_NCCL=ON but NCCL was not found (nccl.h / libnccl). "
                          "Install libnccl-dev (NVIDIA CUDA apt repo) or set NCCL_ROOT, "
                          "or configure with -DDASHINFER_ENABLE_NCCL=OFF.")
    endif()
    add_library(dashinfer_nccl INTERFACE)
    target_include_directories(dashinfer_nccl INTERFACE ${NCCL_INCLUDE_DIR})
    target_link_libraries(dashinfer_nccl INTERFACE ${NCCL_LIBRARY})
    set(DASHINFER_HAVE_NCCL 1)
    file(STRINGS "${NCCL_INCLUDE_DIR}/nccl.h" _nv REGEX "^#define NCCL_(MAJOR|MINOR|PATCH) ")
    string(REGEX REPLACE ".*NCCL_MAJOR ([0-9]+).*NCCL_MINOR ([0-9]+).*NCCL_PATCH ([0-9]+).*"
           "\\1.\\2.\\3" _nccl_ver "${_nv}")
    message(STATUS "dashinfer: NCCL ${_nccl_ver} (${NCCL_LIBRARY})")
    if(DASHINFER_NCCL_VERSION AND NOT _nccl_ver VERSION_EQUAL DASHINFER_NCCL_VERSION)
      message(WARNING "DASHINFER_NCCL_VERSION=${DASHINFER_NCCL_VERSION} but found NCCL ${_nccl_ver}")
    endif()
  endif()
elseif(DASHINFER_ENABLE_NCCL)
  message(WARNING "DASHINFER_ENABLE_NCCL=ON ignored: NCCL needs DASHINFER_ENABLE_CUDA=ON")
endif()
