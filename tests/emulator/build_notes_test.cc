// A newcomer's first screen (`make demo`) must not be compiler remarks: the emulator's vector
// files, built with the very command the build uses (compile_commands.json), print no GCC note.
// Each passes a 64-byte-aligned Vector by value, for which GCC notes an ABI change of GCC 4.6
// unless -Wno-psabi is given (emulator/CMakeLists.txt says why that note does not apply).
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace {

const std::string kBuildDir = std::string(PATHPROF_BIN_DIR) + "/..";

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The JSON string starting at `at` (just past its opening quote), unescaped.
std::string JsonString(const std::string& json, size_t at) {
  std::string out;
  for (size_t i = at; i < json.size() && json[i] != '"'; ++i) {
    if (json[i] == '\\' && i + 1 < json.size()) ++i;
    out += json[i];
  }
  return out;
}

// The value of `key` in the compile_commands.json entry of `file`; empty when there is none.
std::string EntryField(const std::string& json, const std::string& file, const std::string& key) {
  const size_t f = json.find("\"file\": \"" + file + "\"");
  if (f == std::string::npos) return "";
  const size_t begin = json.rfind('{', f), end = json.find('}', f);
  const size_t k = json.find("\"" + key + "\": \"", begin);
  if (k == std::string::npos || k > end) return "";
  return JsonString(json, k + key.size() + 5);
}

// The command with its output sent nowhere: `-o FILE` becomes `-o /dev/null`, so that the build
// tree is left as it was.
std::string ToNowhere(const std::string& command) {
  const size_t o = command.find(" -o ");
  if (o == std::string::npos) return "";
  const size_t end = command.find(' ', o + 4);
  return command.substr(0, o) + " -o /dev/null" +
         (end == std::string::npos ? "" : command.substr(end));
}

std::string RunShell(const std::string& command) {
  std::string out;
  FILE* p = popen((command + " 2>&1").c_str(), "r");
  if (p == nullptr) return "popen failed";
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) out.append(buf.data(), n);
  pclose(p);
  return out;
}

TEST(EmulatorBuild, VectorFilesCompileWithoutAbiNotes) {
  const std::string json = ReadFile(kBuildDir + "/compile_commands.json");
  ASSERT_FALSE(json.empty()) << "no compile_commands.json in " << kBuildDir;
  // The file that defines the by-value Vector functions, and one that calls them.
  for (const char* name : {"vector_operands.cc", "vector_blends.cc"}) {
    const std::string file = std::string(PATHPROF_SOURCE_DIR) + "/emulator/src/" + name;
    const std::string command = ToNowhere(EntryField(json, file, "command"));
    const std::string directory = EntryField(json, file, "directory");
    ASSERT_FALSE(command.empty()) << file << " is not in compile_commands.json";
    const std::string out = RunShell("cd '" + directory + "' && " + command);
    EXPECT_EQ(out.find("note:"), std::string::npos) << name << ":\n" << out;
    EXPECT_EQ(out.find("error"), std::string::npos) << name << ":\n" << out;
  }
}

}  // namespace
