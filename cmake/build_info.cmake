# Writes the build's identity (validate/cli/build_info.cpp.in, already configured with the version and the build
# flags) with the source tree's git commit filled in. Run with -P on every build (validate/CMakeLists.txt), so the
# commit is the one built, not the one configured; configure_file rewrites OUT only when its text changes, so an
# unchanged commit recompiles and relinks nothing.
# Inputs: -DSOURCE_DIR=<the source tree> -DIN=<configured template> -DOUT=<generated .cpp>.
set(GEMMAR_GIT_COMMIT unknown)
set(GEMMAR_GIT_DIRTY false)
find_package(Git QUIET)
if(GIT_FOUND)
  # A source tarball unpacked inside another repository must not report that repository's commit.
  execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --show-toplevel
                  OUTPUT_VARIABLE top RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(rc EQUAL 0)
    file(REAL_PATH "${top}" top)
    file(REAL_PATH "${SOURCE_DIR}" src)
  endif()
  if(rc EQUAL 0 AND top STREQUAL src)
    execute_process(COMMAND ${GIT_EXECUTABLE} -C ${SOURCE_DIR} rev-parse --short=12 HEAD
                    OUTPUT_VARIABLE commit RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    if(rc EQUAL 0 AND commit MATCHES "^[0-9a-f]+$")
      set(GEMMAR_GIT_COMMIT ${commit})
      # --no-optional-locks: never take the index lock a user's own git command may be holding.
      execute_process(COMMAND ${GIT_EXECUTABLE} --no-optional-locks -C ${SOURCE_DIR} status --porcelain
                              --untracked-files=no
                      OUTPUT_VARIABLE changes RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
      if(rc EQUAL 0 AND NOT changes STREQUAL "")
        set(GEMMAR_GIT_DIRTY true)
      endif()
    endif()
  endif()
endif()
configure_file(${IN} ${OUT} @ONLY)
