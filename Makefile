# Front door. On a fresh Debian 12 machine `make demo` and `make test` are the only commands needed.
JOBS ?= $(shell nproc)

.PHONY: deps build build-debug test test-release test-debug tsan demo bench bench-faults \
	bench-hetero bench-stampede bench-sim bench-sim-speed bench-optimizer bench-chaos bench-control-plane bench-scrape-cost bench-slo \
	bench-scaledown fuzz-smoke fuzz-campaign bench-tls bench-connections clean

deps:
	bash scripts/install-deps.sh

build: deps
	cmake --preset release >/dev/null
	cmake --build --preset release -j $(JOBS)

build-debug: deps
	cmake --preset debug >/dev/null
	cmake --build --preset debug -j $(JOBS)

test-release: build
	ctest --preset release -j $(JOBS)

test-debug: build-debug
	ctest --preset debug -j $(JOBS)

# The release build first, then the AddressSanitizer + UndefinedBehaviorSanitizer build.
test: test-release test-debug

tsan: deps
	cmake --preset tsan >/dev/null
	cmake --build --preset tsan -j $(JOBS)
	ctest --preset tsan

demo: build
	./build/release/switchyard demo

bench: build
	bash bench/e2e/proxy_overhead.sh

# Instructions and cache misses per proxied request, Switchyard against nginx, counted under
# Valgrind's callgrind (installs valgrind if missing): figures a shared VM's timings cannot give.
# About 1 min. COUNT_* knobs: bench/e2e/request_instructions.sh.
.PHONY: bench-instructions
bench-instructions: build
	bash bench/e2e/request_instructions.sh

bench-faults: build
	bash bench/e2e/faults.sh

# Routing quality on a mixed fleet: longer runs, CSV and PNG in build/bench-hetero/.
# HETERO_SECONDS, HETERO_SWEEP=1 and friends: see bench/e2e/hetero.sh.
bench-hetero: build
	bash bench/e2e/hetero.sh

# A replica added to a loaded fleet behind 3 gateways sharing Redis (least-request vs
# least-request-top-k with slow start), then the latency Redis adds per request. About 2.5 min;
# CSV and PNG in build/bench-stampede/. STAMPEDE_* knobs: see bench/e2e/stampede.sh.
bench-stampede: build
	bash bench/e2e/stampede.sh

# SLO routing on the product page's experiment (A10 + L20, chat + 4k-token code prompts, P99
# TPOT 50 ms; 8 strategies incl. the fixed Oracle), then a 2x surge against 30 s client deadlines
# with admission off / fifo / deadline, then a 4k-token prompt's TTFT per GPU type against the
# roofline. About 20 min; tables, CSV and PNG in build/bench-slo/.
# SLO_* and SURGE_* knobs: see bench/e2e/slo.sh and bench/e2e/surge.py.
bench-slo: build
	bash bench/e2e/slo.sh

# Prefix-cache routing (approximate and precise, from KV events) against least-request,
# load-balance and session affinity on 8 emulated replicas (A10 + L20): multi-turn chats, shared
# system prompts, RAG, llm-d's shared-context shape (5 requests/s behind eight gateways).
# About 31 min; table, CSV and PNG in build/bench-prefix/. PREFIX_* knobs: bench/e2e/prefix.sh.
.PHONY: bench-prefix
bench-prefix: build
	bash bench/e2e/prefix.sh

# The fleet simulator's studies 1-6 at a reduced size (a few minutes): summaries, CSV, JSON and
# PNG in build/bench-sim/. BENCH_SIM_SCALE: see bench/sim/bench-sim.sh; docs/simulation.md.
bench-sim: build
	bash bench/sim/bench-sim.sh
# The simulator's speed against its goals: 1,000 replicas (x real time, medians of SPEED_RUNS=3)
# and an hour of 10,000 replicas (SPEED_10K=0 skips it); about 5 min. SPEED_BASELINE=<binary>
# alternates another build's runs with these and prints the ratios. bench/sim/speed.sh.
bench-sim-speed: build
	bash bench/sim/speed.sh
# Traffic-aware scale-down: a Deployment shrinks under load behind 3 gateways (fake Kubernetes
# API server, emulated engines), Kubernetes' own pick vs Switchyard's choice + drain. About
# 1 min per run; CSV and PNG in build/bench-scaledown/. SCALEDOWN_* knobs: bench/e2e/scaledown.sh.
bench-scaledown: build
	bash bench/e2e/scaledown.sh

# The GPU-mix optimizer on the product page's experiment (A10 + L20, chat + long prompts, P99
# TPOT 50 ms): recommended mix vs the cheapest homogeneous fleet, the mix run on emulated engines,
# and the sweep of the long-prompt share. CSV, PNG and log in build/bench-optimizer/; OPT_* knobs:
# see bench/e2e/optimizer.sh. Also runs the solver's micro-benchmark.
bench-optimizer: build
	./build/release/micro_bench --benchmark_filter='Optimizer|ProfileMaxRate|LoadRecord'
	bash bench/e2e/optimizer.sh

# libFuzzer targets (clang, ASan+UBSan) for a short fixed time each from the committed corpora
# (tests/fuzz/corpus/<target>); new inputs go to build/fuzz/corpus/, crashes to
# build/fuzz/artifacts/. FUZZ_SECONDS per target (default 20).
FUZZ_SECONDS ?= 20
fuzz-smoke: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	bash tests/fuzz/run.sh $(FUZZ_SECONDS)

# A longer campaign: FUZZ_SECONDS per target (default 420: about 70 min over the targets).
fuzz-campaign: deps
	cmake --preset fuzz >/dev/null
	cmake --build --preset fuzz -j $(JOBS)
	bash tests/fuzz/run.sh $${FUZZ_SECONDS:-420}

# The TLS proxy overhead against nginx terminating TLS the same way (docs/benchmarks.md).
bench-tls: build
	BENCH_TLS=1 BENCH_SHAPE=small BENCH_STRATEGIES=least-request bash bench/e2e/proxy_overhead.sh

# Idle keep-alive connections (memory per connection) and concurrent streams (CPU per streamed
# event) through one gateway worker next to one nginx worker, in front of 24 emulated replicas.
# About 4 min; CONN_* knobs: see bench/e2e/connections.py. Needs an open-files hard limit of
# at least 16,000.
bench-connections: build
	python3 bench/e2e/connections.py

# The chaos soak: 3 gateways sharing Redis, 6 engine processes, steady load and a chaos event every
# few seconds (crash, hang, Redis restart, gateway restart, replica removed/added). 10 min;
# CHAOS_SECONDS=120 for a short one, SWITCHYARD=build/debug/switchyard for the ASan+UBSan build.
# Report, CSV and PNG in build/bench-chaos/. CHAOS_* knobs: see bench/e2e/chaos.sh.
bench-chaos: build
	bash bench/e2e/chaos.sh

# The control plane at 256 / 1,024 / 4,096 emulated replicas, 1 and 3 gateways on Redis, idle and
# light load: CPU, scrape rates, Redis cost, signal age, RSS, reload time. CSV, table and PNGs in
# build/bench-control-plane/. BASELINE=/path/to/older/switchyard adds the before runs (about
# 12 min then); CP_* knobs: see bench/e2e/control_plane.sh.
bench-control-plane: build
	bash bench/e2e/control_plane.sh

# Gateway CPU per telemetry scrape, end to end: one idle gateway over 256 and 1,024 emulated
# replicas, probes off, per scrape and marginal (about 3 min; 6 with BASELINE=/path/to/older/
# switchyard, run interleaved and compared).
bench-scrape-cost: build
	python3 bench/e2e/scrape_cost.py --after build/release/switchyard \
		$(if $(BASELINE),--before $(BASELINE))

clean:
	rm -rf build
