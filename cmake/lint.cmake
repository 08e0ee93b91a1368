# Lint targets (CONTRIBUTING.md, "Format and lint"). Included from the top-level CMakeLists.txt
# with include(cmake/lint.cmake), after the options are declared.
#
#   cmake --build build --target format   clang-format -i over src/, tests/, bench/ (.h .cc .cu),
#                                         using .clang-format; tests/data/ is left alone
#   cmake --build build --target check    clang-tidy over src/**/*.cc, using .clang-tidy and
#                                         build/compile_commands.json; fails on WarningsAsErrors
#
# Both targets always exist. When the tool is missing, the target prints what to install and
# fails, so that a check that did not run is never mistaken for one that passed.

find_program(KP_CLANG_FORMAT NAMES clang-format clang-format-19 clang-format-18 clang-format-17 clang-format-16
                                   clang-format-15 clang-format-14)
find_program(KP_CLANG_TIDY NAMES clang-tidy clang-tidy-19 clang-tidy-18 clang-tidy-17 clang-tidy-16
                                 clang-tidy-15 clang-tidy-14)
# run-clang-tidy runs clang-tidy on all cores; without it the files are checked one by one.
find_program(KP_RUN_CLANG_TIDY NAMES run-clang-tidy run-clang-tidy-19 run-clang-tidy-18 run-clang-tidy-17
                                     run-clang-tidy-16 run-clang-tidy-15 run-clang-tidy-14)

# --- format ---------------------------------------------------------------------------------
# tests/data/ holds captured nvcc and ptxas output whose line and column numbers refer to the
# .cu files beside them: reformatting those would make the captured logs lie.
file(GLOB_RECURSE kp_format_files CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/src/*.h ${PROJECT_SOURCE_DIR}/src/*.cc ${PROJECT_SOURCE_DIR}/src/*.cu
  ${PROJECT_SOURCE_DIR}/tests/*.h ${PROJECT_SOURCE_DIR}/tests/*.cc ${PROJECT_SOURCE_DIR}/tests/*.cu
  ${PROJECT_SOURCE_DIR}/bench/*.h ${PROJECT_SOURCE_DIR}/bench/*.cc ${PROJECT_SOURCE_DIR}/bench/*.cu)
# The source directory as a regular expression (its path may hold '.', '+' and the like).
string(REGEX REPLACE "([][+.*()^$?|\\\\])" "\\\\\\1" kp_source_regex "${PROJECT_SOURCE_DIR}")
list(FILTER kp_format_files EXCLUDE REGEX "^${kp_source_regex}/(tests|bench)/data/")

if(KP_CLANG_FORMAT)
  add_custom_target(format
    COMMAND ${KP_CLANG_FORMAT} -i --style=file ${kp_format_files}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
    COMMENT "clang-format -i on src/, tests/ and bench/"
    VERBATIM)
else()
  message(STATUS "clang-format not found: the 'format' target will only say so")
  add_custom_target(format
    COMMAND ${CMAKE_COMMAND} -E echo "format: clang-format not found; install it (apt-get install clang-format)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()

# --- check ----------------------------------------------------------------------------------
# Every .cc under src/ has an entry in compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS is
# on in CMakeLists.txt); the *_test.cc files only when the tests are built. CUDA files (.cu)
# are left out: clang-tidy would have to parse them as CUDA with nvcc's flags.
file(GLOB_RECURSE kp_check_files CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.cc)
if(NOT KP_BUILD_TESTS)
  list(FILTER kp_check_files EXCLUDE REGEX "_test\\.cc$")
endif()

if(KP_CLANG_TIDY)
  execute_process(COMMAND ${KP_CLANG_TIDY} --version OUTPUT_VARIABLE kp_tidy_version ERROR_QUIET)
  if(kp_tidy_version MATCHES "version ([0-9]+)")
    if(CMAKE_MATCH_1 LESS 16)
      # A lambda capturing a structured binding (C++20, P1091) parses in clang 16 and later only;
      # src/build/builder.cc and src/sys/subprocess.cc have one, which an older clang-tidy
      # reports as clang-diagnostic-error.
      message(STATUS "clang-tidy ${CMAKE_MATCH_1} found; 'check' wants 16 or newer for the C++20 in src/")
    endif()
  endif()
  if(KP_RUN_CLANG_TIDY)
    # run-clang-tidy picks files from the compile database by a regular expression; test files
    # are there only when the tests are built, as above.
    add_custom_target(check
      COMMAND ${KP_RUN_CLANG_TIDY} -clang-tidy-binary ${KP_CLANG_TIDY} -p ${PROJECT_BINARY_DIR} -quiet
              "^${kp_source_regex}/src/.*\\.cc$"
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      COMMENT "clang-tidy (parallel) over src/**/*.cc"
      VERBATIM)
  else()
    add_custom_target(check
      COMMAND ${KP_CLANG_TIDY} -p ${PROJECT_BINARY_DIR} --quiet ${kp_check_files}
      WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
      COMMENT "clang-tidy over src/**/*.cc"
      VERBATIM)
  endif()
else()
  message(STATUS "clang-tidy not found: the 'check' target will only say so")
  add_custom_target(check
    COMMAND ${CMAKE_COMMAND} -E echo "check: clang-tidy not found; install it (apt-get install clang-tidy)"
    COMMAND ${CMAKE_COMMAND} -E false
    VERBATIM)
endif()
