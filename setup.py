"""pip installation of the pure-Python part (numeric core and the robot-dynid CLI), no ROS needed.

ROS users build the whole package (interfaces, nodes, launch files) with colcon instead; see
README.md. The .msg/.srv definitions are copied into the Python package so that rosbag files
holding robot_dynid messages can be written and read without a ROS installation.
"""
import pathlib
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithInterfaceDefinitions(build_py):
    def run(self):
        super().run()
        root = pathlib.Path(__file__).resolve().parent
        target = pathlib.Path(self.build_lib) / "robot_dynid" / "interface_definitions"
        for kind in ("msg", "srv"):
            (target / kind).mkdir(parents=True, exist_ok=True)
            for definition in sorted((root / kind).glob(f"*.{kind}")):
                shutil.copyfile(definition, target / kind / definition.name)


setup(cmdclass={"build_py": BuildPyWithInterfaceDefinitions})
