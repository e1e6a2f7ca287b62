// Internal helpers shared by the algorithm translation units. Not installed.
//
// Unity-build rule for this tree: CMAKE_UNITY_BUILD concatenates several
// src/algorithms/*.cpp into one TU, so no algorithm TU may define anything
// at namespace scope that another TU also defines. Every algorithm therefore
// lives in its own namespace (libamm::algo_<name>), with no anonymous
// namespaces and no file-scope `static` helpers; the only names an algorithm
// TU exports are its factory below.
#pragma once

#include <libamm/amm.h>

#include <ATen/core/Generator.h>

#include <cstdint>

namespace libamm {
namespace detail {

// Factories, one per algorithm TU. They are called explicitly from the
// registry table in core.cpp (never via static initialisers): an object in a
// static archive that nobody references is dropped by the linker, and the
// order of static initialisation across TUs is unspecified.
AlgorithmPtr make_exact();
AlgorithmPtr make_crs();
AlgorithmPtr make_importance();
AlgorithmPtr make_count_sketch();
AlgorithmPtr make_random_projection();
AlgorithmPtr make_cooccurring_fd();
AlgorithmPtr make_block_lra();
AlgorithmPtr make_pq();

// CPU generator seeded with `seed`. Random draws are made on the CPU with this
// generator and then moved to A's device, so that results do not depend on
// the device's RNG implementation.
at::Generator make_generator(uint64_t seed);

// Clamp a requested size to [1, upper] (upper >= 1).
int64_t clamp_size(int64_t requested, int64_t upper);

// Integer-valued knob with range check; throws on non-integral values.
int64_t int_knob(const AmmParams& p, const std::string& name,
                 int64_t fallback, int64_t min_value);

}  // namespace detail
}  // namespace libamm
