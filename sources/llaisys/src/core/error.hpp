// Exceptions used everywhere inside the library. The C API (src/api) turns
// them into llaisysStatus_t + a per-thread message, so nothing ever crosses
// the extern "C" boundary as a C++ exception.
#pragma once

#include "llaisys/llaisys.h"

#include <sstream>
#include <stdexcept>
#include <string>

namespace llaisys {

class Error : public std::runtime_error {
public:
    Error(llaisysStatus_t code, const std::string &msg)
        : std::runtime_error(msg), code_(code) {}
    llaisysStatus_t code() const noexcept { return code_; }

private:
    llaisysStatus_t code_;
};

// Builds a message from any streamable pieces: fail(code, "shape ", n, " bad").
template <typename... Args>
[[noreturn]] void fail(llaisysStatus_t code, const Args &...args) {
    std::ostringstream os;
    (os << ... << args);
    throw Error(code, os.str());
}

} // namespace llaisys

// Argument check that names the violated condition in the message.
#define LLAISYS_CHECK_ARG(cond, ...)                                              \
    do {                                                                          \
        if (!(cond))                                                              \
            ::llaisys::fail(LLAISYS_ERROR_INVALID_ARGUMENT, __VA_ARGS__,          \
                            " [check failed: " #cond "]");                        \
    } while (0)
