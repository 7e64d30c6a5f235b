# rlab — build, test, demo. `make help` lists the targets.
SHELL   := /bin/bash
GO      ?= go
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
BIN     := bin
AGENT_SRC := $(shell find agent -name '*.go' -not -name '*_test.go' 2>/dev/null) go.mod go.sum
# Local VM images are cached here (never in the checkout).
RLAB_CACHE ?= /var/tmp/rlab-cache
export RLAB_CACHE

.PHONY: help deps deps-demo agent build test test-unit test-netns test-vm fuzz-smoke lint demo vm-image bench clean

help:
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed 's/:.*## /\t/' | column -t -s $$'\t'

deps: ## install the Debian packages the tests need, the demo's included (root)
	./testdata/deps.sh test

deps-demo: ## install only what make demo needs: qemu, mmdebstrap, e2fsprogs, graphviz (root)
	./testdata/deps.sh demo

agent: agent/dist/bin/rlab-agent-linux-amd64.gz agent/dist/bin/rlab-agent-linux-arm64.gz ## build the agent for linux/amd64 and arm64

# The binaries are built outside the embedded folder (agent/dist/build);
# rlab embeds them gzip'd, as they are shipped, with their sha256 beside.
.SECONDARY: agent/dist/build/rlab-agent-linux-amd64 agent/dist/build/rlab-agent-linux-arm64
agent/dist/build/rlab-agent-linux-%: $(AGENT_SRC)
	CGO_ENABLED=0 GOOS=linux GOARCH=$* $(GO) build -trimpath -ldflags "-s -w -X main.version=$(VERSION)" -o $@ ./agent/cmd/rlab-agent

agent/dist/bin/rlab-agent-linux-%.gz: agent/dist/build/rlab-agent-linux-%
	@rm -f agent/dist/bin/rlab-agent-linux-$*
	sha256sum $< | cut -d' ' -f1 > agent/dist/bin/rlab-agent-linux-$*.sha256.part
	gzip -9 -n -c $< > $@.part
	mv -f agent/dist/bin/rlab-agent-linux-$*.sha256.part agent/dist/bin/rlab-agent-linux-$*.sha256 && mv -f $@.part $@

build: agent ## build bin/rlab with the agent embedded
	$(GO) build -trimpath -ldflags "-X main.version=$(VERSION)" -o $(BIN)/rlab ./cmd/rlab

# test-netns runs every test test-unit runs (the netns ones skip without
# RLAB_NETNS=1; none runs only without it), so the whole suite runs the unit
# tests once, there, rather than twice.
test: deps build ## the whole suite: lint, fuzz smoke, unit + netns sshd hosts, real rxe in QEMU VMs (root)
	$(MAKE) lint
	$(MAKE) fuzz-smoke
	$(MAKE) test-netns
	$(MAKE) test-vm

test-unit: agent ## unit tests only (fast, no root)
	$(GO) test -count=1 ./...

# The netns tests run with a home of their own: a test that records a host
# key where the user's default known_hosts is (accept-new writes only there)
# must never leave the bed's throwaway keys in the real ~/.ssh. Go's caches
# stay the user's: they are read before HOME changes (read on the command
# line that sets HOME, they were the new home's, empty, and the run below
# downloaded every module and compiled everything again, one at a time).
test-netns: build ## every unit test plus the integration tests on network-namespace hosts with real sshd (root)
	$(GO) test -count=1 -run '^$$' ./... >/dev/null # compile every test binary in parallel first; the run below is -p 1
	home=$$(mktemp -d /tmp/rlab-test-home.XXXXXX) && \
	gocache=$$($(GO) env GOCACHE) && gomodcache=$$($(GO) env GOMODCACHE) && gopath=$$($(GO) env GOPATH) && \
	HOME=$$home GOCACHE=$$gocache GOMODCACHE=$$gomodcache GOPATH=$$gopath \
	RLAB_NETNS=1 RLAB_BIN=$(CURDIR)/$(BIN)/rlab ./testdata/test-summary.sh $(GO) test -count=1 -p 1 -timeout 20m ./...; \
	rc=$$?; rm -rf "$$home"; exit $$rc

test-vm: build ## real Soft-RoCE end to end in two QEMU VMs (root; builds the image once)
	RLAB_VM_E2E=1 RLAB_BIN=$(CURDIR)/$(BIN)/rlab ./testdata/test-summary.sh $(GO) test -count=1 -p 1 -timeout 40m -run 'E2E' -v ./agent/e2e/... ./engine/vm/...

fuzz-smoke: agent ## run every fuzz target briefly (the lab parser for 60 s)
	./testdata/fuzz-smoke.sh

lint: agent ## gofmt, go vet, staticcheck
	@test -z "$$(gofmt -l . | tee /dev/stderr)" || { echo "gofmt: files above need formatting"; exit 1; }
	$(GO) vet ./...
	$(GO) run honnef.co/go/tools/cmd/staticcheck@v0.8.2 ./...

vm-image: build ## build (or reuse) the cached Debian VM image with rdma_rxe, perftest, tcpdump
	$(BIN)/rlab image build

demo: deps-demo build vm-image ## boot two local VMs and run labs/quickstart.hcl on them; print the summary and the run directory
	$(BIN)/rlab run labs/quickstart.hcl; rc=$$?; \
	dir=$$($(BIN)/rlab runs --lab quickstart --last runs); \
	[ -n "$$dir" ] && $(BIN)/rlab show "$$dir" && echo "run directory: $$dir"; exit $$rc

bench: build ## benchmarks (see BENCHMARKS.md)
	$(GO) test -run '^$$' -bench . -benchtime 20x ./engine/...

clean:
	rm -rf $(BIN) agent/dist/bin/rlab-agent-* agent/dist/build
