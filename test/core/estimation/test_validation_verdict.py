"""The verdict line on a model, from held-out fits: the thresholds as documented, joints named."""
import numpy as np

from robot_dynid.estimation.metrics import ValidationReport
from robot_dynid.estimation.validation import GOOD_HELD_OUT_RSD, OVERFIT_RATIO, ModelValidation, judge_fit

JOINTS = ("shoulder_pan_joint", "shoulder_lift_joint", "elbow_joint")


def fit(rsd, source="run.csv"):
    rsd = np.asarray(rsd, dtype=float)
    report = ValidationReport(rms=rsd, rsd=rsd, residual_std=rsd, relative_rmsd=rsd, n_samples=100,
                              n_moving=np.full(3, 100), speed_threshold=0.01, joint_names=JOINTS)
    return ModelValidation(report, np.full(3, np.nan), (), (source,))


def test_a_model_is_good_where_every_held_out_file_is_within_the_limits():
    training = fit([0.05, 0.04, 0.08])
    assert judge_fit(training, [fit([0.06, 0.05, 0.1]), fit([0.07, 0.06, 0.09])]).good is True
    verdict = judge_fit(training, [fit([0.06, 0.05, 0.1]), fit([0.07, 0.25, 0.09], "/data/loaded.csv")])
    assert verdict.good is False and list(verdict.joints) == ["shoulder_lift_joint"]
    # 0.25 held out against 0.04 in training: it does not carry over
    assert verdict.text == ("not good enough on 1 of 3 joints: does not carry over to new motion on "
                            "shoulder_lift_joint (held-out RSD up to 6.2 x training; loaded.csv)")
    assert verdict.joints["shoulder_lift_joint"] == ("held-out RSD 0.25 is 6.2 x its training RSD 0.04 (does not carry "
                                                     "over to new motion)")
    overfit = judge_fit(training, [fit([0.06, 0.05, 0.17])])      # within the limit, but 2.1 x its training RSD
    assert overfit.good is False and "elbow_joint" in overfit.joints
    assert OVERFIT_RATIO * 0.08 < 0.17 <= GOOD_HELD_OUT_RSD
    noisy = judge_fit(fit([0.05, 0.04, 0.28]), [fit([0.06, 0.05, 0.3])])     # as high in training: noise
    assert noisy.joints == {"elbow_joint": "held-out RSD 0.3 > 0.2, training 0.28 alike (noise, or an effect the "
                                           "model lacks)"}
    assert noisy.text == ("not good enough on 1 of 3 joints: as poor in training (noise, or an effect the model "
                          "lacks) on elbow_joint (held-out RSD up to 0.3; run.csv)")


def test_without_held_out_data_there_is_no_verdict_and_it_says_so():
    verdict = judge_fit(fit([0.05, 0.04, 0.08]), [])
    assert verdict.good is None and verdict.text.startswith("not judged: no held-out data")
