#!/usr/bin/env bash
# Prepare a development environment from scratch on Debian 12, or bring it up to date.
#
#   tools/bootstrap.sh [--distro kilted|jazzy]    ROS 2 venv (default kilted)
#   tools/bootstrap.sh --minimum                  core-only venv with setup.cfg's lowest versions
#
# ROS 2 venv (--distro):
#   1. cmake, a C/C++ compiler, make and chromium (the pages' browser test) through apt, if absent
#      (and Python's headers, for the compiled regressor kernel);
#   2. a venv at the repository root with the pinned ROS 2 wheels of the distribution from PyPI
#      (requirements/ros-<distro>.txt), the core's dependencies and test tools (requirements/python.txt) and the
#      documentation site's (requirements/docs.txt),
#      reinstalled only when those files change:
#        kilted: .venv,        Python 3.11, requirements/ros-kilted.txt, build products in build/
#        jazzy:  .venv-jazzy,  Python 3.12, requirements/ros-jazzy.txt,  build products in build/jazzy/
#   3. the wheels' CMake exports name the include directories of the machine they were built on
#      (/opt/python/cp3XX-cp3XX/...): those paths are rewritten to this venv's Python and numpy;
#   4. colcon builds the package (interfaces, Python package, executables) with --merge-install into
#      the venv, so <venv>/bin/python imports robot_dynid.msg and <venv>/bin/robot-dynid works.
#
# Minimum versions (--minimum): .venv-min with Python 3.10 and, for every `name>=X` of setup.cfg's
# install_requires and extras, exactly version X (tools/minimum_constraints.py writes them to
# build/minimum/minimum.txt), plus the test tools pinned in requirements/python.txt; the package is
# pip-installed (its C kernel compiled) into it, and `pip check` must pass. No ROS.
#
# A second run only checks and re-runs the incremental build (seconds). Python interpreters are
# looked up as $PYTHON, pythonX.Y on PATH, then pyenv's $PYENV_ROOT/versions/X.Y.*.
set -Eeuo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"

log() { printf 'bootstrap: %s\n' "$*" >&2; }

usage() {
    sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//' >&2
}

parse_arguments() {
    distro=kilted
    mode=ros
    arguments=("$@")
    while [ $# -gt 0 ]; do
        case "$1" in
            --distro) [ $# -ge 2 ] || { usage; exit 2; }; distro=$2; shift 2 ;;
            --distro=*) distro=${1#--distro=}; shift ;;
            --minimum) mode=minimum; shift ;;
            -h | --help) usage; exit 0 ;;
            *) log "error: unknown argument '$1'"; usage; exit 2 ;;
        esac
    done

    if [ "$mode" = minimum ]; then
        python_version=3.10
        venv="$repo/.venv-min"
        build="$repo/build/minimum"
    else
        case "$distro" in
            kilted) python_version=3.11; venv="$repo/.venv"; build="$repo/build" ;;
            jazzy) python_version=3.12; venv="$repo/.venv-jazzy"; build="$repo/build/jazzy" ;;
            *) log "error: unknown distribution '$distro' (expected kilted or jazzy)"; usage; exit 2 ;;
        esac
        requirements=("requirements/ros-$distro.txt" requirements/python.txt requirements/docs.txt)
    fi
    retry="bash tools/bootstrap.sh${arguments[*]:+ ${arguments[*]}}"
}

# Every failure says which step failed and how to retry; `die` for the failures found by a check,
# the ERR trap for any command that fails unexpectedly (set -e would otherwise exit silently).
step="start"
retry="bash tools/bootstrap.sh"
build="$repo/build"
die() {
    log "error: $*"
    log "step '$step' failed; fix the cause and retry with: $retry"
    exit 3
}
on_error() {
    local status=$1 line=$2 command=$3
    # A failure inside $(...) or a pipeline is reported once, by the main shell; die reported itself.
    [ "$BASH_SUBSHELL" -eq 0 ] || return 0
    [ "$status" -eq 3 ] && return 0
    log "error: step '$step' failed: '$command' exited with status $status (tools/bootstrap.sh line $line)"
    log "fix the cause and retry with: $retry (logs in ${build#"$repo"/}/)"
}
report_failures() {
    trap 'on_error $? $LINENO "$BASH_COMMAND"' ERR
}

install_system_packages() {
    step="system packages"
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v g++ >/dev/null || missing+=(g++)
    command -v gcc >/dev/null || missing+=(gcc)
    command -v make >/dev/null || missing+=(make)
    # the browser test of the report and fleet pages (test/browser_pages.py) drives Debian's
    # chromium through Playwright (requirements/python.txt); Playwright's own browser download needs a network
    command -v chromium >/dev/null || missing+=(chromium)
    [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

apt_install() {
    log "installing $* with apt-get"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q || die "apt-get update failed"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@" || die "apt-get install $* failed"
}

is_wanted_python() {
    "$1" -c "import sys; sys.exit(sys.version_info[:2] != tuple(map(int, '$python_version'.split('.'))))" \
        2>/dev/null
}

find_python() {
    # The ROS wheels on PyPI are built for one CPython per venv: Kilted cp311, Jazzy cp310-cp312.
    local candidate
    for candidate in "${PYTHON:-}" "python$python_version" python3 \
        "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$python_version".*/bin/"python$python_version"; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null && is_wanted_python "$candidate"; then
            command -v "$candidate"
            return
        fi
    done
    die "Python $python_version is required for $(basename "$venv") and was not found as \$PYTHON," \
        "python$python_version, python3 or under \$PYENV_ROOT/versions; install it (e.g." \
        "'pyenv install $python_version') or set PYTHON=/path/to/python$python_version"
}

create_venv() {
    step="create $(basename "$venv")"
    if [ -x "$venv/bin/python" ]; then
        is_wanted_python "$venv/bin/python" ||
            die "$venv exists but its Python is not $python_version; remove it (rm -rf $venv) and retry"
        return
    fi
    local python
    python=$(find_python)
    # Debian's system Python ships venv's pip bootstrap (ensurepip) and the C headers (for the
    # regressor kernel, robot_dynid/_regressor_kernel.c) separately.
    "$python" -c 'import ensurepip' 2>/dev/null || apt_install "python$python_version-venv"
    "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
        apt_install "python$python_version-dev"
    log "creating $venv with $python"
    "$python" -m venv "$venv"
    # colcon must not crawl the venv (its share/ holds package.xml files), whichever venv builds.
    touch "$venv/COLCON_IGNORE"
}

# pip install "$@" into the venv, the output in $build/pip-install.log; a resolver that has not
# finished after PIP_TIME_LIMIT seconds (default 1200) fails instead of stalling a CI run.
pip_install() {
    mkdir -p "$build"
    local status=0
    timeout "${PIP_TIME_LIMIT:-1200}" "$venv/bin/python" -m pip install --disable-pip-version-check "$@" \
        >"$build/pip-install.log" 2>&1 || status=$?
    [ "$status" -eq 0 ] && return 0
    tail -n 40 "$build/pip-install.log" >&2
    [ "$status" -eq 124 ] &&
        die "pip install did not finish within ${PIP_TIME_LIMIT:-1200} s (resolver backtracking?); full log in $build/pip-install.log"
    die "pip install failed; full log in $build/pip-install.log"
}

# The venv's pip at requirements/pip.txt's version before anything else is installed.
install_pip() {
    step="pip install (requirements/pip.txt)"
    local wanted
    wanted=$(sed -n 's/^pip==//p' requirements/pip.txt)
    [ "$("$venv/bin/python" -m pip --version | cut -d' ' -f2)" = "$wanted" ] && return 0
    log "installing pip $wanted into $(basename "$venv") (requirements/pip.txt)"
    pip_install -r requirements/pip.txt
}

install_python_packages() {
    step="pip install (${requirements[*]})"
    local stamp="$venv/.requirements.sha256" wanted
    wanted=$({ echo "python $python_version"; cat "${requirements[@]}"; } | sha256sum | cut -d' ' -f1)
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
        return
    fi
    log "installing the pinned Python packages of ${requirements[*]} into $(basename "$venv")" \
        "(a few minutes from scratch, about a minute with a warm cache)"
    rm -f "$stamp"
    local arguments=() file
    for file in "${requirements[@]}"; do arguments+=(-r "$file"); done
    pip_install "${arguments[@]}"
    echo "$wanted" >"$stamp"
}

# The wheels' exported CMake targets name /opt/python/cp3XX-cp3XX/include/python3.XX and
# .../site-packages/numpy/_core/include of the machine they were built on (cp311 for Kilted, the
# venv's tag for Jazzy); CMake's generate step rejects non-existent include paths.
rewrite_wheel_include_paths() {
    step="rewrite the wheels' CMake include paths"
    local py_include numpy_include
    py_include=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    numpy_include=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
    rewrite_include_paths "$venv" "$py_include" "$numpy_include"
}

# rewrite_include_paths PREFIX PY_INCLUDE NUMPY_INCLUDE: in PREFIX/share/**/*.cmake, every
# /opt/python/cp3XX-cp3XX/ Python include path becomes PY_INCLUDE and numpy include path becomes
# NUMPY_INCLUDE, and so does an earlier rewrite's PREFIX/lib/python3.X/site-packages/numpy include
# path (numpy reinstalled). Idempotent: a run that finds nothing to rewrite changes nothing. Fails
# (die) when an /opt/python path of another form is left.
rewrite_include_paths() {
    local prefix=$1 py_include=$2 numpy_include=$3 files left
    local numpy_path='/lib/python3\.[0-9]+/site-packages/numpy/_?core/include'
    local build_machine='/opt/python/cp3[0-9]+-cp3[0-9]+'
    # grep exits 1 when nothing matches (a second run): that is not a failure under pipefail.
    files=$(grep -rlE --include='*.cmake' "$build_machine/" "$prefix/share" || true)
    if [ -n "$(grep -rhoE --include='*.cmake' "$prefix$numpy_path" "$prefix/share" | sort -u |
        grep -vxF "$numpy_include" || true)" ]; then
        files=$(grep -rlE --include='*.cmake' "$build_machine/|$prefix$numpy_path" "$prefix/share")
    fi
    if [ -n "$files" ]; then
        log "pointing the wheels' CMake exports at $py_include and $numpy_include"
        while read -r file; do
            sed -i -E \
                -e "s#$build_machine$numpy_path#$numpy_include#g" \
                -e "s#$prefix$numpy_path#$numpy_include#g" \
                -e "s#$build_machine/include/python3\.[0-9]+#$py_include#g" \
                "$file"
        done <<<"$files"
    fi
    left=$(grep -rhoE --include='*.cmake' '/opt/python/[^;" )]*' "$prefix/share" | sort -u || true)
    [ -z "$left" ] || die "the wheels' CMake exports in $prefix/share still name build-machine" \
        "paths that tools/bootstrap.sh cannot rewrite: $(echo "$left" | tr '\n' ' ')"
}

build_package() {
    step="colcon build"
    log "colcon build (incremental) into $(basename "$venv")"
    # colcon must not crawl into the build products or any venv (their share/ holds package.xml files).
    mkdir -p "$build"
    touch "$repo/build/COLCON_IGNORE"
    local other
    for other in "$repo"/.venv*/; do touch "$other/COLCON_IGNORE"; done
    AMENT_PREFIX_PATH="$venv" CMAKE_PREFIX_PATH="$venv" PATH="$venv/bin:$PATH" \
        "$venv/bin/colcon" --log-base "$build/colcon-log" build \
        --base-paths "$repo" \
        --build-base "$build/colcon" \
        --install-base "$venv" --merge-install --symlink-install \
        --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
        >"$build/colcon-build.log" 2>&1 || {
        tail -n 60 "$build/colcon-build.log" >&2
        die "colcon build failed; full log in $build/colcon-build.log"
    }
    # A symlink install keeps links to source files that have since been removed or moved.
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    find "$site/robot_dynid" "$venv/lib/robot_dynid" -xtype l -delete 2>/dev/null || true
    step="check the build"
    "$venv/bin/python" -c 'import robot_dynid.msg, robot_dynid.srv' ||
        die "the built interfaces do not import from $venv/bin/python"
}

# --minimum: the dependencies at exactly setup.cfg's floors (build/minimum/minimum.txt, written by
# tools/minimum_constraints.py), then the package itself without dependencies, reinstalled when its
# files change (the tests import the source tree, but the C kernel and bin/robot-dynid come from the
# install); pip check then verifies that setup.cfg's ranges hold for what is installed.
install_minimum_versions() {
    step="write the minimum versions (tools/minimum_constraints.py)"
    mkdir -p "$build"
    "$venv/bin/python" tools/minimum_constraints.py setup.cfg requirements/python.txt >"$build/minimum.txt"
    local stamp="$venv/.requirements.sha256" wanted
    wanted=$({ echo "python $python_version"; cat "$build/minimum.txt"; } | sha256sum | cut -d' ' -f1)
    if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$wanted" ]; then
        step="pip install the minimum versions (build/minimum/minimum.txt)"
        log "installing setup.cfg's minimum versions into $(basename "$venv") (build/minimum/minimum.txt)"
        rm -f "$stamp" "$venv/.package.sha256"
        pip_install -r "$build/minimum.txt"
        echo "$wanted" >"$stamp"
    fi
    step="pip install the package"
    local package_stamp="$venv/.package.sha256" package
    package=$(find robot_dynid msg srv config setup.py setup.cfg -type f -not -path '*/__pycache__/*' \
        -not -name '*.so' -print0 | sort -z | xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
    if [ ! -f "$package_stamp" ] || [ "$(cat "$package_stamp")" != "$package" ]; then
        log "installing robot-dynid into $(basename "$venv")"
        pip_install --no-deps --force-reinstall "$repo"
        echo "$package" >"$package_stamp"
    fi
    step="pip check"
    "$venv/bin/python" -m pip check >"$build/pip-check.log" 2>&1 || {
        cat "$build/pip-check.log" >&2
        die "the installed versions do not satisfy the declared requirements (pip check above)"
    }
}

main() {
    parse_arguments "$@"
    report_failures
    install_system_packages
    create_venv
    install_pip
    if [ "$mode" = minimum ]; then
        install_minimum_versions
        log "ready: $venv/bin/python (Python $python_version, setup.cfg's minimum versions)"
    else
        install_python_packages
        rewrite_wheel_include_paths
        build_package
        log "ready: $venv/bin/robot-dynid, $venv/bin/python (ROS 2 $distro, Python $python_version)"
    fi
}

# Sourced (test/test_bootstrap.py), it only defines the functions.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
