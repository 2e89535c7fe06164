"""Recordings and their files.

- :mod:`~robot_dynid.recordings.recording`: ``Recording``, samples with stage labels and drop counts.
- :mod:`~robot_dynid.recordings.stages`: stage kinds, markers, intervals, labels, stamp order;
  :mod:`~robot_dynid.recordings.stage_detection`: stages detected from the motion.
- :mod:`~robot_dynid.recordings.pipeline`: reading a recording, its steps in order (read, check and drop,
  resample, differentiate, condition, select stages); :mod:`~robot_dynid.recordings.data_files`: a file whatever
  its format, its stage table; :mod:`~robot_dynid.recordings.csv_io`, :mod:`~robot_dynid.recordings.bag_io`,
  :mod:`~robot_dynid.recordings.bag_recovery`, :mod:`~robot_dynid.recordings.bag_layout`.
- :mod:`~robot_dynid.recordings.joint_states`: which JointState messages can be used;
  :mod:`~robot_dynid.recordings.data_checks`: unit mistakes and implausible samples.
- :mod:`~robot_dynid.recordings.signal_processing`: filtering, differentiation, interpolation.
"""
