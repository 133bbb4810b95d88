# Example programs are traced instruction by instruction, so they are built as a user would
# build them (-O2 -g, no sanitizers, whatever the tree's build type) and kept to plain C so
# process start-up (the dynamic loader) stays short.
function(pathprof_example name)
  add_executable(${name} ${ARGN})
  set_target_properties(${name} PROPERTIES PATHPROF_EXAMPLE TRUE)  # see PATHPROF_SANITIZE
  target_compile_options(${name} PRIVATE -O2 -g -fno-sanitize=all)
  target_link_options(${name} PRIVATE -fno-sanitize=all)
endfunction()

# A statically linked twin: no dynamic loader to single-step through, so tests that trace it
# take well under a second even at ptrace's few tens of thousands of steps per second.
function(pathprof_static_example name)
  pathprof_example(${name} ${ARGN})
  target_link_options(${name} PRIVATE -static)
endfunction()
