// extern "C" operator entry points.
#include "../ops/ops.hpp"
#include "api_common.hpp"
#include "llaisys/ops.h"

#ifdef LLAISYS_ENABLE_CUDA
#include "../ops/kernels.hpp"
#endif

using namespace llaisys;
using llaisys::api::deref;
using llaisys::api::guarded;

extern "C" {

const char *llaisysLinearLastBackend(void) {
#ifdef LLAISYS_ENABLE_CUDA
    return nvidia::lastLinearBackend();
#else
    return "none";
#endif
}

llaisysStatus_t llaisysAdd(llaisysTensor_t c, llaisysTensor_t a, llaisysTensor_t b) {
    return guarded(__func__, [&] { ops::add(deref(c, "c"), deref(a, "a"), deref(b, "b")); });
}
llaisysStatus_t llaisysArgmax(llaisysTensor_t max_idx, llaisysTensor_t max_val, llaisysTensor_t vals) {
    return guarded(__func__, [&] {
        ops::argmax(deref(max_idx, "max_idx"), deref(max_val, "max_val"), deref(vals, "vals"));
    });
}
llaisysStatus_t llaisysEmbedding(llaisysTensor_t out, llaisysTensor_t index, llaisysTensor_t weight) {
    return guarded(__func__, [&] { ops::embedding(deref(out, "out"), deref(index, "index"), deref(weight, "weight")); });
}
llaisysStatus_t llaisysLinear(llaisysTensor_t out, llaisysTensor_t in, llaisysTensor_t weight, llaisysTensor_t bias) {
    return guarded(__func__, [&] {
        ops::linear(deref(out, "out"), deref(in, "in"), deref(weight, "weight"), bias ? &bias->t : nullptr);
    });
}
llaisysStatus_t llaisysRmsNorm(llaisysTensor_t out, llaisysTensor_t in, llaisysTensor_t weight, float eps) {
    return guarded(__func__, [&] { ops::rmsNorm(deref(out, "out"), deref(in, "in"), deref(weight, "weight"), eps); });
}
llaisysStatus_t llaisysRoPE(llaisysTensor_t out, llaisysTensor_t in, llaisysTensor_t pos_ids, float theta) {
    return guarded(__func__, [&] { ops::rope(deref(out, "out"), deref(in, "in"), deref(pos_ids, "pos_ids"), theta); });
}
llaisysStatus_t llaisysSelfAttention(llaisysTensor_t out, llaisysTensor_t q, llaisysTensor_t k, llaisysTensor_t v,
                                     float scale) {
    return guarded(__func__, [&] {
        ops::selfAttention(deref(out, "out"), deref(q, "q"), deref(k, "k"), deref(v, "v"), scale);
    });
}
llaisysStatus_t llaisysSwiGLU(llaisysTensor_t out, llaisysTensor_t gate, llaisysTensor_t up) {
    return guarded(__func__, [&] { ops::swiglu(deref(out, "out"), deref(gate, "gate"), deref(up, "up")); });
}

} // extern "C"
