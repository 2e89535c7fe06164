"""The identification experiment: trajectories, their checks and design, the protocol, running it.

- :mod:`~robot_dynid.experiment.trajectories`: trajectory families (Fourier, cycloidal, ladders, ...).
- :mod:`~robot_dynid.experiment.trajectory_checks`: a trajectory against a robot's limits.
- :mod:`~robot_dynid.experiment.excitation`: random and optimised excitations.
- :mod:`~robot_dynid.experiment.protocol`: the thesis's test as a plan of stages over cycles.
- :mod:`~robot_dynid.experiment.schedule`: a plan as trajectory windows and stage markers, the
  explicit start and the deviation check (what the experiment runner decides).
- :mod:`~robot_dynid.experiment.trajectory_following`, :mod:`~robot_dynid.experiment.simulation`:
  the simulated arm.
"""
