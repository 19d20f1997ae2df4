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

.PHONY: all build test run bench fuzz fuzz-smoke vet validate oci clean

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

# The local gateway on the embedded mock LLM with the example config. The binary is built and
# exec'd (not `go run`, which would stand between a SIGHUP and the gateway), so
# `kill -HUP <pid>` with the pid of its "listening" line reloads CONFIG.
run: build
	$(GO) build -o build/gateway ./envoy/cmd/gateway
	exec build/gateway --wasm $(WASM) --config $(CONFIG) --upstream mock

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

validate:
	$(GO) run ./shared/cmd/tbconfig validate $(CONFIG)

# The module as an OCI image Istio pulls (Wasm image spec, compat variant: one layer holding
# plugin.wasm): the layout in build/oci, the same as one tar in build/oci.tar, its manifest
# digest in build/oci.digest, and build/istio/wasmplugin.yaml, the WasmPlugin pinned to it
# (url oci://OCI_REF, sha256 the digest).
OCI_REF ?= ghcr.io/example/tokenbudget:0.1.0
oci: build
	$(GO) run ./envoy/cmd/ociimage --wasm $(WASM) --ref $(OCI_REF) --layout build/oci --tar build/oci.tar \
		--digest-file build/oci.digest --wasmplugin envoy/istio/wasmplugin.yaml --wasmplugin-out build/istio/wasmplugin.yaml

clean:
	rm -rf build
