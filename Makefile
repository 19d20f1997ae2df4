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
SMOKETIME ?= 50000x
BENCHTIME ?= 1s
BENCHCOUNT ?= 6

# Packages under shared/ that compile for wasip1 (schema and cmd/ are native tools).
SHARED_PKGS = $(shell $(GO) list ./shared/... | grep -v -e /schema -e /cmd/)

# Fuzz targets: package and target name. `make test` runs each for SMOKETIME
# executions, `make fuzz` for FUZZTIME each.
FUZZ_TARGETS := \
	./shared/estimate:FuzzParse \
	./shared/estimate:FuzzText \
	./shared/usage:FuzzStream \
	./shared/usage:FuzzFromJSON \
	./shared/usage:FuzzInjectIncludeUsage \
	./shared/jsonx:FuzzParse \
	./shared/jsonx:FuzzSetMember \
	./shared/jsonx:FuzzAppendString \
	./shared/config:FuzzLoadNeverPanics \
	./shared/identity:FuzzAPIKeyNeverPanics \
	./shared/wire:FuzzDecodeAdmitResponseNeverPanics \
	./shared/refusal:FuzzJSONStringIsValidJSONAndRoundTrips \
	./shared/sse:FuzzDropperKeepsOrderAndNeverPanics \
	./shared/bucket:FuzzDecodeNeverPanicsAndRoundTrips \
	./sharedstore/local:FuzzGarbageInSharedDataNeverPanics \
	./filter/abi:FuzzDecodePairsNeverPanics

.PHONY: all build test run bench bench-instructions fuzz fuzz-smoke vet validate clean

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
test: build vet
	TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		$(GO) test -count=1 -timeout 25m ./...
	$(MAKE) --no-print-directory fuzz-smoke FUZZTIME=$(SMOKETIME)

fuzz-smoke fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=$${t%%:*}; name=$${t##*:}; \
		echo "fuzz $$pkg $$name for $(FUZZTIME)"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

# Native vet of everything, and a wasip1 build of every package the module
# is made of (their tests import native-only helpers such as redistest).
vet:
	$(GO) vet ./...
	$(WASMENV) $(GO) build ./filter/... $(SHARED_PKGS) ./sharedstore ./sharedstore/local ./sharedstore/remote ./sharedstore/fallback

# The local gateway on the embedded mock LLM with the example config.
run: build
	$(GO) run ./envoy/cmd/gateway --wasm $(WASM) --config $(CONFIG) --upstream mock

bench: build
	{ TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		$(GO) test -run '^$$' -bench . -benchmem -benchtime $(BENCHTIME) -count $(BENCHCOUNT) \
		./shared/... ./sharedstore/... ./e2e/... ./bench/...; echo $$? > build/bench.rc; } | tee build/bench.txt
	@test "$$(cat build/bench.rc)" = 0 || { echo "benchmarks failed"; exit 1; }
	@echo "module sizes (bytes, then gzip -9 bytes):" | tee build/bench-ratios.txt
	@for f in $(WASM) $(PASSWASM); do \
		echo "$$f $$(wc -c < $$f) $$(gzip -9 -c $$f | wc -c)"; done | tee -a build/bench-ratios.txt
	@bs=$$(command -v benchstat || echo "$$($(GO) env GOPATH)/bin/benchstat"); \
	for col in module limits vm; do \
		"$$bs" -col /$$col -filter "/$$col:/.+/" build/bench.txt; done | tee -a build/bench-ratios.txt

# Instructions per 1 KiB request, filter vs pass-through, counted by
# valgrind's callgrind in one process: bench's instruction-count test marks
# N steady-state requests per module with callgrind client requests
# (internal/callgrind), so the figure does not depend on the machine's load.
# A native run first fills wazero's compilation cache, so valgrind does not
# spend its time compiling the modules. Async preemption is off because
# callgrind cannot follow the Go runtime's preemption signals.
INSTR_REQUESTS ?= 200
CGDIR := build/callgrind
bench-instructions: build
	@mkdir -p $(CGDIR) build/wasmcache && rm -f $(CGDIR)/callgrind.out*
	CGO_ENABLED=0 $(GO) test -c -o build/bench.test ./bench
	$(WASMENV) $(GO) build -buildmode=c-shared -o build/estvm.wasm ./bench/testdata/estvm
	cd bench && TOKENBUDGET_WASM=$(CURDIR)/$(WASM) TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) \
		TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache TOKENBUDGET_ESTVM_WASM=$(CURDIR)/build/estvm.wasm \
		TOKENBUDGET_INSTRUCTION_REQUESTS=2 \
		../build/bench.test -test.run '^TestInstructionCountPhasesAdmitEveryRequest$$' -test.count 1
	cd bench && GODEBUG=asyncpreemptoff=1 TOKENBUDGET_WASM=$(CURDIR)/$(WASM) \
		TOKENBUDGET_PASSTHROUGH_WASM=$(CURDIR)/$(PASSWASM) TOKENBUDGET_WASM_CACHE=$(CURDIR)/build/wasmcache \
		TOKENBUDGET_ESTVM_WASM=$(CURDIR)/build/estvm.wasm \
		TOKENBUDGET_INSTRUCTION_REQUESTS=$(INSTR_REQUESTS) valgrind --tool=callgrind -q \
		--callgrind-out-file=$(CURDIR)/$(CGDIR)/callgrind.out \
		../build/bench.test -test.run '^TestInstructionCountPhasesAdmitEveryRequest$$' -test.count 1
	@awk -v n=$(INSTR_REQUESTS) '/^desc: Trigger: Client Request: / { m = $$NF } \
		/^totals: / && m != "" { ir[m] = $$2; m = "" } \
		END { if (!ir["filter"] || !ir["passthrough"]) { print "no callgrind dumps found"; exit 1 } \
			printf "instructions per 1 KiB request: passthrough %d, filter %d\n", ir["passthrough"]/n, ir["filter"]/n; \
			if (ir["estimator-native"] && ir["estimator-vm"]) \
				printf "estimator instructions per byte (64 KiB body): native %.1f, vm %.1f\n", \
					ir["estimator-native"]/n/65536, ir["estimator-vm"]/n/65536; \
			printf "filter/passthrough instructions ratio: %.1f\n", ir["filter"]/ir["passthrough"] }' \
		$(CGDIR)/callgrind.out.*

validate:
	$(GO) run ./shared/cmd/tbconfig validate $(CONFIG)

clean:
	rm -rf build
