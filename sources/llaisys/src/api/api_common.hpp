// Shared pieces of the extern "C" layer: the tensor handle and the wrapper that
// turns C++ exceptions into a status code plus a per-thread message.
#pragma once

#include "../core/tensor.hpp"
#include "llaisys/tensor.h"

#include <new>
#include <string>

struct LlaisysTensor {
    llaisys::Tensor t;
};

namespace llaisys::api {

llaisysStatus_t setLastError(llaisysStatus_t code, const std::string &msg);

// Runs fn(); any exception becomes a status + llaisysGetLastError() text.
template <typename Fn> llaisysStatus_t guarded(const char *fn_name, Fn &&fn) noexcept {
    try {
        fn();
        return LLAISYS_OK;
    } catch (const Error &e) {
        return setLastError(e.code(), std::string(fn_name) + ": " + e.what());
    } catch (const std::bad_alloc &) {
        return setLastError(LLAISYS_ERROR_OUT_OF_MEMORY, std::string(fn_name) + ": host out of memory");
    } catch (const std::exception &e) {
        return setLastError(LLAISYS_ERROR_INTERNAL, std::string(fn_name) + ": " + e.what());
    } catch (...) {
        return setLastError(LLAISYS_ERROR_INTERNAL, std::string(fn_name) + ": unknown exception");
    }
}

inline Tensor &deref(llaisysTensor_t t, const char *what) {
    if (!t) fail(LLAISYS_ERROR_INVALID_ARGUMENT, "null tensor handle for ", what);
    return t->t;
}

template <typename P> P *checkOut(P *p, const char *what) {
    if (!p) fail(LLAISYS_ERROR_INVALID_ARGUMENT, "null output pointer ", what);
    return p;
}

} // namespace llaisys::api
