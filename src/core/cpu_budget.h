// CpuBudget: how many CPUs this process may actually use, for sizing the worker pool.
//
// The count of CPUs in the process's affinity mask (taskset, a container's cpuset), further
// capped by the cgroup v2 CPU quota (`cpu.max`, a container's CPU limit) of the process's cgroup
// and its ancestors, rounded up; at least 1. hardware_concurrency() answers neither: a pod
// limited to one CPU on a 64-core node would otherwise start 64 workers on one CPU.
//
// Start-up code: reads /proc and /sys, never on the request path.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace switchyard {

struct CpuBudget {
  int cpus = 1;
  std::string source;  // e.g. "affinity mask (2 of 8 CPUs)", "cgroup cpu.max 150000 100000"
};

CpuBudget detectCpuBudget();

// The CPUs a cgroup v2 `cpu.max` line ("QUOTA PERIOD", or "max PERIOD") allows; nullopt when
// unlimited or malformed.
std::optional<double> parseCpuMax(std::string_view text);
// The cgroup v2 path ("/kubepods/pod1/c1") from /proc/self/cgroup's "0::PATH" line; nullopt
// when there is none (cgroup v1 only).
std::optional<std::string> parseCgroupV2Path(std::string_view proc_self_cgroup);

}  // namespace switchyard
