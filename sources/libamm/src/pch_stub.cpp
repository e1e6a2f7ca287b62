// Owner TU of the shared precompiled header (LIBAMM_PCH=ON). CMake compiles
// cmake_pch.hxx.gch (<torch/torch.h>) for this target; libamm, _libamm and the
// tests reuse it with target_precompile_headers(REUSE_FROM libamm_pch).
// The file itself only has to exist.
namespace libamm {
namespace pch_stub {
int libamm_pch_anchor() { return 0; }
}  // namespace pch_stub
}  // namespace libamm
