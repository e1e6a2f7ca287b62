# Build knobs that map DashInfer's AS_* environment variables onto CMake cache
# variables (the build tool sets these from recipe options):
#   AS_PLATFORM        -> DASHINFER_PLATFORM        AS_RELEASE_VERSION -> DASHINFER_RELEASE_VERSION
#   AS_CUDA_SM         -> CMAKE_CUDA_ARCHITECTURES  AS_CUDA_VERSION    -> DASHINFER_CUDA_VERSION
#   AS_NCCL_VERSION    -> DASHINFER_NCCL_VERSION    ENABLE_MULTINUMA   -> DASHINFER_ENABLE_MULTINUMA
#   AS_CXX11_ABI       -> DASHINFER_CXX11_ABI       AS_PROFILE (build) -> DASHINFER_PROFILE

set(DASHINFER_PLATFORM "x86" CACHE STRING "Target platform, informational: x86|arm|cuda|macos")
set_property(CACHE DASHINFER_PLATFORM PROPERTY STRINGS x86 arm cuda macos)
if(NOT DASHINFER_PLATFORM MATCHES "^(x86|arm|cuda|macos)$")
  message(FATAL_ERROR "DASHINFER_PLATFORM='${DASHINFER_PLATFORM}': expected x86, arm, cuda or macos")
endif()
if(DASHINFER_PLATFORM STREQUAL "cuda" AND NOT DASHINFER_ENABLE_CUDA)
  message(WARNING "DASHINFER_PLATFORM=cuda but DASHINFER_ENABLE_CUDA=OFF: building the CPU engine only")
endif()

set(DASHINFER_RELEASE_VERSION "${PROJECT_VERSION}" CACHE STRING "Version string compiled into dashinfer::Version()")
set(DASHINFER_CUDA_VERSION "" CACHE STRING "Expected CUDA toolkit major.minor (warn on mismatch; empty: any)")
set(DASHINFER_NCCL_VERSION "" CACHE STRING "Expected NCCL version (warn on mismatch; empty: any)")

# --- Sanitizers: flags on compile AND link of every target (incl. the CUDA
# host compiler through -Xcompiler). Set before any target is created.
set(DASHINFER_SANITIZER "none" CACHE STRING "none|asan|tsan")
set_property(CACHE DASHINFER_SANITIZER PROPERTY STRINGS none asan tsan)
if(DASHINFER_SANITIZER STREQUAL "asan")
  set(_san -fsanitize=address -fno-omit-frame-pointer)
elseif(DASHINFER_SANITIZER STREQUAL "tsan")
  set(_san -fsanitize=thread -fno-omit-frame-pointer)
  # libgomp is not TSan-instrumented: its barriers are invisible to TSan and
  # every parallel region reports false races. Run the CPU ops serially.
  if(DASHINFER_USE_OPENMP)
    message(STATUS "dashinfer: DASHINFER_SANITIZER=tsan turns OpenMP off (libgomp false positives)")
    set(DASHINFER_USE_OPENMP OFF)  # normal variable: shadows the cache entry for this configure only
  endif()
elseif(NOT DASHINFER_SANITIZER STREQUAL "none")
  message(FATAL_ERROR "DASHINFER_SANITIZER='${DASHINFER_SANITIZER}': expected none, asan or tsan")
endif()
if(_san)
  foreach(_f IN LISTS _san)
    add_compile_options($<$<COMPILE_LANGUAGE:C,CXX>:${_f}> $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=${_f}>)
  endforeach()
  add_link_options(${_san})
endif()

# --- libstdc++ dual ABI, on every target. Only OFF (=0) when all C++ deps
# were built with the old ABI too (DashInfer's CentOS 7 / manylinux2014 Conan
# builds); Debian's protobuf/glog/gtest use the new ABI and would not link.
option(DASHINFER_CXX11_ABI "Compile with -D_GLIBCXX_USE_CXX11_ABI=1 (ON) or 0 (OFF)" ON)
if(DASHINFER_CXX11_ABI)
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=1)
else()
  add_compile_definitions(_GLIBCXX_USE_CXX11_ABI=0)  # DashInferDeps.cmake checks protobuf agrees
endif()

# --- Multi-NUMA CPU inference: numa + MPI, or a configure error that says
# exactly which Debian packages to install.
option(DASHINFER_ENABLE_MULTINUMA "Multi-NUMA CPU inference (needs libnuma + MPI)" OFF)
set(DASHINFER_MULTINUMA_LIBS "")
if(DASHINFER_ENABLE_MULTINUMA)
  find_library(NUMA_LIBRARY numa)
  find_path(NUMA_INCLUDE_DIR numa.h)
  find_package(MPI COMPONENTS CXX)
  set(_missing "")
  if(NOT NUMA_LIBRARY OR NOT NUMA_INCLUDE_DIR)
    list(APPEND _missing "libnuma (Debian/Ubuntu: apt-get install libnuma-dev, CentOS: numactl-devel)")
  endif()
  if(NOT MPI_CXX_FOUND)
    list(APPEND _missing "MPI (Debian/Ubuntu: apt-get install libopenmpi-dev, CentOS: openmpi-devel)")
  endif()
  if(_missing)
    list(JOIN _missing "\n  - " _m)
    message(FATAL_ERROR "DASHINFER_ENABLE_MULTINUMA=ON but missing:\n  - ${_m}\n"
                        "Install them or configure with -DDASHINFER_ENABLE_MULTINUMA=OFF.")
  endif()
  add_library(dashinfer_numa INTERFACE)
  target_include_directories(dashinfer_numa INTERFACE ${NUMA_INCLUDE_DIR})
  target_link_libraries(dashinfer_numa INTERFACE ${NUMA_LIBRARY} MPI::MPI_CXX)
  set(DASHINFER_MULTINUMA_LIBS dashinfer_numa)
  message(STATUS "dashinfer: multi-NUMA on (numa: ${NUMA_LIBRARY}, MPI ${MPI_CXX_VERSION})")
endif()
