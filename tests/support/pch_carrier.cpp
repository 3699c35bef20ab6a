// Compiles nothing of its own: its target builds the precompiled header the test executables reuse
// (tests/CMakeLists.txt, cmake/pch.cmake).
