# Precompiled headers (GEMMAR_PCH). A clean build spends much of its time parsing the same third-party headers in
# every translation unit: nlohmann/json alone takes ~2 s per file and GoogleTest ~1.4 s, while the average file takes
# ~5 s in all (GCC 12, -O3, measured on the 2-core CI-sized machine). Each library precompiles them once; the test
# executables, one file each, share one precompiled header (REUSE_FROM the carrier target in tests/CMakeLists.txt).
# Every source still includes what it uses, so GEMMAR_PCH=OFF builds the same code.
# Default: ON with clang (the sanitizer and fuzz build), OFF with GCC: GCC 12 loses the system-header status of
# libstdc++'s headers when they come from a precompiled header, and its false positives there (-Wstringop-overflow
# and -Warray-bounds in std::string's inlined memcpy, GCC PR 105651) then fail a -Werror build.
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  set(gemmar_pch_default ON)
else()
  set(gemmar_pch_default OFF)
endif()
option(GEMMAR_PCH "Precompile nlohmann/json and GoogleTest once per target (default: ON with clang, OFF with GCC)"
       ${gemmar_pch_default})
set(GEMMAR_PCH_HEADERS <nlohmann/json.hpp>)

function(gemmar_precompile_headers target)
  if(GEMMAR_PCH)
    target_precompile_headers(${target} PRIVATE ${GEMMAR_PCH_HEADERS} ${ARGN})
  endif()
endfunction()
