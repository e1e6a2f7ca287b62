// Logging: glog when available (the normal build), otherwise a minimal
// stand-in with the same LOG/CHECK surface so that the engine still builds on
// machines without glog (DASHINFER_WITH_SYSTEM_DEPS=OFF, e.g. a bare GPU box).
#pragma once

#if DASHINFER_HAVE_GLOG
#include <glog/logging.h>
#else
#include <cstdlib>
#include <iostream>
#include <sstream>

namespace dashinfer {
namespace logshim {
// Streams one message to stderr; aborts on destruction for FATAL.
class Message {
 public:
  Message(const char* sev, const char* file, int line, bool fatal) : fatal_(fatal) {
    os_ << sev[0] << " " << file << ":" << line << "] ";
  }
  ~Message() {
    os_ << "\n";
    std::cerr << os_.str() << std::flush;
    if (fatal_) std::abort();
  }
  std::ostream& stream() { return os_; }

 private:
  bool fatal_;
  std::ostringstream os_;
};
struct Voidify {  // lets `cond ? (void)0 : Voidify() & stream` type-check
  void operator&(std::ostream&) {}
};
}  // namespace logshim
}  // namespace dashinfer

#define DI_SHIM_LOG_INFO ::dashinfer::logshim::Message("INFO", __FILE__, __LINE__, false)
#define DI_SHIM_LOG_WARNING ::dashinfer::logshim::Message("WARNING", __FILE__, __LINE__, false)
#define DI_SHIM_LOG_ERROR ::dashinfer::logshim::Message("ERROR", __FILE__, __LINE__, false)
#define DI_SHIM_LOG_FATAL ::dashinfer::logshim::Message("FATAL", __FILE__, __LINE__, true)
#define LOG(sev) DI_SHIM_LOG_##sev.stream()
#define CHECK(cond) \
  (cond) ? (void)0  \
         : ::dashinfer::logshim::Voidify() & LOG(FATAL) << "Check failed: " #cond " "
#define DI_SHIM_CHECK_OP(a, b, op) CHECK((a)op(b)) << "(" << (a) << " vs " << (b) << ") "
#define CHECK_EQ(a, b) DI_SHIM_CHECK_OP(a, b, ==)
#define CHECK_NE(a, b) DI_SHIM_CHECK_OP(a, b, !=)
#define CHECK_LT(a, b) DI_SHIM_CHECK_OP(a, b, <)
#define CHECK_LE(a, b) DI_SHIM_CHECK_OP(a, b, <=)
#define CHECK_GT(a, b) DI_SHIM_CHECK_OP(a, b, >)
#define CHECK_GE(a, b) DI_SHIM_CHECK_OP(a, b, >=)
#endif
