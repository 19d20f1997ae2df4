# tokenbudget — every developer and CI entry point.
GO        ?= go
WASM      := build/filter.wasm
PASSWASM  := build/passthrough.wasm
WASMENV   := GOOS=wasip1 GOARCH=wasm
CONFIG    ?= examples/local/plugin.json
FUZZTIME  ?= 60s
# The smoke pass counts executions rather than seconds: Go 1.26's fuzz
# coordinator can report a spurious "context deadline exceeded" when a
# duration-based -fuzztime expires under CPU load (golang/go#75804, fixed in
# 1.27); a count has no deadline to race.
SMOKETIME ?= 20000x
# Go stops no fuzz run that stalls (-timeout does not cover fuzzing), so each
# target gets FUZZBOUND of wall time; past it every process of the run gets
# SIGQUIT, which prints where each goroutine waits, and the pass fails. Raise
# it with FUZZTIME.
FUZZBOUND ?= 15m
BENCHTIME ?= 1s
BENCHCOUNT ?= 6

# Fuzz targets are found, not listed: every `func FuzzX` in a _test.go file of
# this module, as package:name. `make test` runs each for SMOKETIME
# executions, `make fuzz` for FUZZTIME each.
FUZZ_TARGETS = $(shell grep -r --include='*_test.go' --exclude-dir=peers -o '^func Fuzz[A-Za-z0-9_]*' \
	shared sharedstore filter envoy examples e2e | sed -E 's|^(.*)/[^/]*_test\.go:func (Fuzz.*)|./\1:\2|' | sort -u)

.PHONY: all build test test-short test-profiles test-wasm run fleet bench bench-instructions bench-fleet-spend bench-peers bench-peers-instr fuzz fuzz-smoke vet validate oci images clean

all: build

build: $(WASM) $(PASSWASM)

$(WASM): FORCE
	@mkdir -p build
	$(WASMENV) $(GO) build -buildmode=c-shared -o $(WASM) ./filter

$(PASSWASM): FORCE
	@mkdir -p build
	$(WASMENV) $(GO) build -buildmode=c-shared -o $(PASSWASM) ./examples/passthrough

FORCE:

# The whole suite: unit tests, the compiled .wasm in the wazero host, end to
# end through the local gateway with real Redis, then a short fuzz pass.
# It ends with one line counted from the runs (e2e/cmd/testsummary): packages, tests, fuzz
# targets and wall time. Each go test runs with -json through testsummary, which prints what
# go test alone would (the "ok" and "FAIL" lines included) and keeps go test's exit status.
TALLY   := build/test-tally.jsonl
TESTRUN := build/testsummary run --tally $(TALLY) -- $(GO) test -json
GOTEST  ?= $(GO) test
test:
	@mkdir -p build && rm -f $(TALLY) && date +%s > build/test-started
	$(MAKE) --no-print-directory build vet
	$(GO) build -o build/testsummary ./e2e/cmd/testsummary
	TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		$(TESTRUN) -count=1 -timeout 25m ./...
	$(MAKE) --no-print-directory test-profiles GOTEST='$(TESTRUN)'
	$(MAKE) --no-print-directory test-wasm GOTEST='$(TESTRUN)'
	$(MAKE) --no-print-directory fuzz-smoke FUZZTIME=$(SMOKETIME)
	@build/testsummary report --tally $(TALLY) --fuzz $(words $(FUZZ_TARGETS)) --started $$(cat build/test-started)

# The quick tier: the unit tests of shared/, the exchange's rule table among them, natively and
# without building the module; for the edit-test loop, not a substitute for `make test`.
test-short:
	$(GO) test -short -count=1 ./shared/...

# The hand-written wasm of the packages listed (their *_wasm.s) runs only in a VM: their
# tests, with the differential ones (each wasm twin against its Go reference, jsonx against
# encoding/json) and the fuzz targets' seeds, run under wasip1 in wazero's CLI, built from the
# module's own wazero.
WASMASM := $(sort $(patsubst %/,./%,$(dir $(wildcard shared/*/*_wasm.s))))
test-wasm:
	@test -n "$(WASMASM)" || { echo "no *_wasm.s found under shared/"; exit 1; }
	@mkdir -p build
	$(GO) build -o build/wazero github.com/tetratelabs/wazero/cmd/wazero
	PATH=$(CURDIR)/build:$$PATH GOWASIRUNTIME=wazero $(WASMENV) $(GOTEST) -count=1 \
		-exec "$$($(GO) env GOROOT)/lib/wasm/go_wasip1_wasm_exec" $(WASMASM)

# The whole suite above runs on the legacy host profile, the strictest. Each newer cpp-host
# generation (TOKENBUDGET_HOST_PROFILE) then gets every gateway test and a smoke of the compiled
# filter: start-up, config refusal and reload, admission, refusal, settlement, streams, a cut
# stream, two workers, the fleet store through callouts, and the official SDKs. It tests the
# modules `make build` wrote.
HOST_PROFILES := envoy-2025 current
PROFILE_SMOKE := ^(TestTheSharedCasesHoldInTheWazeroHost|TestAdmittedResponsesCarryTheAPIKeyTokenHeaders|TestTheKeyIsRefusedOnceItsMinuteBudgetIsSpent|TestSettleRefundsUnusedAndChargesOverage|TestConcurrentReservationsFromTwoWorkersNeverExceedTheBudget|TestABadConfigIsRefusedWithAClearLogLine|TestReloadResetsBucketsExactlyWhenABudgetChanged|TestAStreamSettlesItsLastUsageBlock|TestACutStreamReleasesItsHoldInFull|TestNoHoldLeaksAndNoneIsCountedTwice|TestRequestRateRefusesPastTheBurstWithTheCallersOwnHeaders|TestE2EAdmittedUntilTheKeyBudgetIsSpentThenRetryAfterAdmitsAgain|TestE2EOfficialSDKsSettleExactlyWhatTheBackendReported|TestFleetKeyBudgetSpentThroughOneGatewayIsRefusedOnTheOther)$$

test-profiles:
	@set -e; for p in $(HOST_PROFILES); do \
		echo "host profile $$p"; \
		TOKENBUDGET_HOST_PROFILE=$$p TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
			$(GOTEST) -count=1 ./envoy/gateway; \
		TOKENBUDGET_HOST_PROFILE=$$p TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
			$(GOTEST) -count=1 -run '$(PROFILE_SMOKE)' ./filter/wasmtest ./e2e; \
	done

fuzz: build
fuzz-smoke fuzz:
	@test -n "$(FUZZ_TARGETS)" || { echo "no fuzz targets found"; exit 1; }
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
			timeout -s QUIT -k 30s $(FUZZBOUND) $(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg \
			|| { rc=$$?; [ $$rc -ne 124 ] || echo "fuzz $$pkg $$name did not end within $(FUZZBOUND)"; exit $$rc; }; \
	done

# Native vet of everything, a wasip1 vet of everything under shared/ (tests
# included: shared/ is compiled into the module and holds no native tool, so
# one cannot creep back), and a wasip1 build of the other packages the module
# is made of (their tests import native-only helpers such as redistest).
vet:
	$(GO) vet ./...
	$(WASMENV) $(GO) vet ./shared/...
	$(WASMENV) $(GO) build ./filter/... ./sharedstore ./sharedstore/local ./sharedstore/remote ./sharedstore/fallback

# The local gateway on the embedded mock LLM with the example config. The binary is built and
# exec'd (not `go run`, which would stand between a SIGHUP and the gateway), so
# `kill -HUP <pid>` with the pid of its "listening" line reloads CONFIG.
run: build build/gateway
	exec build/gateway --wasm $(WASM) --config $(CONFIG) --upstream mock

build/gateway: FORCE
	@mkdir -p build
	$(GO) build -o $@ ./envoy/cmd/gateway

# A fleet on one machine, in the foreground until Ctrl-C: Redis and PostgreSQL (each started
# when it does not answer), the ledger migrated, sharedstore with its admin API, the worker
# (when sharedstore has it) and two gateways on examples/fleet/plugin.json, on ports that do
# not collide with `make run`. It prints the URLs and where the admin token is; the ports and
# the rest are in examples/fleet/run.sh, a walk through in README "Fleet-wide budgets".
fleet: build build/sharedstore build/gateway
	exec examples/fleet/run.sh

bench: build
	{ TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) \
		./shared/... ./sharedstore/... ./e2e/...; echo $$? > build/bench.rc; } | tee build/bench.txt
	@test "$$(cat build/bench.rc)" = 0 || { echo "benchmarks failed"; exit 1; }
	@echo "module sizes (bytes, then gzip -9 bytes):" | tee build/bench-ratios.txt
	@for f in $(WASM) $(PASSWASM); do \
		echo "$$f $$(wc -c < $$f) $$(gzip -9 -c $$f | wc -c)"; done | tee -a build/bench-ratios.txt
	@bs=$$(command -v benchstat || echo "$$($(GO) env GOPATH)/bin/benchstat"); \
	for col in module limits vm; do \
		"$$bs" -col /$$col -filter "/$$col:/.+/" build/bench.txt; done | tee -a build/bench-ratios.txt

# Instructions per 1 KiB request, filter vs pass-through, counted by
# valgrind's callgrind in one process: bench's instruction-count test marks
# N steady-state requests per module with callgrind client requests, and N
# streamed answers with and without 200 content chunks (the difference is
# the per-chunk figure)
# (e2e/bench/internal/callgrind), so the figure does not depend on the machine's load.
# A native run first fills wazero's compilation cache, so valgrind does not
# spend its time compiling the modules. Async preemption is off because
# callgrind cannot follow the Go runtime's preemption signals.
INSTR_REQUESTS ?= 200
# INSTR_CONFIG picks the filter's config: empty (two dimensions), six or six+requests.
INSTR_CONFIG ?=
CGDIR := build/callgrind
bench-instructions: build
	@mkdir -p $(CGDIR) build/wasmcache && rm -f $(CGDIR)/callgrind.out*
	CGO_ENABLED=0 $(GO) test -c -o build/bench.test ./e2e/bench
	$(WASMENV) $(GO) build -buildmode=c-shared -o build/estvm.wasm ./e2e/bench/testdata/estvm
	cd e2e/bench && TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache TOKENBUDGET_ESTVM_WASM=$(CURDIR)/build/estvm.wasm \
		TOKENBUDGET_INSTRUCTION_REQUESTS=2 TOKENBUDGET_INSTRUCTION_CONFIG=$(INSTR_CONFIG) \
		../../build/bench.test -test.run '^TestInstructionCountPhasesAdmitEveryRequest$$' -test.count 1
	cd e2e/bench && GODEBUG=asyncpreemptoff=1 TOKENBUDGET_WASM=$(CURDIR)/$(WASM) \
		TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache \
		TOKENBUDGET_ESTVM_WASM=$(CURDIR)/build/estvm.wasm \
		TOKENBUDGET_INSTRUCTION_REQUESTS=$(INSTR_REQUESTS) TOKENBUDGET_INSTRUCTION_CONFIG=$(INSTR_CONFIG) valgrind --tool=callgrind -q \
		--callgrind-out-file=$(CURDIR)/$(CGDIR)/callgrind.out \
		../../build/bench.test -test.run '^TestInstructionCountPhases(AdmitEveryRequest|StreamEveryChunk)$$' -test.count 1
	@awk -v n=$(INSTR_REQUESTS) '/^desc: Trigger: Client Request: / { m = $$NF } \
		/^totals: / && m != "" { ir[m] = $$2; m = "" } \
		END { if (!ir["filter"] || !ir["passthrough"]) { print "no callgrind dumps found"; exit 1 } \
			printf "instructions per 1 KiB request: passthrough %d, filter %d\n", ir["passthrough"]/n, ir["filter"]/n; \
			if (ir["filter-stream"] && ir["passthrough-stream"]) { \
				f = (ir["filter-stream"] - ir["filter-stream0"]) / n / 200; \
				p = (ir["passthrough-stream"] - ir["passthrough-stream0"]) / n / 200; \
				printf "instructions per streamed chunk: passthrough %d, filter %d, ratio %.1f\n", p, f, f / p } \
			if (ir["estimator-native"] && ir["estimator-vm"]) \
				printf "estimator instructions per byte (64 KiB body): native %.1f, vm %.1f\n", \
					ir["estimator-native"]/n/65536, ir["estimator-vm"]/n/65536; \
			if (ir["estimator-vm-code"]) \
				printf "estimator instructions per byte in the VM, 64 KiB of code messages: %.1f\n", \
					ir["estimator-vm-code"]/n/65536; \
			printf "filter/passthrough instructions ratio: %.1f\n", ir["filter"]/ir["passthrough"] }' \
		$(CGDIR)/callgrind.out.*

# What the default spend part (rate_limiting.redis.fleet_spend) costs a request of a team with no limit,
# against fleet_spend false, in one process (e2e/bench/fleetspend_test.go): a native run logs the
# Redis round trips and commands and the ledger records per request (and fills wazero's cache), then
# callgrind counts the instructions of the Go side (gateway, filter, sharedstore) per request. Callgrind
# can abort on a signal when the test's cleanup stops its redis-server, after both dumps are written;
# the awk step fails when a dump is missing.
bench-fleet-spend: build
	@mkdir -p $(CGDIR) build/wasmcache && rm -f $(CGDIR)/fleetspend.out*
	CGO_ENABLED=0 $(GO) test -c -o build/bench.test ./e2e/bench
	cd e2e/bench && TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache \
		../../build/bench.test -test.run '^TestFleetSpendByDefaultCostPerAdmission$$' -test.count 1 -test.v | grep fleet-spend-
	cd e2e/bench && GODEBUG=asyncpreemptoff=1 TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache \
		TOKENBUDGET_INSTRUCTION_REQUESTS=$(INSTR_REQUESTS) valgrind --tool=callgrind -q \
		--callgrind-out-file=$(CURDIR)/$(CGDIR)/fleetspend.out \
		../../build/bench.test -test.run '^TestFleetSpendByDefaultCostPerAdmission$$' -test.count 1 >/dev/null \
		|| echo "valgrind failed; the figures below stand only if both dumps were written before it did"
	@awk -v n=$(INSTR_REQUESTS) '/^desc: Trigger: Client Request: / { m = $$NF } \
		/^totals: / && m != "" { ir[m] = $$2; m = "" } \
		END { if (!ir["fleet-spend-off"] || !ir["fleet-spend-default"]) { print "no callgrind dumps found"; exit 1 } \
			printf "instructions per request: fleet_spend false %d, default %d, ratio %.3f\n", \
				ir["fleet-spend-off"]/n, ir["fleet-spend-default"]/n, ir["fleet-spend-default"]/ir["fleet-spend-off"] }' \
		$(CGDIR)/fleetspend.out.*

validate:
	$(GO) run ./envoy/cmd/tbconfig validate $(CONFIG)

# The module as an OCI image Istio pulls (Wasm image spec, compat variant: one layer holding
# plugin.wasm): the layout in build/oci, the same as one tar in build/oci.tar, its manifest
# digest in build/oci.digest, and build/istio/wasmplugin.yaml, the WasmPlugin pinned to it
# (url oci://OCI_REF, sha256 the digest).
OCI_REF ?= ghcr.io/example/tokenbudget:0.1.0
oci: build
	$(GO) run ./envoy/cmd/ociimage --wasm $(WASM) --ref $(OCI_REF) --layout build/oci --tar build/oci.tar \
		--digest-file build/oci.digest --wasmplugin envoy/istio/wasmplugin.yaml --wasmplugin-out build/istio/wasmplugin.yaml

# Every image of a deployment: the module's (make oci, above) and sharedstore's, a static
# binary (CGO_ENABLED=0) on an empty base with the machine's CA bundle and a non-root user
# 65532 (envoy/cmd/ociimage static): the layout in build/oci/sharedstore, the same as one tar
# in build/oci-sharedstore.tar, its digest in build/oci-sharedstore.digest. The worker and the
# migrate step are subcommands of the same image. Reproducible: one tree, one digest.
SHAREDSTORE_REF ?= ghcr.io/example/tokenbudget-sharedstore:0.1.0
IMAGE_ARCH      ?= amd64
images: oci
	CGO_ENABLED=0 GOOS=linux GOARCH=$(IMAGE_ARCH) $(GO) build -trimpath -ldflags='-s -w' \
		-o build/sharedstore-linux-$(IMAGE_ARCH) ./sharedstore/cmd/sharedstore
	$(GO) run ./envoy/cmd/ociimage static --binary build/sharedstore-linux-$(IMAGE_ARCH) --name sharedstore \
		--ref $(SHAREDSTORE_REF) --layout build/oci/sharedstore --tar build/oci-sharedstore.tar \
		--digest-file build/oci-sharedstore.digest

clean:
	rm -rf build

# sharedstore against envoyproxy/ratelimit on one throwaway redis-server, the
# same plan on both (e2e/peers/ratelimit). ratelimit is built from the Go
# module proxy inside its own module, so its dependencies stay out of go.mod.
# The last line is "sharedstore/ratelimit decisions/s ratio: N.NN".
PEERS     := e2e/peers/ratelimit
PEERFLAGS ?=

build/sharedstore: FORCE
	@mkdir -p build
	$(GO) build -o $@ ./sharedstore/cmd/sharedstore

build/ratelimit build/peers-ratelimit: FORCE
	@mkdir -p build
	cd $(PEERS) && $(GO) build -o $(CURDIR)/build/ratelimit github.com/envoyproxy/ratelimit/src/service_cmd
	cd $(PEERS) && $(GO) build -o $(CURDIR)/build/peers-ratelimit .

bench-peers: build/sharedstore build/peers-ratelimit
	build/peers-ratelimit -sharedstore build/sharedstore -ratelimit build/ratelimit $(PEERFLAGS)

# The same plan's Redis instructions per decision on each side, counted by
# valgrind's callgrind on redis-server (repeatable under any load).
bench-peers-instr: build/sharedstore build/peers-ratelimit
	build/peers-ratelimit -sharedstore build/sharedstore -ratelimit build/ratelimit -callgrind 2000 $(PEERFLAGS)
