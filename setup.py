"""pip installation of the numeric core and the robot-dynid CLI, no ROS needed (a C compiler is:
the regressor kernel and the online kernel are small C extensions).

ROS users build the whole package (interfaces, nodes, launch files) with colcon instead; see
README.md. The .msg/.srv definitions are copied into the Python package so that rosbag files
holding robot_dynid messages can be written and read without a ROS installation, and the
robot and trajectory configs are copied too (see robot_dynid/package_files.py).
"""
import pathlib
import shutil

from setuptools import Extension, setup
from setuptools.command.build_py import build_py


PACKAGE_DATA_DIRECTORIES = ("msg", "srv", "config")


class BuildPyWithPackageData(build_py):
    def run(self):
        super().run()
        root = pathlib.Path(__file__).resolve().parent
        target = pathlib.Path(self.build_lib) / "robot_dynid" / "package_data"
        for directory in PACKAGE_DATA_DIRECTORIES:
            shutil.copytree(root / directory, target / directory, dirs_exist_ok=True)


# The compiled kernels; CMakeLists.txt builds the same files for ROS workspaces.
KERNEL_HEADERS = ["robot_dynid/_kernel_common.h"]
REGRESSOR_KERNEL = Extension("robot_dynid._regressor_kernel", ["robot_dynid/_regressor_kernel.c"],
                             depends=KERNEL_HEADERS, extra_compile_args=["-O3", "-Wno-psabi"])
ONLINE_KERNEL = Extension("robot_dynid._online_kernel", ["robot_dynid/_online_kernel.c"],
                          depends=KERNEL_HEADERS, extra_compile_args=["-O3", "-Wno-psabi"])

setup(cmdclass={"build_py": BuildPyWithPackageData}, ext_modules=[REGRESSOR_KERNEL, ONLINE_KERNEL])
