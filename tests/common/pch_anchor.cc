// The one source of pathprof_test_pch (tests/CMakeLists.txt): the library exists to build
// the precompiled header every test executable reuses.
