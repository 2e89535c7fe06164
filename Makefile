# The two commands a newcomer needs: `make demo` and `make test`. Both bootstrap .venv first.
# Other ROS 2 distributions and the minimum versions have their own venvs (README: Distributions):
#   make test-jazzy   ROS 2 Jazzy wheels, Python 3.12, .venv-jazzy
#   make test-min     setup.cfg's lowest versions, Python 3.10, no ROS, .venv-min
PYTHON := .venv/bin/python
# The tests that need no ROS: what the minimum-versions venv runs.
CORE_TESTS := test/core test/cli test/test_architecture.py test/test_bootstrap.py

.PHONY: bootstrap bootstrap-jazzy bootstrap-min test test-jazzy test-min demo bench clean

bootstrap:
	bash tools/bootstrap.sh

bootstrap-jazzy:
	bash tools/bootstrap.sh --distro jazzy

bootstrap-min:
	bash tools/bootstrap.sh --minimum

test: bootstrap
	$(PYTHON) -m pytest test

test-jazzy: bootstrap-jazzy
	.venv-jazzy/bin/python -m pytest test

test-min: bootstrap-min
	.venv-min/bin/python -m pytest $(CORE_TESTS)

demo: bootstrap
	.venv/bin/robot-dynid demo --out demo_output

bench: bootstrap
	$(PYTHON) bench/run_all.py --out BENCHMARKS.md

clean:
	rm -rf build .venv .venv-jazzy .venv-min demo_output
