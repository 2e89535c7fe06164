# The two commands a newcomer needs: `make demo` and `make test`. Both bootstrap .venv first.
PYTHON := .venv/bin/python

.PHONY: bootstrap test demo bench clean

bootstrap:
	bash tools/bootstrap.sh

test: bootstrap
	$(PYTHON) -m pytest test

demo: bootstrap
	.venv/bin/robot-dynid demo --out demo_output

bench: bootstrap
	$(PYTHON) bench/run_all.py --out BENCHMARKS.md

clean:
	rm -rf build .venv demo_output
