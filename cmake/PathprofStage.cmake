# pathprof_stage(NAME DEPS ... PRIVATE_DEPS ... [PCH ANCHOR]): a stage library from every
# src/*.cc of the calling folder, with include/ public. Sources are globbed so that adding a file
# needs no CMake edit. Its files start from ANCHOR's precompiled header (the standard headers' by
# default). A stage with no sources yet is a header-only (INTERFACE) library.
function(pathprof_stage name)
  cmake_parse_arguments(ARG "" "PCH" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cc)
  if(_srcs)
    add_library(${name} ${_srcs})
    target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
    if(NOT ARG_PCH)
      set(ARG_PCH pathprof_stage_pch)
    endif()
    pathprof_reuse_pch(${name} ${ARG_PCH})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()

# pathprof_reuse_pch(TARGET ANCHOR): TARGET's files start from ANCHOR's precompiled header
# (CMakeLists.txt, proto/CMakeLists.txt) when PATHPROF_PCH is on. -pthread as the anchors have
# it: some targets get it from their libraries, and GCC refuses a header precompiled without it
# in a file compiled with it.
function(pathprof_reuse_pch target anchor)
  if(PATHPROF_PCH)
    target_precompile_headers(${target} REUSE_FROM ${anchor})
    target_compile_options(${target} PRIVATE -pthread)
  endif()
endfunction()
