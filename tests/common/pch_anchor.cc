// The one source of pathprof_test_pch (tests/CMakeLists.txt): the executable exists to build
// the precompiled header every test executable reuses, with the tests' own flags.
int main() {
  return 0;
}
