#!/usr/bin/env bash
# Prepare a development environment from scratch on Debian 12 / Python 3.11, or bring it up to date:
#   1. cmake, a C/C++ compiler and make through apt, if absent (and Python's headers, for the
#      compiled regressor kernel);
#   2. .venv at the repository root with the pinned ROS 2 Kilted wheels (requirements/ros-kilted.txt)
#      and the core's dependencies (requirements/python.txt), reinstalled only when those files change;
#   3. the wheels' CMake exports point at the include directories of the machine they were built on:
#      those paths are rewritten to this venv's Python and numpy (once, after each install);
#   4. colcon builds the package (interfaces, Python package, executables) with --merge-install into
#      .venv, so .venv/bin/python imports robot_dynid.msg and .venv/bin/robot-dynid works.
# A second run only checks and re-runs the incremental colcon build (seconds).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
venv="$repo/.venv"
cd "$repo"

log() { printf 'bootstrap: %s\n' "$*" >&2; }

install_system_packages() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v g++ >/dev/null || missing+=(g++)
    command -v gcc >/dev/null || missing+=(gcc)
    command -v make >/dev/null || missing+=(make)
    [ ${#missing[@]} -eq 0 ] || apt_install "${missing[@]}"
}

apt_install() {
    log "installing $* with apt-get"
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q "$@"
}

find_python() {
    # The Kilted wheels on PyPI are built for CPython 3.11 only.
    local candidate
    for candidate in "${PYTHON:-}" python3.11 python3; do
        [ -n "$candidate" ] || continue
        if command -v "$candidate" >/dev/null &&
            "$candidate" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' 2>/dev/null; then
            command -v "$candidate"
            return
        fi
    done
    log "error: Python 3.11 is required for the ROS 2 Kilted wheels (set PYTHON=/path/to/python3.11)"
    exit 1
}

install_python_packages() {
    local stamp="$venv/.requirements.sha256" wanted
    wanted=$(cat requirements/ros-kilted.txt requirements/python.txt | sha256sum | cut -d' ' -f1)
    if [ ! -x "$venv/bin/python" ]; then
        local python
        python=$(find_python)
        # Debian's system Python ships venv's pip bootstrap (ensurepip) and the C headers (for the
        # regressor kernel, robot_dynid/_regressor_kernel.c) separately.
        "$python" -c 'import ensurepip' 2>/dev/null || apt_install python3.11-venv
        "$python" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
            apt_install python3.11-dev
        log "creating $venv"
        "$python" -m venv "$venv"
    fi
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$wanted" ]; then
        return
    fi
    log "installing pinned Python packages into .venv (about a minute with a warm cache)"
    mkdir -p build
    "$venv/bin/python" -m pip install --disable-pip-version-check \
        -r requirements/ros-kilted.txt -r requirements/python.txt >build/pip-install.log 2>&1 || {
        tail -n 40 build/pip-install.log >&2
        log "error: pip install failed; full log in build/pip-install.log"
        exit 1
    }
    rewrite_wheel_include_paths
    echo "$wanted" >"$stamp"
}

rewrite_wheel_include_paths() {
    local py_include numpy_include
    py_include=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
    numpy_include=$("$venv/bin/python" -c 'import numpy; print(numpy.get_include())')
    log "pointing the wheels' CMake exports at $py_include and $numpy_include"
    # grep exits 1 when no file is left to rewrite (a second run): that is not a failure under pipefail
    { grep -rlF "/opt/python/cp311-cp311/" "$venv/share" --include='*.cmake' 2>/dev/null || true; } |
        while read -r file; do
            sed -i \
                -e "s#/opt/python/cp311-cp311/lib/python3.11/site-packages/numpy/_core/include#$numpy_include#g" \
                -e "s#/opt/python/cp311-cp311/include/python3.11#$py_include#g" \
                "$file"
        done
}

build_package() {
    log "colcon build (incremental)"
    # colcon must not crawl into the build products or the venv's share/ (it holds package.xml files).
    mkdir -p build
    touch build/COLCON_IGNORE "$venv/COLCON_IGNORE"
    AMENT_PREFIX_PATH="$venv" CMAKE_PREFIX_PATH="$venv" PATH="$venv/bin:$PATH" \
        "$venv/bin/colcon" --log-base build/colcon-log build \
        --base-paths "$repo" \
        --build-base build/colcon \
        --install-base "$venv" --merge-install --symlink-install \
        --cmake-args -DPython3_EXECUTABLE="$venv/bin/python" -DBUILD_TESTING=OFF \
        >build/colcon-build.log 2>&1 || {
        tail -n 60 build/colcon-build.log >&2
        log "error: colcon build failed; full log in build/colcon-build.log"
        exit 1
    }
    # A symlink install keeps links to source files that have since been removed or moved.
    local site
    site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
    find "$site/robot_dynid" "$venv/lib/robot_dynid" -xtype l -delete 2>/dev/null || true
}

install_system_packages
install_python_packages
build_package
"$venv/bin/python" -c 'import robot_dynid.msg, robot_dynid.srv' || {
    log "error: the built interfaces do not import from .venv/bin/python"
    exit 1
}
log "ready: .venv/bin/robot-dynid, .venv/bin/python"
