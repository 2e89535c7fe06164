"""Figures of the report and the model comparison, drawn with matplotlib's Agg backend (headless).

The only module that imports matplotlib, and only when a figure is drawn, so the other commands do
not pay for it; matplotlib is the optional ``report`` extra (``pip install "robot-dynid[report]"``).
Every function draws one figure from the results of the analyses (:mod:`robot_dynid.estimation.cycles`,
:mod:`~robot_dynid.estimation.friction_stages`, :mod:`~robot_dynid.estimation.comparison`) into a PNG
file and returns its path. Axes carry units, joints their names; each panel has its own scale.
"""
from __future__ import annotations

import math
import pathlib
import textwrap
import warnings

import numpy as np

from robot_dynid.errors import DynIdError
from robot_dynid.recordings.signal_processing import STAGE_GAP_STEPS, gap_steps

__all__ = ["DPI", "MAX_POINTS", "TORQUE_WINDOW", "INSTALL_HINT", "pyplot", "torque_fit_figure",
           "parameter_cycles_figure", "cross_verification_figure", "friction_speed_figure", "friction_time_figure",
           "comparison_figure", "friction_models_figure", "trend_figure", "wear_trend_figure", "spread_figure",
           "tracking_figure", "tracking_error_figure"]

DPI = 90
MAX_POINTS = 4000
"""Points per drawn line: longer series are thinned by a stride (the metrics use every sample)."""
TORQUE_WINDOW = 20.0
"""[s] of the first contiguous run of a segment drawn in the torque-fit figure."""
INSTALL_HINT = 'pip install "robot-dynid[report]"'


def pyplot():
    """matplotlib.pyplot on the Agg backend; DynIdError naming the extra when it is not installed."""
    try:
        import matplotlib
    except ImportError:
        raise DynIdError(f"figures need matplotlib, which is not installed: {INSTALL_HINT}") from None
    matplotlib.use("Agg")
    # importing pyplot reads matplotlib's style files, logging each warning raised meanwhile; an older matplotlib
    # with a newer pyparsing (3.6 with 3.1: 'parseString' deprecated) would print two lines in every command that
    # draws, where warnings are shown (python -W default, pytest)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import matplotlib.pyplot as plt
    return plt


def _ticker():
    import matplotlib.ticker
    return matplotlib.ticker


def _save(figure, path) -> pathlib.Path:
    path = pathlib.Path(path)
    figure.savefig(path, dpi=DPI)
    pyplot().close(figure)
    return path


def _grid(count: int, columns: int = 3):
    columns = min(columns, count)
    return int(math.ceil(count / columns)), columns


def _margins(figure, rows: int, wspace: float = 0.3, right: float = 0.98) -> None:
    """Fixed margins (constrained layout costs seconds on grids of many axes)."""
    height = figure.get_figheight()
    figure.subplots_adjust(left=0.08, right=right, bottom=0.75 / height, top=1.0 - 0.95 / height,
                           hspace=0.55 if rows > 1 else 0.2, wspace=wspace)


def _suptitle(figure, text: str, fontsize: float = 11) -> None:
    """The figure's title, wrapped at the figure's edges (a one-joint figure is narrower than most titles); 0.08 in
    below the top edge where the margins are fixed (:func:`_margins` leaves 0.95 in: two lines and a panel title
    of two)."""
    placed = {} if figure.get_layout_engine() is not None else {"y": 1.0 - 0.08 / figure.get_figheight()}
    figure.suptitle(text, fontsize=fontsize, wrap=True, **placed)


def _panel_title(ax, text: str, fontsize: float, **keywords) -> None:
    """``ax``'s title, wrapped to the panel's width (a joint's name and a condition can be wider than a panel)."""
    figure = ax.get_figure()
    width = ax.get_position().width * figure.get_figwidth()
    ax.set_title(textwrap.fill(text, max(12, int(width * 72 / (0.6 * fontsize)))), fontsize=fontsize, **keywords)


def _date_axis(ax) -> None:
    """At most four dates on a time axis, written concisely (a year or month once, not on every tick)."""
    import matplotlib.dates
    locator = matplotlib.dates.AutoDateLocator(minticks=2, maxticks=4)
    ax.xaxis.set_major_locator(locator)
    ax.xaxis.set_major_formatter(matplotlib.dates.ConciseDateFormatter(locator))


def _stride(size: int) -> int:
    return max(1, int(math.ceil(size / MAX_POINTS)))


def _first_run(time: np.ndarray, window: float) -> np.ndarray:
    """Indices of the first contiguous run of ``time`` (no gap of
    :data:`~robot_dynid.recordings.signal_processing.STAGE_GAP_STEPS`), at most ``window`` s."""
    breaks = np.flatnonzero(gap_steps(time, STAGE_GAP_STEPS))
    stop = int(breaks[0]) + 1 if breaks.size else time.size
    stop = min(stop, int(np.searchsorted(time, time[0] + window, side="right")))
    return np.arange(stop)


def torque_fit_figure(fit, path, window: float = TORQUE_WINDOW) -> pathlib.Path:
    """Per joint: measured and predicted torque [N m] (left) and the residual (right) over the first
    ``window`` s of the segment's first contiguous run; titles give the RMS and relative RMSD of
    the whole segment."""
    plt = pyplot()
    report = fit.validation.report
    joints = report.joint_names
    rows = _first_run(fit.time, window)
    rows = rows[::_stride(rows.size)]
    t = fit.time[rows] - fit.time[rows[0]]
    figure, axes = plt.subplots(len(joints), 2, figsize=(12, 1.9 * len(joints) + 0.8), sharex=True, squeeze=False)
    _margins(figure, len(joints))
    for j, joint in enumerate(joints):
        left, right = axes[j]
        left.plot(t, fit.measured[rows, j], color="0.55", lw=1.0, label="measured")
        left.plot(t, fit.predicted[rows, j], color="C0", lw=1.2, label="model")
        left.set_ylabel("torque [N m]")
        left.set_title(f"{joint}: RMS {report.rms[j]:.3g} N m, rel. RMSD {report.relative_rmsd[j]:.3g}",
                       fontsize=9, loc="left")
        right.plot(t, fit.residual(rows)[:, j], color="C3", lw=0.8)
        right.axhline(0.0, color="0.3", lw=0.6)
        right.set_ylabel("residual [N m]")
        right.set_title(f"model - measured (RSD {report.rsd[j]:.3g})", fontsize=9, loc="left")
    axes[0, 0].legend(loc="upper right", fontsize=8)
    axes[-1, 0].set_xlabel("time from the segment's start [s]")
    axes[-1, 1].set_xlabel("time from the segment's start [s]")
    _suptitle(figure, f"{fit.segment} data: measured against model torque ({report.n_samples} samples; relative "
              f"RMSD over |qd| >= {report.speed_threshold:g} rad/s)")
    return _save(figure, path)


def parameter_cycles_figure(cycles, path, poorly_excited=(), units=None) -> pathlib.Path:
    """Each base parameter over the cycles (value +- std against elapsed time [min]), with its mean
    over all cycles (dashed) and over the warm cycles (dotted); poorly excited ones titled in red; ``units``
    (one per parameter) in the panels' titles."""
    plt, ticker = pyplot(), _ticker()
    rows, columns = _grid(len(cycles.names), 6)
    figure, axes = plt.subplots(rows, columns, figsize=(2.6 * columns, 1.9 * rows + 0.8), squeeze=False)
    _margins(figure, rows, wspace=0.45)
    t = cycles.elapsed_minutes
    for k, name in enumerate(cycles.names):
        ax = axes.flat[k]
        ax.errorbar(t, cycles.values[:, k], yerr=cycles.std[:, k], fmt="o", ms=3, lw=0.8, color="C0")
        ax.axhline(cycles.statistics.mean[k], color="0.4", ls="--", lw=0.8)
        if cycles.warm_statistics is not None:
            ax.axhline(cycles.warm_statistics.mean[k], color="C2", ls=":", lw=1.0)
        ax.set_title(f"{name} [{units[k]}]" if units else name, fontsize=8,
                     color="C3" if name in poorly_excited else "black")
        ax.tick_params(labelsize=7)
        ax.yaxis.set_major_locator(ticker.MaxNLocator(4))
    for ax in axes.flat[len(cycles.names):]:
        ax.set_visible(False)
    for ax in axes[-1]:
        ax.set_xlabel("elapsed time [min]", fontsize=8)
    warm = f"; dotted: mean without the first {cycles.skipped}" if cycles.warm_statistics is not None else ""
    _suptitle(figure, f"base parameters identified per cycle (+- std; dashed: mean{warm})")
    return _save(figure, path)


def cross_verification_figure(cross, path) -> pathlib.Path:
    """Heat map of the mean relative RMSD over the joints of each fit (row) on each cycle (column)."""
    plt = pyplot()
    matrix = cross.matrix("relative_rmsd")
    figure, ax = plt.subplots(figsize=(max(6.0, 2.6 + 0.45 * len(cross.tested)),
                                       max(4.0, 1.6 + 0.35 * len(cross.fitted))), layout="constrained")
    image = ax.imshow(matrix, cmap="viridis", aspect="auto")
    ax.set_xticks(range(len(cross.tested)), cross.tested, rotation=60, ha="right", fontsize=8)
    ax.set_yticks(range(len(cross.fitted)), cross.fitted, fontsize=8)
    ax.set_xlabel("data predicted")
    ax.set_ylabel("parameters fitted on")
    figure.colorbar(image, ax=ax, label="mean relative RMSD over joints [1]")
    ax.set_title("self- and cross-verification", fontsize=11)
    return _save(figure, path)


def friction_speed_figure(analysis, path, model=None) -> pathlib.Path:
    """Per joint: friction torque [N m] of every plateau against its speed [rad/s], coloured by elapsed
    time, the per-cycle fitted polynomial in the same colour and the model's friction (black dashed)."""
    plt = pyplot()
    joints = analysis.joints()
    rows, columns = _grid(len(joints))
    figure, axes = plt.subplots(rows, columns, figsize=(4.3 * columns, 3.4 * rows + 0.6), layout="constrained",
                                squeeze=False)
    times = np.array([s.elapsed_minutes for s in analysis.segments])
    colour_map = plt.get_cmap("viridis")
    low, high = float(times.min()), float(max(times.max(), times.min() + 1e-9))

    def colour(minutes):
        return colour_map((minutes - low) / (high - low))

    for ax, joint in zip(axes.flat, joints):
        mine = [s for s in analysis.segments if s.joint == joint]
        speeds = np.array([s.speed for s in mine])
        limit = 1.05 * float(np.max(np.abs(speeds)))
        grid = np.linspace(-limit, limit, 201)
        for fit in (f for f in analysis.fits if f.joint == joint):
            minutes = np.mean([s.elapsed_minutes for s in mine if s.label == fit.label])
            ax.plot(grid, fit.friction(grid), color=colour(minutes), lw=0.8, alpha=0.8)
        ax.scatter(speeds, [s.friction for s in mine], c=[colour(s.elapsed_minutes) for s in mine], s=14,
                   edgecolors="0.2", linewidths=0.3, zorder=3)
        if model is not None and joint in model.joint_names:
            curve = model.friction_torque(joint, grid)
            if curve is not None:
                ax.plot(grid, curve, color="black", ls="--", lw=1.2, label=f"model ({model.friction.name})")
                ax.legend(fontsize=8, loc="upper left")
        fits = [f for f in analysis.fits if f.joint == joint]
        note = " (gravity removed)" if fits and all(f.gravity_removed for f in fits) else \
            " (axis vertical: no gravity torque)" if fits and all(f.horizontal for f in fits) else ""
        _panel_title(ax, f"{joint}{note}", 10)
        ax.set_xlabel(f"{joint} speed [rad/s]")
        ax.set_ylabel("friction torque [N m]")
        ax.axhline(0.0, color="0.7", lw=0.5)
        ax.axvline(0.0, color="0.7", lw=0.5)
    for ax in axes.flat[len(joints):]:
        ax.set_visible(False)
    mappable = plt.cm.ScalarMappable(cmap=colour_map, norm=plt.Normalize(low, high))
    figure.colorbar(mappable, ax=axes.ravel().tolist(), label="elapsed time [min]", shrink=0.8)
    _suptitle(figure, "friction against speed: constant-velocity plateaus per cycle (points), fitted "
              "f1 sgn v + f2 v + f3 v|v| + f4 v^3 per cycle (lines)")
    return _save(figure, path)


def friction_time_figure(drifts, path) -> pathlib.Path:
    """Per joint: friction at its chosen speed level [N m] against elapsed time [min], with the fitted
    ``a + b exp(-t/t1) + c exp(-t/t2)`` and its time constants."""
    plt = pyplot()
    rows, columns = _grid(len(drifts))
    figure, axes = plt.subplots(rows, columns, figsize=(4.3 * columns, 3.2 * rows + 0.6), layout="constrained",
                                squeeze=False)
    for ax, drift in zip(axes.flat, drifts):
        ax.plot(drift.elapsed_minutes, drift.friction, "o", ms=4, color="C0", label="per cycle")
        if drift.fit is not None:
            grid = np.linspace(float(drift.elapsed_minutes.min()), float(drift.elapsed_minutes.max()), 300)
            ax.plot(grid, drift.fit(grid), color="C3", lw=1.3,
                    label=f"fit: t1 = {drift.fit.t1:.3g} min, t2 = {drift.fit.t2:.3g} min")
        else:
            ax.text(0.5, 0.9, "no fit (fewer than 6 cycles)" if len(drift.friction) < 6 else "no fit",
                    transform=ax.transAxes, ha="center", fontsize=8, color="C3")
        _panel_title(ax, f"{drift.joint} at {drift.level:.0%} of its speed limit", 10)
        ax.set_xlabel("elapsed time [min]")
        ax.set_ylabel("friction torque [N m]")
        ax.legend(fontsize=8)
    for ax in axes.flat[len(drifts):]:
        ax.set_visible(False)
    _suptitle(figure, "friction from cold to warm: a + b exp(-t/t1) + c exp(-t/t2)")
    return _save(figure, path)


def comparison_figure(comparison, path) -> pathlib.Path:
    """Each base parameter's difference to the reference model in combined standard deviations, with
    the significance threshold."""
    plt = pyplot()
    count = len(comparison.names)
    figure, ax = plt.subplots(figsize=(max(8.0, 0.22 * count + 2.0), 4.2), layout="constrained")
    others = len(comparison.labels) - 1
    width = 0.8 / others
    x = np.arange(count)
    for i in range(others):
        z = np.clip(np.nan_to_num(comparison.z[i], posinf=1e3, neginf=-1e3), -50.0, 50.0)
        ax.bar(x + (i - (others - 1) / 2) * width, z, width,
               label=f"{comparison.labels[i + 1]} - {comparison.labels[0]}",
               color=[f"C{i}" if s else "0.7" for s in comparison.significant[i]], edgecolor=f"C{i}")
    for sign in (1, -1):
        ax.axhline(sign * comparison.critical, color="C3", ls="--", lw=0.9)
    ax.set_xticks(x, comparison.names, rotation=90, fontsize=7)
    ax.set_ylabel("difference / combined std [1]")
    ax.set_title(f"base parameter differences (filled: significant at level {comparison.level:g}, "
                 f"|z| > {comparison.critical:.3g}; clipped at +-50)", fontsize=10)
    ax.legend(fontsize=8)
    return _save(figure, path)


def friction_models_figure(models, labels, path) -> pathlib.Path:
    """Per joint: each model's friction torque [N m] over +-its velocity limit [rad/s], overlaid."""
    plt = pyplot()
    joints = models[0].joint_names
    rows, columns = _grid(len(joints))
    figure, axes = plt.subplots(rows, columns, figsize=(4.3 * columns, 3.2 * rows + 0.6), layout="constrained",
                                squeeze=False)
    limits = models[0].robot.limit_arrays().velocity
    for ax, joint, limit in zip(axes.flat, joints, limits):
        grid = np.linspace(-limit, limit, 201)
        for i, (model, label) in enumerate(zip(models, labels)):
            curve = model.friction_torque(joint, grid)
            if curve is not None:
                ax.plot(grid, curve, color=f"C{i}", lw=1.3, ls=("-", "--", "-.", ":")[i % 4], label=label)
        ax.set_title(joint, fontsize=10)
        ax.set_xlabel(f"{joint} speed [rad/s]")
        ax.set_ylabel("friction torque [N m]")
        ax.axhline(0.0, color="0.7", lw=0.5)
        ax.legend(fontsize=7)
    for ax in axes.flat[len(joints):]:
        ax.set_visible(False)
    _suptitle(figure, "friction models overlaid")
    return _save(figure, path)


def trend_figure(series, path, title: str) -> pathlib.Path:
    """Parameters of one robot over time, one panel each, with +-2 std bars (the fleet page).

    ``series``: a sequence of ``(name, unit, times (k,) datetime, values (k,), std (k,), flagged (k,) bool,
    (baseline value, baseline std))``; flagged points are drawn red, the baseline as a dashed line with its
    +-2 std band.
    """
    plt = pyplot()
    rows, columns = _grid(len(series), 3)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows + 0.8), squeeze=False)
    _margins(figure, rows, wspace=0.35)
    for ax, (name, unit, times, values, std, flagged, (baseline, baseline_std)) in zip(axes.flat, series):
        values, std, flagged = np.asarray(values, float), np.asarray(std, float), np.asarray(flagged, bool)
        ax.axhline(baseline, color="0.5", ls="--", lw=0.8)
        ax.axhspan(baseline - 2 * baseline_std, baseline + 2 * baseline_std, color="0.85", lw=0)
        _time_panel(ax, name, f"[{unit}]" if unit else "[1]", times, values, std, flagged, "flagged")
    return _finish_panels(figure, axes, len(series), title, path)


def _time_panel(ax, name, ylabel, times, values, std, flagged, flag_label) -> None:
    """Values over time with +-2 std bars, ``flagged`` points red (labelled ``flag_label``), titled ``name``."""
    ax.errorbar(times, values, yerr=2 * std, fmt="o-", ms=3, lw=0.8, color="C0", capsize=2)
    if flagged.any():
        ax.plot([t for t, f in zip(times, flagged) if f], values[flagged], "o", color="C3", ms=6, label=flag_label)
        ax.legend(fontsize=7)
    _panel_title(ax, name, 9, color="C3" if flagged.any() else "black", y=1.0)    # y: no title placement search
    ax.set_ylabel(ylabel, fontsize=8)
    ax.tick_params(labelsize=7)
    _date_axis(ax)


def _finish_panels(figure, axes, count: int, title: str, path) -> pathlib.Path:
    """Hide the grid's unused panels, title the figure and save it."""
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    _suptitle(figure, title, 10)
    return _save(figure, path)


def wear_trend_figure(series, path, title: str) -> pathlib.Path:
    """Wear indicators of one robot over time, one panel each (the fleet page).

    ``series``: a sequence of ``(name, quantity, unit, times (k,) datetime, values (k,), std (k,), baseline,
    band (k,), threshold, flagged (k,) bool)``: ``band`` the half-width of the null's 95 % band around the
    baseline at each recording (NaN at the baseline's own), ``threshold`` the practical one. The baseline is a
    dashed line, the null band a grey bar at each compared recording, the practical threshold dotted, values
    with +-2 estimation std bars, flagged points red; the y axis is ``quantity [unit]``.
    """
    plt = pyplot()
    rows, columns = _grid(len(series), 3)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows + 0.8), squeeze=False)
    _margins(figure, rows, wspace=0.35)
    for ax, (name, quantity, unit, times, values, std, baseline, band, threshold, flagged) in zip(axes.flat, series):
        values, std, flagged = np.asarray(values, float), np.asarray(std, float), np.asarray(flagged, bool)
        band = np.asarray(band, float)
        ax.axhline(baseline, color="0.4", ls="--", lw=0.8)
        for bound in (baseline - threshold, baseline + threshold):
            ax.axhline(bound, color="C1", ls=":", lw=0.9)
        shown = np.isfinite(band)
        if shown.any():
            ax.errorbar([t for t, keep in zip(times, shown) if keep], np.full(shown.sum(), baseline),
                        yerr=band[shown], fmt="none", ecolor="0.82", elinewidth=8)
        _time_panel(ax, name, f"{quantity} [{unit}]", times, values, std, flagged, "wear")
    return _finish_panels(figure, axes, len(series), title, path)


def spread_figure(names, robots, deviation, far, path, spreads: float) -> pathlib.Path:
    """The fleet's spread per parameter: each robot's latest value's distance to the fleet median in robust
    spreads (1.4826 MAD), ``deviation`` (robots, parameters); robots far from it (``far``, bool) in red, one
    marker per robot named in the legend."""
    plt = pyplot()
    deviation = np.clip(np.nan_to_num(np.asarray(deviation, float), posinf=50.0), 0.0, 50.0)
    far = np.asarray(far, bool)
    figure, ax = plt.subplots(figsize=(max(8.0, 0.22 * len(names) + 2.0), 4.2), layout="constrained")
    x = np.arange(len(names))
    markers = iter(("o", "s", "^", "D", "v", "P", "X", "*") * (len(robots) // 8 + 1))
    for i, robot in enumerate(robots):
        jitter = (i - (len(robots) - 1) / 2) * 0.6 / max(len(robots), 1)
        ax.plot(x + jitter, deviation[i], "o", ms=3, color="0.5")
        if far[i].any():
            ax.plot((x + jitter)[far[i]], deviation[i][far[i]], next(markers), ms=6, color="C3", mfc="none",
                    label=robot)
    if far.any():
        ax.legend(fontsize=7, title="far from the median", title_fontsize=7, loc="upper left")
    ax.axhline(spreads, color="C3", ls="--", lw=0.9)
    ax.set_xticks(x, names, rotation=90, fontsize=7)
    ax.set_ylabel("|value - fleet median| / (1.4826 MAD) [1]")
    ax.set_title(f"fleet spread of the latest models (red: far from the median, beyond {spreads:g} spreads and "
                 "significant; clipped at 50)", fontsize=10)
    return _save(figure, path)


def tracking_figure(history, path) -> pathlib.Path:
    """Tracked friction parameters against time [s] with +-2 std bands, one panel each (``history``: a
    :class:`~robot_dynid.estimation.friction_tracking.TrackingHistory`)."""
    plt = pyplot()
    count = len(history.names)
    rows, columns = _grid(count, 4)
    figure, axes = plt.subplots(rows, columns, figsize=(3.6 * columns, 2.4 * rows + 0.8), squeeze=False)
    _margins(figure, rows, wspace=0.4)
    for index, (ax, name) in enumerate(zip(axes.flat, history.names)):
        values, std = history.values[:, index], history.std[:, index]
        ax.fill_between(history.time, values - 2 * std, values + 2 * std, color="C0", alpha=0.25, lw=0)
        ax.plot(history.time, values, color="C0", lw=1.0)
        unit = history.units[index] if history.units else "-"
        _panel_title(ax, name, 9, y=1.0)
        ax.set_ylabel(f"[{unit}]", fontsize=8)
        ax.set_xlabel("time [s]", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    _suptitle(figure, "friction tracked online (RLS with forgetting, rigid body fixed), +-2 std", 10)
    return _save(figure, path)


def tracking_error_figure(time, curves, joint_names, path, events=None) -> pathlib.Path:
    """Tracking error against time, one panel per joint, one line per run (log scale).

    ``time`` (N,) [s]; ``curves``: label -> (N, n) error magnitude [rad] (e.g. a trailing RMS); ``events``: label ->
    time [s] of a vertical line (NaN: none).
    """
    plt = pyplot()
    count = len(joint_names)
    rows, columns = _grid(count, 3)
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 2.6 * rows + 1.0), squeeze=False)
    _margins(figure, rows, wspace=0.3)
    stride = _stride(len(time))
    for index, (ax, name) in enumerate(zip(axes.flat, joint_names)):
        for label, values in curves.items():
            ax.plot(time[::stride], np.maximum(values[::stride, index], 1e-7), lw=0.9, label=label)
        for label, moment in (events or {}).items():
            if np.isfinite(moment):
                ax.axvline(moment, color="k", lw=0.8, ls="--")
        ax.set_yscale("log")
        ax.set_title(name, fontsize=9)
        ax.set_xlabel("time [s]", fontsize=8)
        ax.set_ylabel("error [rad]", fontsize=8)
        ax.tick_params(labelsize=7)
    for ax in list(axes.flat)[count:]:
        ax.set_visible(False)
    axes.flat[0].legend(fontsize=7)
    _suptitle(figure, "tracking error |q_d - q|, trailing RMS" + "".join(
        f"; dashed: {label}" for label, moment in (events or {}).items() if np.isfinite(moment)), 10)
    return _save(figure, path)
