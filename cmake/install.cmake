# cmake --install BUILD --prefix P: P/bin/gemmar and its data under P/share/gemmar (GEMMAR_INSTALL_DATADIR):
#   reports/   the report package and its runner (gemmar report, gemmar validate)
#   python/    every python/*.py: gemmar_dump.py and the others, for PYTHONPATH=P/share/gemmar/python
#   profiles/  the hardware profiles; `--profile NAME` reads the copies embedded in the binary (model/CMakeLists.txt),
#              these are for reading and for editing into a `--profile FILE`
# Only gemmar must be built (the GPU bench is installed when it was built): no rule depends on the tests.
install(TARGETS gemmar RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET gemmar_gpu_bench)
  # OPTIONAL: a GPU build may have built gemmar alone.
  install(TARGETS gemmar_gpu_bench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR} OPTIONAL)
endif()
# Directories are globbed at install time, so a module added to python/ later is installed without a CMake edit.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/reports/ DESTINATION ${GEMMAR_INSTALL_DATADIR}/reports
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/ DESTINATION ${GEMMAR_INSTALL_DATADIR}/python
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/model/profiles/ DESTINATION ${GEMMAR_INSTALL_DATADIR}/profiles
        FILES_MATCHING PATTERN "*.json")
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR}/docs
        FILES_MATCHING PATTERN "*.md" PATTERN "results" EXCLUDE PATTERN "img" EXCLUDE)

# The build tree's data directory: links into the source tree where the build-tree gemmar looks
# (<its directory>/GEMMAR_DATA_FROM_BIN), so it reads the reports and modules being edited (relative links: the
# source and build trees may move together).
get_target_property(gemmar_build_dir gemmar BINARY_DIR)
cmake_path(APPEND gemmar_build_dir ${GEMMAR_DATA_FROM_BIN} OUTPUT_VARIABLE build_data_dir)
cmake_path(NORMAL_PATH build_data_dir)
file(MAKE_DIRECTORY ${build_data_dir})
foreach(item reports:reports python:python profiles:model/profiles)
  string(REPLACE ":" ";" item ${item})
  list(GET item 0 name)
  list(GET item 1 source)
  file(RELATIVE_PATH target ${build_data_dir} ${PROJECT_SOURCE_DIR}/${source})
  file(CREATE_LINK ${target} ${build_data_dir}/${name} RESULT link_result SYMBOLIC)
  if(NOT link_result EQUAL 0)
    message(FATAL_ERROR "cannot link ${build_data_dir}/${name} -> ${target}: ${link_result}")
  endif()
endforeach()

# The .deb: `cpack --preset package` in a build configured with `cmake --preset package` (docs/building.md, "Install").
# A CPU-only build is the package gemmar; a GPU build is the variant gemmar-cuda or gemmar-hip, which replaces it
# (same /usr/bin/gemmar) and leaves the vendor runtime (CUDA toolkit, ROCm) to the vendor's own installation.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME gemmar)
if(GEMMAR_CUDA)
  set(CPACK_PACKAGE_NAME gemmar-cuda)
elseif(GEMMAR_HIP)
  set(CPACK_PACKAGE_NAME gemmar-hip)
endif()
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "validates a fused fp8 GEMM + all-reduce: bit-exact CPU reference, timing model, GPU kernels, reports")
set(CPACK_PACKAGE_CONTACT "gemmar developers")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)  # gemmar_<version>_<arch>.deb
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Debian 12's names. The shared libraries are checked against the binary by scripts/package_check.sh
# (dpkg-shlibdeps); python3-matplotlib (with its numpy) draws the reports.
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libboost-program-options1.74.0 (>= 1.74.0+ds1), libc6 (>= 2.35), libgcc-s1 (>= 3.0), libgomp1 (>= 6), libre2-9 (>= 0+hg23), libstdc++6 (>= 11), python3, python3-matplotlib")
if(NOT CPACK_PACKAGE_NAME STREQUAL "gemmar")
  set(CPACK_DEBIAN_PACKAGE_PROVIDES gemmar)
  set(CPACK_DEBIAN_PACKAGE_CONFLICTS gemmar)
  set(CPACK_DEBIAN_PACKAGE_REPLACES gemmar)
endif()
# A package runs on other machines: refuse one built for this CPU (-march=native) or with sanitizers.
set(GEMMAR_PACKAGE_REFUSAL "")
if(GEMMAR_NATIVE AND NOT GEMMAR_MARCH)
  set(GEMMAR_PACKAGE_REFUSAL "this build uses -march=native (GEMMAR_NATIVE=ON): configure the package with cmake --preset package (GEMMAR_NATIVE=OFF, or GEMMAR_MARCH=<level>)")
elseif(GEMMAR_SANITIZE)
  set(GEMMAR_PACKAGE_REFUSAL "this build has sanitizers (GEMMAR_SANITIZE=ON): configure the package with cmake --preset package")
endif()
file(CONFIGURE OUTPUT ${CMAKE_BINARY_DIR}/gemmar_cpack_checks.cmake CONTENT [[
if(NOT "@GEMMAR_PACKAGE_REFUSAL@" STREQUAL "")
  message(FATAL_ERROR "gemmar package: @GEMMAR_PACKAGE_REFUSAL@")
endif()
]] @ONLY)
set(CPACK_PROJECT_CONFIG_FILE ${CMAKE_BINARY_DIR}/gemmar_cpack_checks.cmake)
include(CPack)
