# rigscope — two commands matter: `make run` and `make test`.
GO        ?= go
APT_PKGS  := gcc pkg-config libgl1-mesa-dev xorg-dev
SUDO      := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
# Seconds each fuzzer runs in `make test` (about 1 min for all of them with a
# warm build cache; `make fuzz` runs them longer).
CI_FUZZTIME ?= 3
export CGO_ENABLED := 1
# The packages with golden tests (TestGolden*), as ./dir paths.
GOLDEN_PKGS = $(shell grep -rl --include='*_test.go' '^func TestGolden' . | xargs -n1 dirname | sort -u)

.PHONY: run test deps build headless cuda vet fuzz bench kernels package clean

# Install the C headers Fyne's cgo build needs, once.
deps:
	@if ! pkg-config --exists gl x11 xrandr xcursor xinerama xi xxf86vm 2>/dev/null; then \
		echo "installing Fyne build dependencies: $(APT_PKGS)"; \
		$(SUDO) apt-get update -qq && DEBIAN_FRONTEND=noninteractive $(SUDO) apt-get install -y -qq $(APT_PKGS); \
	fi

build: deps
	$(GO) build -o bin/rigscope .

# Open the panel on the embedded synthetic default model.
run: build
	./bin/rigscope $(ARGS)

# go vet, every test with the race detector (UI tests need -tags ci), then
# the numerics-only golden tests (TestGolden*), which skip under -race
# because the detector slows the pure-Go kernels ~10x (only the packages
# that define one, found by grep, so the second pass builds no other test
# binary; vet ran already), then every parser fuzzer for CI_FUZZTIME seconds.
test: deps
	$(GO) vet -tags ci ./...
	$(GO) test -race -tags ci -timeout 15m ./...
	$(GO) test -tags ci -vet=off -timeout 10m -run 'Golden' $(GOLDEN_PKGS)
	FUZZTIME=$(CI_FUZZTIME) ./bench/fuzz.sh

# A binary without Fyne (no X libraries), e.g. for servers and the GPU machine.
headless:
	$(GO) build -tags headless -o bin/rigscope-headless .

# The CUDA build (needs cuda.h/libcuda.so: Debian non-free nvidia-cuda-dev).
cuda:
	$(GO) build -tags 'headless cuda' -o bin/rigscope-cuda .

fuzz:
	FUZZTIME=$${FUZZTIME:-60} ./bench/fuzz.sh

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./engine/...

kernels:
	$(GO) generate ./kernels

# A Linux desktop bundle (rigscope.tar.xz) with the icon from assets/.
# fyne package bumps Build in FyneApp.toml; the checkout's copy is restored.
package: deps
	$(GO) install fyne.io/tools/cmd/fyne@v1.7.4
	cp FyneApp.toml bin/FyneApp.toml.orig 2>/dev/null || (mkdir -p bin && cp FyneApp.toml bin/FyneApp.toml.orig)
	$$($(GO) env GOPATH)/bin/fyne package --os linux --release; status=$$?; cp bin/FyneApp.toml.orig FyneApp.toml; exit $$status

clean:
	rm -rf bin
