# ackfilter — top-level entry points. `make` alone lists the targets.
# Everything the targets install goes to .venv/, everything they build to build/.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

VENV   := .venv
PY     := $(VENV)/bin/python
ENV    := . scripts/env.sh &&
# pytest workers (pytest-xdist); 1 = serial. e.g. `make test JOBS=2`.
JOBS   ?= 1
PYTEST_ARGS ?=
TEST_DIRS := $(wildcard tests cocotb_tests)
# Tests: pytest collects warnings and prints a summary. User-facing commands:
# no library deprecation noise unless the caller asks (PYTHONWARNINGS=...).
RUN_WARN := PYTHONWARNINGS=$${PYTHONWARNINGS:-ignore::DeprecationWarning}

.PHONY: help venv test formal gatesim demo bench fuzz captures experiments experiments-quick verilog regmap firmware sim-soc reports bitstream flash clean

BOARD ?= colorlight-5a-75b
CABLE ?= ft232

help: ## list the targets
	@echo "ackfilter make targets:"
	@grep -E '^[a-z][a-zA-Z_-]*:.*## ' $(MAKEFILE_LIST) | \
	    awk -F':.*## ' '{printf "  make %-17s %s\n", $$1, $$2}'

venv: ## install system packages (if root) and the pinned .venv
	@bash scripts/bootstrap.sh

test: venv ## run every test (tests/ and cocotb_tests/; FIFO=1: the cocotb benches on the data-FIFO build of the core too)
	$(ENV) $(if $(FIFO),ACKFILTER_BOTH_BUILDS=1) $(PY) -m pytest -q --durations=15 $(if $(filter-out 1,$(JOBS)),-n $(JOBS) --dist loadgroup) $(PYTEST_ARGS) $(TEST_DIRS)

demo: venv ## replay the built-in scenario through the RTL and report
	$(ENV) $(RUN_WARN) $(VENV)/bin/ackfilter demo

bench: venv ## throughput/latency benchmark of the RTL in Verilator
	$(ENV) $(RUN_WARN) $(VENV)/bin/ackfilter bench

reports: venv ## area per block, Fmax per clock of the board, rev 7.0 and the other revisions (+ flow-table sweep of rev 7.0, NO_SWEEP=1 skips it; ~80 min on 2 cores) -> build/reports/
	$(ENV) $(RUN_WARN) $(PY) -m ackfilter.reports colorlight-5a-75b 5a-75b-v6.1 5a-75b-v8.0 5a-75b-v8.2 $(if $(NO_SWEEP),,--sweep --sweep-pnr)

bitstream: venv ## build build/bitstream/$(BOARD)/top.bit (BOARD=5a-75b-v6.1, -v7.0, -v8.0 or -v8.2; default colorlight-5a-75b = rev 7.0); fails when a clock misses timing (SWAP_PORTS=1: port 1 = LAN; SOC=0: without the control plane; MARGIN=0: the first seed that meets every target, not 10 % over)
	$(ENV) $(RUN_WARN) $(PY) -m ackfilter.board.build --board $(BOARD) $(if $(SWAP_PORTS),--swap-ports) $(if $(filter 0,$(SOC)),--no-control-plane) $(if $(MARGIN),--margin $(MARGIN))

flash: venv ## load the bitstream with openFPGALoader (SRAM; SPI=1 writes the SPI flash; CABLE=ft232)
	$(ENV) $(RUN_WARN) $(PY) -m ackfilter.board.build --board $(BOARD) --flash --cable $(CABLE) $(if $(SPI),--spi)

SEED   ?= 1
FRAMES ?= 1000000
formal: venv ## prove the safety invariants by k-induction, check their covers, and show each proof fails on its mutations (yowasp-sby, yices; minutes; DEEP=1: the covers too deep for every run too)
	$(ENV) $(PY) -m ackfilter.formal $(if $(DEEP),--deep)

gatesim: venv ## the board's whole cocotb bench on the synthesized gates (the bitstream's synthesis, ECP5 cell models); make test runs three of its cases
	$(ENV) ACKFILTER_GATESIM=all $(PY) -m pytest -q cocotb_tests/test_gatesim.py

fuzz: venv ## mutation campaign through the RTL, model + independent checker (SEED=1 FRAMES=1000000; ~5 min per million) -> build/fuzz/
	$(ENV) $(RUN_WARN) $(VENV)/bin/ackfilter fuzz --seed $(SEED) --frames $(FRAMES)

captures: ## (root) remake sim/captures/*.pcap.gz: real Linux TCP in network namespaces (~2 min)
	bash scripts/make_captures.sh

experiments: venv ## (root) real Linux TCP through the RTL: every scenario and variant (~140 min) -> build/experiments/full.*
	$(ENV) $(RUN_WARN) $(VENV)/bin/ackfilter experiments

experiments-quick: venv ## (root) S1, S3 at 64k, S5 at 28.8k (modem FIFO, default), latency under load at 1/16M (~5 min) -> build/experiments/quick.*
	$(ENV) $(RUN_WARN) $(VENV)/bin/ackfilter experiments --quick

verilog: venv ## generate build/verilog/ackfilter_core.v
	mkdir -p build/verilog
	$(ENV) $(RUN_WARN) $(PY) -m ackfilter.sim.gen_verilog -o build/verilog/ackfilter_core.v

regmap: venv ## regenerate the register map: firmware/include/ackfilter_regs.h, host-tools/ackfilter_ctl/regmap.json and units.py
	$(ENV) $(PY) -m ackfilter.regmap

firmware: ## build the control plane's firmware: firmware/build/firmware.elf and .bin (riscv64-unknown-elf-gcc)
	$(MAKE) -C firmware

sim-soc: venv ## the simulated SoC (CPU + firmware + datapath), its UART on localhost:$(or $(PORT),2323) for ackfilter-ctl --connect
	$(ENV) $(PY) -m ackfilter.sim.socsim --port $(or $(PORT),2323)

clean: ## remove build/ and firmware/build/ (keeps .venv)
	rm -rf build firmware/build
