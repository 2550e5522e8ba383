#include "optimizer/optimizer.h"

#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <functional>
#include <limits>

#include "core/rng.h"
#include "optimizer/interval_decision.h"
#include "optimizer/load_json.h"

namespace switchyard::optimizer {
namespace {

profile::GpuProfile flatProfile(std::string name, double cost,
                                std::vector<std::vector<double>> tputs) {
  profile::GpuProfile p;
  p.gpu = name;
  p.deployment = std::move(name);
  p.cost = cost;
  p.outputs = {16, 256};
  p.prompts = {128, 4096};
  p.tputs = std::move(tputs);
  p.index();
  return p;
}

// The optimum by enumerating every slice assignment; +inf when none fits the bounds.
double enumerate(const MixModel& model) {
  const size_t d_count = model.deployments.size();
  const size_t c_count = model.cells.size();
  double best = std::numeric_limits<double>::infinity();
  std::vector<double> load(d_count, 0);
  std::function<void(size_t)> cell = [&](size_t c) {
    if (c == c_count) {
      double cost = 0;
      for (size_t d = 0; d < d_count; ++d) {
        const int n =
            std::max(model.deployments[d].lower, static_cast<int>(std::ceil(load[d] - 1e-9)));
        if (model.deployments[d].upper >= 0 && n > model.deployments[d].upper) return;
        cost += n * model.deployments[d].cost;
      }
      best = std::min(best, cost);
      return;
    }
    // Every way to split the cell's K slices over the deployments that can serve it.
    std::function<void(size_t, int)> split = [&](size_t d, int left) {
      if (d == d_count) {
        if (left == 0) cell(c + 1);
        return;
      }
      const int most = model.canServe(c, d) ? left : 0;
      for (int k = 0; k <= most; ++k) {
        load[d] += k * (k ? model.cells[c].load[d] : 0);
        split(d + 1, left - k);
        load[d] -= k * (k ? model.cells[c].load[d] : 0);
      }
    };
    split(0, model.slice_factor);
  };
  cell(0);
  return best;
}

TEST(OptimizerTest, MatchesExhaustiveEnumerationOnRandomInstances) {
  Rng rng(20240611);
  int compared = 0;
  int infeasible = 0;
  for (int instance = 0; instance < 240; ++instance) {
    const int deployments = 2 + static_cast<int>(rng.below(2));
    const int cells = 1 + static_cast<int>(rng.below(3));
    std::deque<profile::GpuProfile> profiles;
    MixProblem problem;
    problem.slice_factor = 1 + static_cast<int>(rng.below(3));
    problem.headroom = rng.below(2) ? 0.1 : 0;
    for (int d = 0; d < deployments; ++d) {
      std::vector<std::vector<double>> tputs(2, std::vector<double>(2));
      for (auto& row : tputs) {
        for (double& v : row) v = rng.below(6) == 0 ? 0 : 0.5 + 6 * rng.uniform01();
      }
      profiles.push_back(flatProfile("d" + std::to_string(d), 0.5 + 3 * rng.uniform01(), tputs));
      DeploymentSpec spec{profiles.back().deployment, profiles.back().cost};
      spec.profile = &profiles.back();
      if (rng.below(3) == 0) spec.upper = static_cast<int>(rng.below(4));
      if (rng.below(4) == 0 && spec.upper != 0) spec.lower = 1;
      problem.deployments.push_back(spec);
    }
    for (int c = 0; c < cells; ++c) {
      problem.cells.push_back(
          {rng.below(2) ? 128.0 : 4096.0, rng.below(2) ? 16.0 : 256.0, 0.1 + 5 * rng.uniform01()});
    }
    const MixModel model = MixModel::build(problem);
    const double expected = enumerate(model);
    const SolveResult solved = solveMix(model);
    if (std::isinf(expected)) {
      EXPECT_EQ(solved.status, SolveStatus::kInfeasible) << "instance " << instance;
      ++infeasible;
      continue;
    }
    ASSERT_EQ(solved.status, SolveStatus::kOptimal) << "instance " << instance;
    EXPECT_NEAR(solved.solution.cost, expected, 1e-6) << "instance " << instance << "\n"
                                                      << model.toLp();
    // The answer itself fits: every cell's slices placed, every deployment's load covered.
    for (size_t c = 0; c < model.cells.size(); ++c) {
      int placed = 0;
      for (int n : solved.solution.slices[c]) placed += n;
      EXPECT_EQ(placed, model.slice_factor);
    }
    ++compared;
  }
  EXPECT_GE(compared, 200);
  EXPECT_GT(infeasible, 0);
}

TEST(OptimizerTest, SplitsAMixOverTheCheapestTypes) {
  // "cheap" is good for short prompts only; "big" serves everything at twice the price.
  std::deque<profile::GpuProfile> profiles;
  profiles.push_back(flatProfile("cheap", 1, {{10, 0}, {10, 0}}));
  profiles.push_back(flatProfile("big", 2, {{10, 10}, {10, 10}}));
  MixProblem problem;
  for (auto& p : profiles) problem.deployments.push_back({p.deployment, p.cost, 0, -1, 0, &p});
  problem.cells = {{128, 16, 30}, {4096, 16, 10}};
  const Recommendation r = recommend(problem);
  ASSERT_TRUE(r.feasible);
  EXPECT_EQ(r.replicas, (std::vector<int>{3, 1}));
  EXPECT_DOUBLE_EQ(r.cost, 5);
  const std::string json = recommendationJson(r);
  EXPECT_NE(json.find(R"("replicas":{"cheap":3,"big":1})"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("feasible":true)"), std::string::npos);
  const std::string lp = r.model.toLp();
  EXPECT_NE(lp.find("Minimize"), std::string::npos);
  EXPECT_NE(lp.find("slices_0: y_0_0 + y_0_1 = 4"), std::string::npos) << lp;
  EXPECT_NE(lp.find("slices_1: y_1_1 = 4"), std::string::npos) << lp;
}

TEST(OptimizerTest, NoLoadKeepsMinReplicas) {
  std::deque<profile::GpuProfile> profiles;
  profiles.push_back(flatProfile("a", 1, {{10, 10}, {10, 10}}));
  MixProblem problem;
  problem.deployments.push_back({"a", 1, 0, -1, 1, &profiles.back()});
  problem.cells = {{128, 16, 0}};
  const Recommendation r = recommend(problem);
  EXPECT_TRUE(r.no_load);
  EXPECT_TRUE(r.feasible);
  EXPECT_EQ(r.replicas, std::vector<int>{1});
}

TEST(OptimizerTest, TooLittleAvailabilityAnswersTheMaximumFlagged) {
  std::deque<profile::GpuProfile> profiles;
  profiles.push_back(flatProfile("a", 1, {{10, 10}, {10, 10}}));
  profiles.push_back(flatProfile("b", 3, {{10, 10}, {10, 10}}));
  MixProblem problem;
  problem.deployments.push_back({"a", 1, 0, 2, 0, &profiles[0]});
  problem.deployments.push_back({"b", 3, 0, 1, 0, &profiles[1]});
  problem.cells = {{128, 16, 100}};
  const Recommendation r = recommend(problem);
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.replicas, (std::vector<int>{2, 1}));
  EXPECT_NE(r.note.find("max_replicas"), std::string::npos) << r.note;
}

TEST(OptimizerTest, AnUnservableShapeIsFlaggedAndTheRestStillSolved) {
  std::deque<profile::GpuProfile> profiles;
  profiles.push_back(flatProfile("a", 1, {{10, 0}, {10, 0}}));
  MixProblem problem;
  problem.deployments.push_back({"a", 1, 0, -1, 0, &profiles[0]});
  problem.cells = {{128, 16, 25}, {4096, 16, 1}};
  const Recommendation r = recommend(problem);
  EXPECT_FALSE(r.feasible);
  EXPECT_EQ(r.model.unservable.size(), 1u);
  EXPECT_EQ(r.replicas, std::vector<int>{3});
  EXPECT_NE(r.note.find("cannot meet the SLO"), std::string::npos) << r.note;
}

TEST(OptimizerTest, NoDeploymentsIsNotACrash) {
  MixProblem problem;
  problem.cells = {{128, 16, 1}};
  const Recommendation r = recommend(problem);
  EXPECT_FALSE(r.feasible);
  EXPECT_TRUE(r.replicas.empty());
}

TEST(IntervalDecisionTest, TheFleetShrinksOneCooldownAfterTheLoadDrops) {
  // One type serving 2 requests/s per replica; a 60 s cool-down; an answer every 10 s.
  const profile::GpuProfile a = flatProfile("a", 1, {{2, 2}, {2, 2}});
  MixProblem problem;
  problem.deployments.push_back({"a", 1, 0, -1, 0, &a});
  problem.slice_factor = 1;
  Stabilizer stabilizer({0.05, 60 * kNsPerSec});
  std::vector<int> in_force;
  auto decide = [&](TimeNs t, double rps) {
    problem.cells = {{128, 16, rps}};
    const IntervalDecision d = decideInterval(problem, stabilizer, in_force, t, {});
    in_force = d.answer.replicas;
    return in_force.at(0);
  };
  EXPECT_EQ(decide(0, 10), 5);
  // The load drops to a fifth: held at 5 for the cool-down, then 1.
  for (TimeNs t = 10; t < 60; t += 10) EXPECT_EQ(decide(t * kNsPerSec, 2), 5) << t;
  EXPECT_EQ(decide(60 * kNsPerSec, 2), 1);
  // A rise is never delayed.
  EXPECT_EQ(decide(80 * kNsPerSec, 8), 4);
}

TEST(LoadJsonTest, ParsesCellsAndRejectsBadOnes) {
  std::string error;
  auto load = parseLoadJson(
      R"({"model":"m","cells":[{"prompt_tokens":100,"output_tokens":20,"rps":1.5}]})", &error);
  ASSERT_TRUE(load) << error;
  EXPECT_EQ(load->model, "m");
  ASSERT_EQ(load->cells.size(), 1u);
  EXPECT_DOUBLE_EQ(load->cells[0].rps, 1.5);
  for (const char* bad :
       {"", "{}", R"({"cells":{}})", R"({"cells":[{"prompt_tokens":0,"output_tokens":1,"rps":1}]})",
        R"({"cells":[{"prompt_tokens":10,"output_tokens":1,"rps":-1}]})",
        R"({"cells":[{"prompt_tokens":10,"rps":1}]})", R"({"cells":[7]})"}) {
    EXPECT_FALSE(parseLoadJson(bad, &error)) << bad;
    EXPECT_FALSE(error.empty());
  }
}

}  // namespace
}  // namespace switchyard::optimizer
