# Included by validate/CMakeLists.txt: gemmar --version's library, gemmar_version (validate/cli/version.cpp and the
# generated build_info.cpp: the version, the build flags, and the git commit regenerated on every build by
# cmake/build_info.cmake). A library of its own, linked by the executable alone, so that a new commit relinks
# gemmar and no test.
if(GEMMAR_MARCH)
  set(GEMMAR_BI_MARCH ${GEMMAR_MARCH})
elseif(GEMMAR_NATIVE)
  set(GEMMAR_BI_MARCH native)
else()
  set(GEMMAR_BI_MARCH "")
endif()
string(TOUPPER "${CMAKE_BUILD_TYPE}" build_type_uc)
string(STRIP "${CMAKE_CXX_FLAGS} ${CMAKE_CXX_FLAGS_${build_type_uc}}" GEMMAR_BI_CXX_FLAGS)
set(GEMMAR_BI_SANITIZERS "")
if(GEMMAR_SANITIZE)
  set(GEMMAR_BI_SANITIZERS "address;undefined")
endif()
set(GEMMAR_BI_GPU_BACKEND "")
set(GEMMAR_BI_GPU_ARCHS "")
if(GEMMAR_CUDA)
  set(GEMMAR_BI_GPU_BACKEND cuda)
  get_target_property(GEMMAR_BI_GPU_ARCHS gemmar_kernels CUDA_ARCHITECTURES)
elseif(GEMMAR_HIP)
  set(GEMMAR_BI_GPU_BACKEND hip)
  get_target_property(GEMMAR_BI_GPU_ARCHS gemmar_kernels HIP_ARCHITECTURES)
endif()
# The template keeps the commit's placeholders for the build-time pass.
set(GEMMAR_GIT_COMMIT "@GEMMAR_GIT_COMMIT@")
set(GEMMAR_GIT_DIRTY "@GEMMAR_GIT_DIRTY@")
set(build_info_in ${CMAKE_CURRENT_BINARY_DIR}/build_info.cpp.in)
set(build_info_cpp ${CMAKE_CURRENT_BINARY_DIR}/build_info.cpp)
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/cli/build_info.cpp.in ${build_info_in} @ONLY)
set(build_info_cmd ${CMAKE_COMMAND} -DSOURCE_DIR=${PROJECT_SOURCE_DIR} -DIN=${build_info_in} -DOUT=${build_info_cpp}
                   -P ${PROJECT_SOURCE_DIR}/cmake/build_info.cmake)
execute_process(COMMAND ${build_info_cmd})  # so that the file exists before the first build
add_custom_target(gemmar_build_info COMMAND ${build_info_cmd} BYPRODUCTS ${build_info_cpp} VERBATIM)
add_library(gemmar_version STATIC ${CMAKE_CURRENT_SOURCE_DIR}/cli/version.cpp ${build_info_cpp})
add_dependencies(gemmar_version gemmar_build_info)
target_link_libraries(gemmar_version PRIVATE gemmar_cli gemmar_warnings)
