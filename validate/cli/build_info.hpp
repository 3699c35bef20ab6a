// What this binary is: the version (CMake's project(VERSION)), the git commit it was built from ("unknown" outside
// a git checkout, e.g. from a source tarball) and the flags that change what it computes or where it runs.
// Generated per build from validate/cli/build_info.cpp.in (validate/CMakeLists.txt, cmake/build_info.cmake).
#pragma once

namespace gemmar::cli {

struct BuildInfo {
  const char* version;
  const char* commit;       // 12 hex digits, or "unknown"
  bool commit_dirty;        // tracked files differed from the commit when it was built
  const char* build_type;   // CMAKE_BUILD_TYPE
  const char* compiler;     // "GNU 12.2.0"
  const char* cxx_flags;    // CMAKE_CXX_FLAGS and the build type's flags
  const char* march;        // the CPU reference's -march= value; "" = the compiler's default
  const char* sanitizers;   // CMake list ("address;undefined"), "" = none
  const char* gpu_backend;  // "cuda", "hip" or "" (CPU-only build)
  const char* gpu_archs;    // CMake list of the device code's architectures
};

const BuildInfo& build_info();

}  // namespace gemmar::cli
