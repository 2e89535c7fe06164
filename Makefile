# The two commands a newcomer needs: `make demo` and `make test`. Both bootstrap .venv first.
# Other ROS 2 distributions and the minimum versions have their own venvs (docs/development.md: Distributions):
#   make test-jazzy   ROS 2 Jazzy wheels, Python 3.12, .venv-jazzy: the tests that touch ROS 2
#   make test-min     setup.cfg's lowest versions, Python 3.10, no ROS, .venv-min
PYTHON := .venv/bin/python
# The tests that need no ROS: what the minimum-versions venv runs.
CORE_TESTS := test/core test/cli test/test_architecture.py test/test_architecture_doc.py test/test_bootstrap.py \
	test/test_docs.py test/test_real_world.py test/test_tests_layout.py
# The tests that touch ROS 2 (rclpy, the generated interfaces, rosbag2, launch files, the ROS demo):
# what a second distribution runs. The rest is pure Python, run on 3.11 (test) and 3.10 (test-min).
ROS_TESTS := test/ros test/test_launch_files.py test/test_package_xml.py test/test_architecture.py \
	test/core/recordings/test_bag_io.py test/cli/test_demo.py test/cli/test_cli_bad_input.py test/cli/test_cli_hydraulic.py

.PHONY: bootstrap bootstrap-jazzy bootstrap-min test test-jazzy test-min demo bench clean lint colcon-test docs

bootstrap:
	bash tools/bootstrap.sh

bootstrap-jazzy:
	bash tools/bootstrap.sh --distro jazzy

bootstrap-min:
	bash tools/bootstrap.sh --minimum

# `make test`: the pure-Python tests on both cores (one test file per worker), then the tests whose nodes
# keep wall-clock time (ROS graphs, the ROS demo) one at a time; both run, and a failure of either fails.
PARALLEL := -n 2 --dist loadfile
SERIAL_TESTS := test/ros test/cli/test_demo.py test/test_launch_files.py test/test_package_xml.py

test: bootstrap
	@status=0; \
	$(PYTHON) -m pytest $(PARALLEL) $(CORE_TESTS) --ignore=test/cli/test_demo.py || status=1; \
	$(PYTHON) -m pytest $(SERIAL_TESTS) || status=1; \
	exit $$status

test-jazzy: bootstrap-jazzy
	.venv-jazzy/bin/python -m pytest $(ROS_TESTS)

test-min: bootstrap-min
	.venv-min/bin/python -m pytest $(PARALLEL) $(CORE_TESTS)

demo: bootstrap
	.venv/bin/robot-dynid demo --out demo_output

# The documentation site (docs/conf.py): the guides, the API reference and the command and node references
# generated from the code; any warning fails the build. Open docs/_build/html/index.html.
docs: bootstrap
	rm -rf docs/_build docs/_api docs/reference
	$(PYTHON) -m sphinx -W --keep-going -q -b html docs docs/_build/html

bench: bootstrap
	$(PYTHON) bench/run_all.py --out BENCHMARKS.md

clean:
	rm -rf build .venv .venv-jazzy .venv-min demo_output docs/_build docs/_api docs/reference test-artifacts

# Lint and colcon test (CMakeLists.txt lints the same paths).
LINT_PATHS := robot_dynid test bench tools launch setup.py docs/conf.py
# ament_pep257 reads no config file: its ignore list comes from setup.cfg's [pydocstyle] section.
PEP257_IGNORE = $(shell $(PYTHON) -c "import configparser; c = configparser.ConfigParser(); \
	c.read('setup.cfg'); print(' '.join(c['pydocstyle']['ignore'].replace(',', ' ').split()))")
VENV := $(CURDIR)/.venv
# colcon with the venv's ROS 2 wheels, as tools/bootstrap.sh runs it
COLCON := AMENT_PREFIX_PATH=$(VENV) CMAKE_PREFIX_PATH=$(VENV) PATH=$(VENV)/bin:$$PATH $(VENV)/bin/colcon

# ament_flake8 and ament_pep257 with the policy in setup.cfg, as `colcon test` runs them; both run,
# and a finding of either fails the target.
lint: bootstrap
	@status=0; \
	.venv/bin/ament_flake8 --config setup.cfg $(LINT_PATHS) >build/lint-flake8.log 2>&1 || { \
		sed '/^Checked files:/,$$d' build/lint-flake8.log; status=1; }; \
	.venv/bin/ament_pep257 $(LINT_PATHS) --ignore $(PEP257_IGNORE) >build/lint-pep257.log 2>&1 || { \
		grep -v '^checking ' build/lint-pep257.log; status=1; }; \
	if [ $$status -eq 0 ]; then echo "lint: ament_flake8 and ament_pep257 found no problems"; \
	else echo "lint: failed (full output in build/lint-flake8.log, build/lint-pep257.log)"; fi; \
	exit $$status

# The package tested as a ROS workspace tests it: built with BUILD_TESTING=ON in its own build
# directory (the bootstrap's build stays BUILD_TESTING=OFF), installed into .venv as the bootstrap
# installs it, then `colcon test` (the pytest suite, flake8, pep257) and the result of each test.
colcon-test: bootstrap
	$(COLCON) --log-base build/colcon-test-log build --base-paths $(CURDIR) \
		--build-base build/colcon-test --install-base $(VENV) --merge-install --symlink-install \
		--cmake-args -DPython3_EXECUTABLE=$(VENV)/bin/python -DBUILD_TESTING=ON
	@status=0; \
	$(COLCON) --log-base build/colcon-test-log test --base-paths $(CURDIR) \
		--build-base build/colcon-test --install-base $(VENV) --merge-install \
		--event-handlers console_direct+ --return-code-on-test-failure || status=1; \
	$(COLCON) test-result --test-result-base build/colcon-test --verbose || status=1; \
	exit $$status
