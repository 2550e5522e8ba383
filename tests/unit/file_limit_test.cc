// The gateway raises its open-files soft limit to the hard limit at start.
#include "core/file_limit.h"

#include <gtest/gtest.h>
#include <sys/resource.h>

namespace switchyard {
namespace {

TEST(FileLimitTest, RaisesTheSoftLimitToTheHardOne) {
  rlimit original{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &original), 0);
  if (original.rlim_max != RLIM_INFINITY && original.rlim_max <= 64) {
    GTEST_SKIP() << "hard limit too low to lower the soft one";
  }
  rlimit lowered = original;
  lowered.rlim_cur = 64;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lowered), 0);
  const FileLimit limit = raiseFileLimit();
  EXPECT_TRUE(limit.error.empty()) << limit.error;
  EXPECT_EQ(limit.before, 64u);
  EXPECT_GT(limit.soft, 64u);
  EXPECT_EQ(limit.soft, limit.hard);
  rlimit now{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &now), 0);
  EXPECT_EQ(now.rlim_cur, limit.soft);
  // Already at the hard limit: nothing changes.
  const FileLimit again = raiseFileLimit();
  EXPECT_EQ(again.before, again.soft);
  ::setrlimit(RLIMIT_NOFILE, &original);
}

}  // namespace
}  // namespace switchyard
