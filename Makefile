# Dafka: install, run, test, bench, lint. Everything installs into .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-$(shell cat setup.cfg pyproject.toml | cksum | cut -d' ' -f1)
SRC    := dafka tower pyspark_dafka tests benchmarks examples
PYTEST_ARGS ?=

.PHONY: install java fault-deps doc-deps fiu kcat chromium promtool reference run test test-unit test-integration faults bench bench-spark pipeline lint format clean

install: $(STAMP) java fiu kcat chromium promtool

# the faults extra (pyfuse3, for the power-loss layer) builds against libfuse3: without it
# the suite skips the power-loss scenarios and says why
$(STAMP): setup.cfg pyproject.toml | fault-deps doc-deps
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip setuptools wheel
	if pkg-config --exists fuse3 2>/dev/null; then \
	  $(BIN)/python -m pip install --quiet -e '.[test,dev,spark,faults,otel]'; \
	else \
	  $(BIN)/python -m pip install --quiet -e '.[test,dev,spark,otel]'; \
	fi
	rm -f $(VENV)/.installed-*
	touch $@

# $(call apt_install,CHECK,WHAT,PACKAGES,WARNING[,AFTER]): install Debian PACKAGES with apt-get
# (as root) unless the shell command CHECK succeeds, saying "installing WHAT"; without root or
# apt-get, say "warning: WARNING" and go on. AFTER runs once they are installed.
define apt_install
	@if ! { $(1); } >/dev/null 2>&1; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
	    echo "installing $(2)"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
	      apt-get install -y -qq --no-install-recommends $(3) >/dev/null$(if $(5),; $(5)); \
	  else \
	    echo "warning: $(4)"; \
	  fi; \
	fi
endef

doc-deps:  ## curl, which the docs' examples use (tests/integration/test_docs_examples.py runs them), from apt
	$(call apt_install,command -v curl,curl (the docs' metrics examples scrape with it),curl,no curl: the docs' metrics examples will fail)

FAULT_DEBS := fuse3 libfuse3-dev pkg-config gcc libfaketime
fault-deps:  ## the fault suite's power-loss layer (FUSE, for pyfuse3) and libfaketime (a store's clock jumps in its retention test), from apt
	$(call apt_install,pkg-config --exists fuse3 && command -v fusermount3 && ls /usr/lib/*/faketime/libfaketimeMT.so.1,the fault suite's system packages ($(FAULT_DEBS)),$(FAULT_DEBS),no libfuse3: the fault suite's power-loss scenarios will be skipped)

java:  ## Spark (the spark extra) needs a Java 17+ runtime: install one with apt-get if missing
	$(call apt_install,command -v java,a Java runtime for Spark (openjdk-17-jre-headless),openjdk-17-jre-headless,no java: Spark tests will be skipped (install a Java 17+ runtime))

fiu:  ## libfiu's fiu-run/fiu-ctrl (Debian fiu-utils) inject EIO into a store's fsync in its tests
	$(call apt_install,command -v fiu-run,libfiu's tools for the EIO tests (fiu-utils),fiu-utils,no fiu-run: the EIO tests will be skipped (install fiu-utils))

kcat:  ## kcat (Debian's kcat, on librdkafka) is one of the real Kafka clients tests/integration/kafka runs
	$(call apt_install,command -v kcat,kcat for the Kafka front door's client tests (kcat),kcat,no kcat: its Kafka client tests will be skipped (install kcat))

chromium:  ## Debian's chromium: the browser tests/e2e/test_console_browser.py drives (Playwright, never its download)
	$(call apt_install,[ -x /usr/bin/chromium ],chromium for the console's browser test,chromium,no /usr/bin/chromium: the console's browser test will be skipped (failed under CI=true; install chromium))

promtool:  ## promtool and prometheus (Debian's prometheus) check deploy/prometheus and deploy/grafana in tests/integration/test_deploy_dashboards.py
	$(call apt_install,command -v promtool,promtool for the alert rules' tests (prometheus),prometheus,no promtool: the alert rules' tests will be skipped (install prometheus),systemctl disable --now prometheus.service >/dev/null 2>&1 || true)

reference:  ## the ØMQ RAFT reference server (npm zmq-raft 0.5.0) for the interop tests and benchmark
	@tests/interop/reference/install.sh .reference/zmq-raft

run: $(STAMP)  ## a tower, a store and a Kafka listener (9092) on 127.0.0.1, data under .dafka/ (the Python packages only: the browser, promtool, kcat and Java are for the tests)
	$(BIN)/dafka-local --kafka-port 9092

test: install reference  ## the whole suite: unit, integration (real processes), end-to-end CLI
	$(BIN)/python -m pytest $(PYTEST_ARGS)

test-unit: install
	$(BIN)/python -m pytest tests/unit $(PYTEST_ARGS)

test-integration: install reference
	$(BIN)/python -m pytest tests/integration tests/interop tests/e2e $(PYTEST_ARGS)

faults: install  ## fault injection: 10 seeds x 120 s per min_acks (1 and 2), then issue 33's scenarios; JSON in .faults/
	mkdir -p .faults
	rc=0; \
	$(BIN)/python -m tests.faults --seeds 10 --seconds 120 --min-acks 1 --min-acks 2 \
	  --workdir .faults/run --json .faults/results.json || rc=1; \
	$(BIN)/python -m tests.faults --scenario all --seeds 2 --seconds 90 \
	  --workdir .faults/scenarios --json .faults/scenarios.json || rc=1; \
	exit $$rc

bench: install reference  ## throughput (signed and rfc46), Raft and re-replication (1M records to a fresh store) benchmarks; JSON in benchmarks/results/
	$(BIN)/python -m benchmarks.throughput --profile signed --consume batches
	$(BIN)/python -m benchmarks.throughput --profile rfc46 --api one
	$(BIN)/python -m benchmarks.raft
	$(BIN)/python -m benchmarks.rereplicate

bench-spark: install  ## a 1,000,000-record micro-batch read through format("dafka")
	$(BIN)/python -m benchmarks.spark_read

pipeline: install  ## the Spark example: events -> windowed counts per user -> a consumer
	$(BIN)/python examples/spark_pipeline.py

lint: install
	$(BIN)/ruff format --check --line-length 100 $(SRC)
	$(BIN)/ruff check --line-length 100 --select E,F,W,I,B,UP --ignore E501,B008 $(SRC)
	$(BIN)/mypy dafka tower benchmarks

format: install
	$(BIN)/ruff format --line-length 100 $(SRC)
	$(BIN)/ruff check --fix --line-length 100 --select E,F,W,I,B,UP --ignore E501,B008 $(SRC)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info .reference
