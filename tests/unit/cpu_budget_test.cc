#include "core/cpu_budget.h"

#include <gtest/gtest.h>

namespace switchyard {
namespace {

TEST(CpuBudgetTest, CpuMaxQuotaIsQuotaOverPeriod) {
  EXPECT_DOUBLE_EQ(*parseCpuMax("200000 100000\n"), 2.0);
  EXPECT_DOUBLE_EQ(*parseCpuMax("150000 100000"), 1.5);
  EXPECT_DOUBLE_EQ(*parseCpuMax("50000 100000"), 0.5);
}

TEST(CpuBudgetTest, UnlimitedOrMalformedCpuMaxIsNoQuota) {
  EXPECT_FALSE(parseCpuMax("max 100000\n"));
  EXPECT_FALSE(parseCpuMax(""));
  EXPECT_FALSE(parseCpuMax("100000"));
  EXPECT_FALSE(parseCpuMax("abc 100000"));
  EXPECT_FALSE(parseCpuMax("100000 0"));
  EXPECT_FALSE(parseCpuMax("-5 100000"));
  EXPECT_FALSE(parseCpuMax("100000 100000 7"));
}

TEST(CpuBudgetTest, CgroupV2PathIsTheZeroHierarchyLine) {
  EXPECT_EQ(*parseCgroupV2Path("0::/kubepods/burstable/pod1/c1\n"), "/kubepods/burstable/pod1/c1");
  EXPECT_EQ(*parseCgroupV2Path("12:cpu,cpuacct:/x\n0::/\n"), "/");
  EXPECT_FALSE(parseCgroupV2Path("12:cpu,cpuacct:/x\n11:memory:/x\n"));
  EXPECT_FALSE(parseCgroupV2Path(""));
}

TEST(CpuBudgetTest, DetectedBudgetIsAtLeastOneAndNamesItsSource) {
  const CpuBudget budget = detectCpuBudget();
  EXPECT_GE(budget.cpus, 1);
  EXPECT_FALSE(budget.source.empty());
}

}  // namespace
}  // namespace switchyard
