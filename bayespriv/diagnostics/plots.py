"""Plots of results. They only read a :class:`~bayespriv.Calibration`; they never compute
anything a mechanism relies on.

Figures are drawn with matplotlib's object-oriented API. When no ``ax`` is
given, a new figure is created with :func:`matplotlib.pyplot.subplots` (so it
shows in notebooks); ``plt.show()`` is never called: save it with
``ax.figure.savefig(...)`` or let the notebook display it, and close it with
``matplotlib.pyplot.close(fig)`` in scripts that draw many.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib as mpl
import numpy as np

from .._validation import check_positive_int
from ..calibration import Calibration
from ..errors import ParameterTypeError, ValidationError
from ..secrets import DatasetSecret, DistributionSecret, Secret

__all__ = ["plot_calibration"]


def _resolve_components(calibration: Calibration, component: Any) -> list[int]:
    names = list(calibration.component_names)
    if component is None:
        return list(range(calibration.k))
    if isinstance(component, str):
        if component not in names:
            raise ValidationError(f"component must be one of the calibration's components {names!r}; got {component!r}")
        return [names.index(component)]
    if isinstance(component, (int, np.integer)) and not isinstance(component, bool):
        if not 0 <= int(component) < calibration.k:
            raise ValidationError(f"component must be an index in [0, {calibration.k}) or a name in {names!r}; got {component!r}")
        return [int(component)]
    raise ParameterTypeError(f"component must be None, a component index or a component name; got {type(component).__name__}")


def _resolve_secrets(calibration: Calibration, secrets: Any) -> list[int]:
    if secrets is None:
        return [calibration.index(s) for s in calibration.worst_pair.secrets]
    if isinstance(secrets, (DatasetSecret, DistributionSecret, str)):
        secrets = [secrets]
    labels = [s.label for s in calibration.secrets]
    out = []
    for s in secrets:
        if isinstance(s, str):
            if s not in labels:
                raise ValidationError(f"secrets must be secrets (or labels) of the calibration; got {s!r}")
            out.append(labels.index(s))
        elif isinstance(s, (DatasetSecret, DistributionSecret)):
            out.append(calibration.index(s))
        else:
            raise ParameterTypeError(f"secrets must contain Secret objects or their labels; got {type(s).__name__}")
    if not out:
        raise ValidationError("secrets must name at least one secret of the calibration; got an empty collection")
    return list(dict.fromkeys(out))


def _draw_component(ax, calibration: Calibration, c: int, idx: list[int], bins: int) -> None:
    values = np.asarray(calibration.samples.values)  # (secret, draw, component)
    name = calibration.component_names[c]
    data = [values[i, :, c] for i in idx]
    edges = np.histogram_bin_edges(np.concatenate(data), bins=bins)
    span = edges[-1] - edges[0]
    grid = np.linspace(edges[0] - 0.05 * span, edges[-1] + 0.05 * span, 400)
    colors = mpl.rcParams["axes.prop_cycle"].by_key().get("color", ["C0", "C1", "C2"])
    means, handles, labels = [], [], []
    for j, (i, x) in enumerate(zip(idx, data)):
        secret: Secret = calibration.secrets[i]
        color = colors[j % len(colors)]
        mu = float(calibration.mean_array[i, c])
        var = float(calibration.cov_array[i, c, c])
        means.append(mu)
        _, _, patches = ax.hist(x, bins=edges, density=True, histtype="stepfilled", alpha=0.35, color=color,
                                edgecolor=color, label=secret.label, gid=f"hist:{secret.label}")
        handle: Any = patches[0]
        if var > 0:
            pdf = np.exp(-0.5 * (grid - mu) ** 2 / var) / np.sqrt(2 * np.pi * var)
            (line,) = ax.plot(grid, pdf, color=color, lw=2, label=f"N({mu:.4g}, {var:.3g})", gid=f"fit:{secret.label}")
            handle = (patches[0], line)
        ax.axvline(mu, color=color, ls="--", lw=1, gid=f"mean:{secret.label}")
        handles.append(handle)
        labels.append(f"{secret.label}: {x.size} draws, fit N({mu:.4g}, {var:.3g})")
    sd = float(np.sqrt(max(calibration.cov_array[idx, c, c].min(), 0.0)))
    shift = max(means) - min(means)
    ratio = f", shift/sd = {shift / sd:.2f}" if sd > 0 else ""
    ax.set_title(f"{name}\nmean shift {shift:.3g} vs sd {sd:.3g}{ratio}", fontsize="medium")
    ax.set_xlabel(name)
    ax.set_ylabel("density")
    # Below the axes: the histograms use the whole height.
    ax.legend(handles, labels, fontsize="small", frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.16))


def plot_calibration(
    calibration: Calibration,
    *,
    component: int | str | None = None,
    secrets: Sequence[Secret | str] | None = None,
    ax: Any = None,
    bins: int = 40,
):
    """Distribution of F(X) under each secret, with its fitted Gaussian.

    For each chosen secret: a density histogram of the calibration's samples
    and the curve of N(μ̂, σ̂²) with the calibration's estimated mean and
    variance (dashed line at μ̂), on shared bins. The title states the shift of
    the means against the conditional standard deviation: the ratio a Gaussian
    mechanism must bring below r*(ε, δ).

    Parameters
    ----------
    calibration : Calibration
        A sampled calibration (from :func:`bayespriv.calibrate`).
    component : int or str, optional
        Which component of F; default all (one panel each).
    secrets : sequence of Secret or secret labels, optional
        Default: the two secrets of ``calibration.worst_pair`` (plotting all
        secrets clutters).
    ax : matplotlib Axes, or a sequence of them for several components, optional
        Where to draw; a new figure otherwise.
    bins : int, default 40

    Returns
    -------
    matplotlib.axes.Axes for one component, matplotlib.figure.Figure for several.

    Raises
    ------
    bayespriv.ValidationError
        For a calibration without samples (built with ``Calibration.from_moments``).
    """
    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    if calibration.samples is None:
        raise ValidationError(
            "plot_calibration needs a calibration with samples (from bayespriv.calibrate); "
            "got one built from moments only (Calibration.from_moments), which has nothing to histogram"
        )
    bins = check_positive_int(bins, "bins")
    comps = _resolve_components(calibration, component)
    idx = _resolve_secrets(calibration, secrets)

    if len(comps) == 1:
        if ax is None:
            import matplotlib.pyplot as plt

            _, ax = plt.subplots(figsize=(6.4, 4.2), layout="constrained")
        elif isinstance(ax, (list, tuple, np.ndarray)):
            ax = np.ravel(ax)[0]
        _draw_component(ax, calibration, comps[0], idx, bins)
        return ax

    if ax is None:
        import matplotlib.pyplot as plt

        fig, axes = plt.subplots(1, len(comps), figsize=(5.2 * len(comps), 4.2), layout="constrained", squeeze=False)
        axes = axes[0]
    else:
        axes = np.ravel(ax)
        if axes.size != len(comps):
            raise ValidationError(f"ax must hold one Axes per component ({len(comps)}); got {axes.size}")
        fig = axes[0].figure
    for a, c in zip(axes, comps):
        _draw_component(a, calibration, c, idx, bins)
    return fig
