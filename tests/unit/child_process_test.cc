// ChildProcess: a spawned command's exit and its stdout, collected by a reader thread.
#include "core/child_process.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace switchyard {
namespace {

TEST(ChildProcessTest, AllStdoutLinesHasEveryLineOnceTheChildExited) {
  // More output than one read of the pipe, and a last line without its newline: right after the
  // exit the reader may still be behind, which allStdoutLines() waits out.
  ChildProcess child({"/bin/sh", "-c",
                      "i=0; while [ $i -lt 3000 ]; do echo line$i; i=$((i+1)); done; printf end"});
  ASSERT_EQ(child.waitExit(deadlineIn(std::chrono::seconds(20))), std::optional<int>(0));
  const std::vector<std::string> lines = child.allStdoutLines(deadlineIn(std::chrono::seconds(5)));
  ASSERT_EQ(lines.size(), 3001u);
  EXPECT_EQ(lines.front(), "line0");
  EXPECT_EQ(lines[2999], "line2999");
  EXPECT_EQ(lines.back(), "end");
}

TEST(ChildProcessTest, AllStdoutLinesReturnsAtTheDeadlineWhileStdoutStaysOpen) {
  ChildProcess child({"/bin/sh", "-c", "echo first; exec sleep 30"});
  const auto lines = child.allStdoutLines(deadlineIn(std::chrono::milliseconds(300)));
  EXPECT_LE(lines.size(), 1u);  // what came so far; the child is still running
}

}  // namespace
}  // namespace switchyard
