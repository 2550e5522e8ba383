// readTextFile: a file's bytes, or a named reason; never an exception, whatever the path.
#include "core/text_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

namespace switchyard {
namespace {

std::filesystem::path scratchDir() {
  const auto dir = std::filesystem::temp_directory_path() /
                   ("text_file_test." + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir;
}

TEST(TextFileTest, WrittenBytesReadBackWhole) {
  const auto dir = scratchDir();
  const std::string path = (dir / "a.txt").string();
  const std::string bytes("one\0two\nthree", 13);
  std::string error;
  ASSERT_TRUE(writeTextFile(path, bytes, &error)) << error;
  EXPECT_EQ(readTextFile(path, &error), bytes);
  std::string large(200'000, 'x');  // several reads
  for (size_t i = 0; i < large.size(); i += 997) large[i] = static_cast<char>('a' + i % 26);
  ASSERT_TRUE(writeTextFile(path, large, &error)) << error;
  EXPECT_EQ(readTextFile(path, &error), large);
  ASSERT_TRUE(writeTextFile(path, "", &error)) << error;
  EXPECT_EQ(readTextFile(path, &error), "");
  std::filesystem::remove_all(dir);
}

TEST(TextFileTest, APipeIsReadToItsEnd) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ASSERT_EQ(::write(fds[1], "listen: x\n", 10), 10);
  ::close(fds[1]);
  std::string error;
  EXPECT_EQ(readTextFile("/dev/fd/" + std::to_string(fds[0]), &error), "listen: x\n") << error;
  ::close(fds[0]);
  EXPECT_EQ(readTextFile("/dev/null", &error), "");
}

TEST(TextFileTest, WhatCannotBeReadIsRefusedWithItsReason) {
  const auto dir = scratchDir();
  struct Case {
    std::string path;
    std::string reason;
  };
  const Case cases[] = {
      {dir.string(), "is a directory"},
      {(dir / "missing.yaml").string(), "No such file or directory"},
      {"", "empty path"},
  };
  for (const Case& c : cases) {
    std::string error;
    EXPECT_EQ(readTextFile(c.path, &error), std::nullopt) << c.path;
    EXPECT_EQ(error, "cannot read " + c.path + ": " + c.reason);
    EXPECT_EQ(readTextFile(c.path, nullptr), std::nullopt) << c.path;
  }
  std::filesystem::remove_all(dir);
}

TEST(TextFileTest, AWriteIntoAMissingDirectoryFailsAndLeavesNothing) {
  const auto dir = scratchDir();
  const std::string path = (dir / "no" / "such" / "file").string();
  std::string error;
  EXPECT_FALSE(writeTextFile(path, "x", &error));
  EXPECT_NE(error.find("cannot write"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir / "no"));
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace switchyard
