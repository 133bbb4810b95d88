# pathprof_stage(NAME DEPS ... PRIVATE_DEPS ...): a stage library from every src/*.cc of the
# calling folder, with include/ public. Sources are globbed so that adding a file needs no CMake
# edit. A stage with no sources yet is a header-only (INTERFACE) library.
function(pathprof_stage name)
  cmake_parse_arguments(ARG "" "" "DEPS;PRIVATE_DEPS" ${ARGN})
  file(GLOB _srcs CONFIGURE_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/*.cc)
  if(_srcs)
    add_library(${name} ${_srcs})
    target_include_directories(${name} PUBLIC ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(${name} PUBLIC ${ARG_DEPS} PRIVATE ${ARG_PRIVATE_DEPS})
  else()
    add_library(${name} INTERFACE)
    target_include_directories(${name} INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/include)
    target_link_libraries(${name} INTERFACE ${ARG_DEPS})
  endif()
endfunction()
