# Run at every build (cli/CMakeLists.txt): writes OUT, a header naming the commit SOURCE_DIR is at
# (`git describe --always --dirty`, "unknown" outside a git checkout), only when that changed, so
# that what includes it is compiled again only for a new commit.
execute_process(COMMAND git -C "${SOURCE_DIR}" describe --always --dirty
                OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR commit STREQUAL "")
  set(commit "unknown")
endif()
set(text "#pragma once\n// Written by cli/git_commit.cmake at build time.\n#define INFERSCOPE_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()
