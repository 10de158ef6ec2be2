"""Plots of results. They only read a :class:`~bayespriv.Calibration`; they never compute
anything a mechanism relies on.

Figures are drawn with matplotlib's object-oriented API. When no ``ax`` is
given, a new figure is created with :func:`matplotlib.pyplot.subplots` (so it
shows in notebooks); ``plt.show()`` is never called: save it with
``ax.figure.savefig(...)`` or let the notebook display it, and close it with
``matplotlib.pyplot.close(fig)`` in scripts that draw many.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .._validation import check_positive_int, fail
from ..calibration import Calibration
from ..errors import ParameterTypeError, ValidationError
from ..secrets import DatasetSecret, DistributionSecret, Secret

if TYPE_CHECKING:
    from collections.abc import Hashable, Iterable
    from matplotlib.axes import Axes
    from numpy.typing import ArrayLike
    from bayespriv.calibration.convergence import Convergence
    from bayespriv.ledger import Ledger
    from bayespriv.networks.quilts import Quilt
    from bayespriv.noise.release_noise import ReleaseNoise
    from bayespriv.privacy.guarantee import Release

__all__ = ["plot_calibration", "plot_privacy_curve", "plot_utility", "plot_quilt", "plot_epsilon_table", "plot_budget",
           "plot_qq", "plot_convergence", "plot_release"]


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


def _fit_label(mu: float, var: float) -> str:
    """The fitted Gaussian in the units of the plot's title: mean and standard deviation (not variance)."""
    return f"fit normal: mean {mu:.4g}, sd {math.sqrt(max(var, 0.0)):.3g}"


def _draw_component(ax, calibration: Calibration, c: int, idx: list[int], bins: int) -> None:
    values = np.asarray(calibration.samples.values)  # (secret, draw, component)
    name = calibration.component_names[c]
    data = [values[i, :, c] for i in idx]
    edges = np.histogram_bin_edges(np.concatenate(data), bins=bins)
    span = edges[-1] - edges[0]
    grid = np.linspace(edges[0] - 0.05 * span, edges[-1] + 0.05 * span, 400)
    import matplotlib as mpl

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
            (line,) = ax.plot(grid, pdf, color=color, lw=2, label=_fit_label(mu, var), gid=f"fit:{secret.label}")
            handle = (patches[0], line)
        ax.axvline(mu, color=color, ls="--", lw=1, gid=f"mean:{secret.label}")
        handles.append(handle)
        labels.append(f"{secret.label}: {x.size} draws, {_fit_label(mu, var)}")
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
    ax: Axes | None = None,
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


# -- shared helpers ---------------------------------------------------------------------------------------------
def _axes(ax: Axes | None, figsize: tuple[float, float] = (6.4, 4.2)) -> Any:
    """``ax`` itself, or the Axes of a new constrained-layout figure."""
    if ax is not None:
        if not hasattr(ax, "plot") or not hasattr(ax, "figure"):
            raise ParameterTypeError(f"ax must be a matplotlib Axes; got {type(ax).__name__}")
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=figsize, layout="constrained")
    return ax


def _epsilon_grid(epsilons: ArrayLike | None, largest: float, name: str = "epsilons") -> np.ndarray:
    """Validated ε values (1-d, finite, > 0, sorted), or a default grid up to 2.5 × ``largest``."""
    if epsilons is None:
        top = 2.5 * largest if largest > 0 else 2.5
        return np.linspace(top / 40.0, top, 40)
    eps = np.atleast_1d(np.asarray(epsilons, dtype=float))
    if eps.ndim != 1 or eps.size == 0 or not np.all(np.isfinite(eps)) or np.any(eps <= 0):
        raise ValidationError(f"{name} must be a non-empty 1-d sequence of finite numbers > 0; got {epsilons!r}")
    return np.sort(eps)


def _labelled(items: Any, name: str, kind: str) -> list[tuple[str, Any]]:
    """(label, item) pairs from one item, a sequence (labels: class names) or a mapping label -> item."""
    if isinstance(items, Mapping):
        out = [(str(k), v) for k, v in items.items()]
    elif hasattr(items, "guarantee"):
        out = [(type(items).__name__, items)]
    elif isinstance(items, Sequence) and not isinstance(items, (str, bytes)):
        names = [type(m).__name__ for m in items]
        out = [(f"{n} #{i}" if names.count(n) > 1 else n, m) for i, (n, m) in enumerate(zip(names, items))]
    else:
        raise ParameterTypeError(f"{name} must be a {kind}, a sequence of them or a mapping label -> {kind}; "
                                 f"got {type(items).__name__}")
    if not out:
        raise ValidationError(f"{name} must hold at least one {kind}; got an empty collection")
    return out


# -- privacy curve ------------------------------------------------------------------------------------------
def _has_privacy_curve(mech: Any) -> bool:
    """Whether ``mech.privacy_curve`` computes a curve: noise scaled by the accountant, or a Gaussian
    mechanism's own exact curve (a pure-ε theorem has none)."""
    from ..mechanisms import Mechanism

    if not isinstance(mech, Mechanism):
        return callable(getattr(mech, "privacy_curve", None))
    return mech.accounting is not None or type(mech).privacy_curve is not Mechanism.privacy_curve


def plot_privacy_curve(mechs: Any, epsilons: ArrayLike | None = None, *, ax: Axes | None = None):
    """δ(ε) of one or several mechanisms, with each guarantee's (ε, δ) marked.

    The curve is the mechanism's own ``privacy_curve(epsilons)`` (an upper bound of the δ at
    which it is (ε, δ)-private, for every ε; Gaussian mechanisms have it); nothing is
    recomputed here. A mechanism without it shows only its guarantee: a point, or for a pure
    guarantee (δ = 0, not drawable on the log scale) a dotted vertical line at its ε.

    Parameters
    ----------
    mechs : Mechanism, sequence of Mechanism, or mapping label -> Mechanism
    epsilons : sequence of float > 0, optional
        Where the curves are evaluated; default 40 points up to 2.5 × the largest guarantee ε.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Lines have gid ``"curve:<label>"``, guarantee markers ``"guarantee:<label>"``, pure
        guarantees ``"pure:<label>"``; the y axis is logarithmic.
    """
    items = _labelled(mechs, "mechs", "mechanism")
    eps = _epsilon_grid(epsilons, max(float(m.guarantee.epsilon) for _, m in items))
    ax = _axes(ax)
    for j, (label, mech) in enumerate(items):
        color = f"C{j % 10}"
        g = mech.guarantee
        curve = getattr(mech, "privacy_curve", None) if _has_privacy_curve(mech) else None
        if callable(curve):
            delta = np.asarray(curve(eps), dtype=float)
            shown = np.where(delta > 0, delta, np.nan)  # δ = 0 cannot sit on a log axis
            ax.plot(eps, shown, color=color, lw=2, label=f"{label}: δ(ε)", gid=f"curve:{label}")
        if g.delta > 0:
            ax.plot([g.epsilon], [g.delta], "o", color=color, ms=8, mec="black",
                    label=f"{label} guarantee (ε={g.epsilon:.3g}, δ={g.delta:.2g})", gid=f"guarantee:{label}")
        else:
            ax.axvline(g.epsilon, color=color, ls=":", lw=2, label=f"{label}: pure ε={g.epsilon:.3g} (δ=0)",
                       gid=f"pure:{label}")
    ax.set_yscale("log")
    ax.set_xlabel("ε")
    ax.set_ylabel("δ(ε)")
    ax.set_title("Privacy curve: the mechanism is (ε, δ(ε))-private for every ε", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


# -- utility vs ε ---------------------------------------------------------------------------------------------
def plot_utility(calibration: Calibration, mechanisms: Mapping[str, Any] | None = None,
                 epsilons: ArrayLike | None = None, *, error: str = "l2", ax: Axes | None = None):
    """Expected error of several mechanisms against ε, side by side.

    The numbers come from :func:`bayespriv.mechanisms.utility.utility_curves`, which builds each
    mechanism with its factory at every ε and *reads* its noise: ``error="l2"`` plots
    sqrt(trace(noise_cov)) = sqrt(E‖noise‖²), ``error="abs"`` the mean over components of the exact
    E|noise| (``expected_abs_error``). Where a factory raises a bayespriv error (e.g. no finite noise at
    that ε) the point is left out and the legend says how many ε failed. A table that function returned
    may be passed instead of the calibration (then ``mechanisms``, ``epsilons`` and ``error`` are its own).

    Parameters
    ----------
    calibration : Calibration (or what the factories take), or the DataFrame of ``utility_curves``
    mechanisms : mapping label -> callable(calibration, epsilon) -> Mechanism, optional
        Default: APGM and OptimalGaussian at δ = 1e-3.
    epsilons : sequence of float > 0, optional
        Default: 12 values from 0.1 to 5 (log-spaced).
    error : {"l2", "abs"}
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        One line per mechanism, gid ``"utility:<label>"``; log-log axes.
    """
    from ..mechanisms.utility import utility_curves

    table = calibration if isinstance(calibration, pd.DataFrame) else utility_curves(
        calibration, mechanisms, epsilons, error=error)
    return _draw_utility(table, _axes(ax))


def _draw_utility(table: pd.DataFrame, ax: Axes):
    """Stage 2 of :func:`plot_utility`: one line per column of the utility table."""
    eps = np.asarray(table.index, dtype=float)
    failures = table.attrs.get("failures", {})
    for j, label in enumerate(table.columns):
        failed = failures.get(label, ())
        note = f" (not built at {len(failed)} ε)" if failed else ""
        ax.plot(eps, table[label].to_numpy(dtype=float), "o-", color=f"C{j % 10}", label=f"{label}{note}",
                gid=f"utility:{label}")
    from matplotlib.ticker import FixedLocator, NullFormatter, ScalarFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    ticks = eps if eps.size <= 8 else eps[:: int(math.ceil(eps.size / 8))]
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(ScalarFormatter())
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("ε")
    ax.set_ylabel("expected L2 error sqrt(trace(noise_cov))" if table.attrs.get("error", "l2") == "l2"
                  else "mean E|noise| per component")
    ax.set_title("Utility against ε (lower is better)", fontsize="medium")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize="small")
    return ax


# -- quilt on the network -------------------------------------------------------------------------------------
_QUILT_COLOURS = {"node": "#d62728", "quilt": "#ff7f0e", "nearby": "#9ecae1", "remote": "#bdbdbd"}


def _resolve_quilt(source: Any, node: Hashable, quilt: Quilt | Iterable[Hashable] | None,
                   epsilon: float | None) -> tuple[Any, Any]:
    """(DAG, Quilt): the calibration computes the split (:meth:`QuiltCalibration.evaluate` /
    :meth:`QuiltCalibration.best`); with a bare graph, ``quilt`` must be a :class:`Quilt`."""
    from bayespriv.networks.quilts import Quilt, QuiltCalibration, as_digraph

    if isinstance(source, QuiltCalibration):
        if quilt is None:
            if epsilon is None:
                raise ValidationError("quilt must be given (a Quilt or a set of nodes), or epsilon to show "
                                      "Algorithm 2's choice at that ε; got neither")
            best = source.best(node, epsilon)
            if best is None:  # pragma: no cover - the trivial quilt is always usable
                raise ValidationError(f"epsilon must leave a usable quilt for {node!r}; got {epsilon!r}")
            return source.graph, best.quilt
        return source.graph, source.evaluate(node, quilt).quilt
    graph = as_digraph(source, "quilt_calibration_or_graph")
    if not isinstance(quilt, Quilt):
        raise ParameterTypeError("quilt must be a Quilt (with its nearby and remote sets) when a graph is given; got "
                                 f"{type(quilt).__name__} (pass the QuiltCalibration to have the split computed)")
    if node not in quilt.nearby or quilt.nodes != frozenset(graph.nodes()):
        raise fail("quilt", f"a Quilt of {node!r} (node in its nearby set) covering the graph's nodes", str(quilt))
    return graph, quilt


def _layered_layout(graph: Any) -> dict:
    """Positions by topological generation (parents above children), deterministic."""
    import networkx as nx

    g = graph.copy()
    for depth, layer in enumerate(nx.topological_generations(g)):
        for v in layer:
            g.nodes[v]["layer"] = depth
    pos = nx.multipartite_layout(g, subset_key="layer", align="horizontal")
    return {v: (x, -y) for v, (x, y) in pos.items()}


def plot_quilt(quilt_calibration_or_graph: Any, node: Hashable, quilt: Quilt | Iterable[Hashable] | None = None, *,
               epsilon: float | None = None, ax: Axes | None = None):
    """The network with the node, its Markov quilt X_Q, nearby set X_N and remote set X_R coloured.

    Parameters
    ----------
    quilt_calibration_or_graph : QuiltCalibration, networkx.DiGraph or pgmpy network
    node : hashable
        The sensitive node.
    quilt : Quilt or collection of nodes, optional
        With a calibration, a set Q is split into (Q, N, R) by
        :meth:`~bayespriv.networks.quilts.QuiltCalibration.evaluate`; with a bare graph it
        must be a :class:`~bayespriv.networks.quilts.Quilt`.
    epsilon : float, optional
        With a calibration and no ``quilt``: show Algorithm 2's choice at this ε
        (:meth:`~bayespriv.networks.quilts.QuiltCalibration.best`).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Node collections have gids ``"node"``, ``"quilt"``, ``"nearby"``, ``"remote"``
        (empty sets are not drawn); the legend lists the four roles.
    """
    import networkx as nx
    from matplotlib.patches import Patch

    graph, q = _resolve_quilt(quilt_calibration_or_graph, node, quilt, epsilon)
    ax = _axes(ax, (6.4, 4.8))
    pos = _layered_layout(graph)
    roles = {"node": [node], "quilt": sorted(q.quilt, key=str), "nearby": sorted(q.nearby - {node}, key=str),
             "remote": sorted(q.remote, key=str)}
    nx.draw_networkx_edges(graph, pos, ax=ax, arrows=True, arrowsize=15, edge_color="#555", node_size=1400)
    for role, members in roles.items():
        if members:
            coll = nx.draw_networkx_nodes(graph, pos, nodelist=members, node_color=_QUILT_COLOURS[role], ax=ax,
                                          node_size=1400, edgecolors="black")
            coll.set_gid(role)
    nx.draw_networkx_labels(graph, pos, ax=ax, font_size=9)
    text = {"node": f"sensitive node {node}", "quilt": "quilt X_Q", "nearby": "nearby X_N", "remote": "remote X_R"}
    ax.legend(handles=[Patch(facecolor=_QUILT_COLOURS[r], edgecolor="black", label=text[r]) for r in roles],
              fontsize="small", loc="upper center", bbox_to_anchor=(0.5, -0.02), ncol=4, frameon=False)
    ax.set_title(f"Markov quilt of {node}: {q}", fontsize="medium")
    ax.margins(0.15)
    ax.set_axis_off()
    return ax


# -- per-variable ε ---------------------------------------------------------------------------------------------
def plot_epsilon_table(table: pd.DataFrame, *, ax: Axes | None = None, cmap: str = "Reds"):
    """Heat map of ε per release (rows) and variable (columns), from :func:`bayespriv.epsilon_table`
    or :meth:`Ledger.epsilon_table`.

    Every cell is annotated with its value; ``inf`` cells (a variable used without protection)
    are drawn black with "∞". The colour scale covers the finite values.

    Parameters
    ----------
    table : pandas.DataFrame
        Rows: releases (and a composed total row); columns: variables.
    ax : matplotlib Axes, optional
    cmap : str

    Returns
    -------
    matplotlib.axes.Axes
        The image has gid ``"epsilon"``; annotations are the Axes' texts, row by row.
    """
    import pandas as pd

    if not isinstance(table, pd.DataFrame):
        raise ParameterTypeError("table must be a pandas DataFrame from epsilon_table(...); got "
                                 f"{type(table).__name__}")
    if table.empty:
        raise ValidationError(f"table must have at least one row and one column; got shape {table.shape}")
    values = table.to_numpy(dtype=float)
    if np.any(np.isnan(values)) or np.any(values < 0):
        raise ValidationError("table must hold ε ≥ 0 (or inf) in every cell; got nan or negative values")
    label_width = max(len(str(r)) for r in table.index)
    ax = _axes(ax, (2.6 + 0.09 * label_width + 1.0 * values.shape[1], 1.8 + 0.45 * values.shape[0]))
    finite = np.isfinite(values)
    top = float(values[finite].max()) if finite.any() else 1.0
    shown = np.ma.masked_array(values, mask=~finite)
    import matplotlib as mpl

    colours = mpl.colormaps[cmap].with_extremes(bad="black")
    image = ax.imshow(shown, cmap=colours, vmin=0.0, vmax=top if top > 0 else 1.0, aspect="auto", gid="epsilon")
    for (i, j), v in np.ndenumerate(values):
        dark = not np.isfinite(v) or (top > 0 and v / top > 0.6)
        ax.text(j, i, "∞" if np.isinf(v) else f"{v:.3g}", ha="center", va="center", fontsize="small",
                color="white" if dark else "black")
    ax.set_xticks(range(values.shape[1]), [str(c) for c in table.columns], rotation=30, ha="right")
    ax.set_yticks(range(values.shape[0]), [str(r) for r in table.index])
    ax.set_xlabel(str(table.columns.name or "variable"))
    ax.set_ylabel(str(table.index.name or "release"))
    ax.figure.colorbar(image, ax=ax, label="ε (black: ∞, not private)")
    ax.set_title("ε per variable (Tan, Propositions 3.3–3.5)", fontsize="medium")
    return ax


# -- budget over time ------------------------------------------------------------------------------------------
#: What the x axis of :func:`plot_budget` can show.
BUDGET_AXES = ("release", "time")


def _budget_series(releases: pd.DataFrame, budget: str, x: str) -> tuple[Any, np.ndarray, np.ndarray]:
    """Stage 1 of :func:`plot_budget`: (x positions, cumulative ε, established flags) of one budget's
    live releases; x is the release id (``x="release"``) or its UTC time (``x="time"``)."""
    import pandas as pd

    mine = releases[[budget in p for p in releases["protected"]]]
    established = np.asarray(mine["established"].fillna(True), dtype=bool)  # NA: an old row, not recorded
    where = pd.DatetimeIndex(mine["time_utc"]) if x == "time" else np.asarray(mine.index, dtype=float)
    return where, np.cumsum(mine["epsilon"].to_numpy(dtype=float)), established


def _budget_x_axis(ax: Axes, releases: pd.DataFrame, x: str) -> None:
    """Stage 3 of :func:`plot_budget`: release numbers ``#id`` (with the time span in the label), or dates."""
    import matplotlib.dates as mdates
    import pandas as pd
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    times = pd.DatetimeIndex(releases["time_utc"])
    if x == "time":
        locator = mdates.AutoDateLocator(minticks=2, maxticks=6)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%Y-%m-%d\n%H:%M:%S"))
        ax.set_xlabel("release time (UTC)")
        return
    ax.xaxis.set_major_locator(MaxNLocator(integer=True, min_n_ticks=1))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"#{int(round(v))}"))
    span = "" if not len(times) else (f" ({times.min():%Y-%m-%d %H:%M} to {times.max():%Y-%m-%d %H:%M} UTC)"
                                      if times.max() - times.min() >= pd.Timedelta(minutes=1)
                                      else f" (all on {times.min():%Y-%m-%d %H:%M} UTC)")
    ax.set_xlabel(f"release number in the ledger{span}")


def plot_budget(ledger: Ledger, budgets: Sequence[str] | None = None, *, x: str = "release", ax: Axes | None = None):
    """Cumulative ε spent per budget, release after release, from a :class:`~bayespriv.Ledger`.

    Read from ``ledger.releases()`` (voided rows excluded: they were refunded) and
    ``ledger.budget(name)``: one step line per budget (each release charges its ε to every
    budget it protects), its total as a dashed line, and releases made with a failed
    assumption check (not established) marked with a red cross.

    Parameters
    ----------
    ledger : Ledger
    budgets : sequence of str, optional
        Default: every budget of ``ledger.report()``.
    x : {"release", "time"}
        The x axis: release numbers as the ledger counts them (``#1``, ``#2``…, the index of
        ``ledger.releases()``; the label gives the dates they span), or the release time as
        dates (UTC).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Step lines have gid ``"spent:<budget>"``, totals ``"total:<budget>"``, crosses
        ``"not_established:<budget>"``.
    """
    if not all(hasattr(ledger, a) for a in ("releases", "budget", "report")):
        raise ParameterTypeError(f"ledger must be a bayespriv Ledger; got {type(ledger).__name__}")
    if x not in BUDGET_AXES:
        raise ValidationError(f"x must be one of {BUDGET_AXES!r}; got {x!r}")
    names = list(ledger.report().index) if budgets is None else [str(b) for b in budgets]
    if not names:
        raise ValidationError("budgets must name at least one budget; got a ledger without budgets")
    releases = ledger.releases()
    live = releases[~releases["voided"]]
    ax = _axes(ax, (7.0, 4.2))
    for j, name in enumerate(names):
        color = f"C{j % 10}"
        where, spent, established = _budget_series(live, name, x)
        total = ledger.budget(name)[0]
        if len(where):
            ax.plot([where[0], where[0]], [0.0, spent[0]], color=color, lw=1.5)  # from nothing spent
            ax.step(where, spent, where="post", marker="o", color=color, label=f"{name}: spent {spent[-1]:.4g}",
                    gid=f"spent:{name}")
            if not established.all():
                ax.plot(where[~established], spent[~established], "x", color="#b00", ms=12, mew=2,
                        label=f"{name}: not established", gid=f"not_established:{name}")
        ax.axhline(total, color=color, ls="--", lw=1, label=f"{name}: budget {total:.4g}", gid=f"total:{name}")
    _budget_x_axis(ax, live, x)
    ax.set_ylabel("cumulative ε")
    ax.set_title("Budget spent per release (voided releases excluded)", fontsize="medium")
    ax.grid(True, alpha=0.3)
    ax.set_ylim(bottom=0.0)
    ax.legend(fontsize="small")
    return ax


# -- Q–Q against the Gaussian fit --------------------------------------------------------------------------------
#: Most points drawn per secret (evenly spaced order statistics beyond that).
QQ_MAX_POINTS = 1000


def _qq_points(x: np.ndarray, mu: float, var: float, band: float) -> tuple[np.ndarray, ...]:
    """(fit quantiles, sample quantiles, band low, band high) at plotting positions (i − ½)/n.

    The band: where the sample quantile would be if the empirical CDF were ``band`` away from the
    fit's (DKW half-width, see :func:`plot_qq`)."""
    from scipy.stats import norm

    n = x.size
    keep = np.unique(np.linspace(0, n - 1, min(n, QQ_MAX_POINTS)).round().astype(int))
    p = (keep + 0.5) / n
    sd = math.sqrt(var)
    theo = norm.ppf(p, mu, sd)
    low = norm.ppf(np.clip(p - band, 0.0, 1.0), mu, sd)
    high = norm.ppf(np.clip(p + band, 0.0, 1.0), mu, sd)
    return theo, np.sort(x)[keep], low, high


def plot_qq(calibration: Calibration, component: int | str = 0, *, secrets: Sequence[Secret | str] | None = None,
            level: float = 0.95, ax: Axes | None = None):
    """Q–Q plot of F per secret against its Gaussian fit N(μ̂, σ̂²) — what ``gaussian_query`` assumes.

    For each secret: the sorted samples of the component against the quantiles of the
    calibration's fitted Gaussian (its estimated mean and variance) at (i − ½)/n, with the line
    y = x and a shaded band: the quantiles the samples would have if their empirical CDF were
    ε_n = sqrt(ln(2/(1 − level)) / (2n)) from the fit's (Dvoretzky–Kiefer–Wolfowitz). Points
    outside the band are a visible departure; the formal check is
    :func:`~bayespriv.calibration.assumptions.check_assumptions`.

    Parameters
    ----------
    calibration : Calibration
        With samples.
    component : int or str
    secrets : sequence of Secret or labels, optional
        Default: the secrets of the worst pair.
    level : float in (0, 1)
        Of the DKW band.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Points have gid ``"qq:<secret label>"``, bands ``"band:<secret label>"``, the line ``"identity"``.
    """
    from .._validation import check_confidence

    if not isinstance(calibration, Calibration):
        raise ParameterTypeError(f"calibration must be a bayespriv Calibration; got {type(calibration).__name__}")
    if calibration.samples is None:
        raise ValidationError("plot_qq needs a calibration with samples (from bayespriv.calibrate); got one built from "
                              "moments only (Calibration.from_moments)")
    if component is None:
        raise ParameterTypeError("component must be one component index or name; got None")
    (c,) = _resolve_components(calibration, component)
    idx = _resolve_secrets(calibration, secrets)
    level = check_confidence(level, "level")
    if level is None:
        raise ParameterTypeError("level must be a number in (0, 1); got None")
    values = np.asarray(calibration.samples.values)
    ax = _axes(ax, (5.2, 5.0))
    lo, hi = math.inf, -math.inf
    for j, i in enumerate(idx):
        x = values[i, :, c]
        x = x[np.isfinite(x)]
        var = float(calibration.cov_array[i, c, c])
        if var <= 0 or x.size < 2:
            raise ValidationError(f"the fit of secret {calibration.secrets[i].label!r} must have a variance > 0 and "
                                  f"2+ draws to draw a Q–Q plot; got variance {var:g} and {x.size} draws")
        band = math.sqrt(math.log(2.0 / (1.0 - level)) / (2.0 * x.size))
        theo, sample, low, high = _qq_points(x, float(calibration.mean_array[i, c]), var, band)
        label = calibration.secrets[i].label
        ax.fill_between(theo, low, high, color=f"C{j % 10}", alpha=0.15, lw=0, gid=f"band:{label}")
        ax.plot(theo, sample, ".", ms=3, color=f"C{j % 10}", label=f"{label} ({x.size} draws)", gid=f"qq:{label}")
        lo, hi = min(lo, theo[0], sample[0]), max(hi, theo[-1], sample[-1])
    ax.plot([lo, hi], [lo, hi], color="black", lw=1, gid="identity")
    name = calibration.component_names[c]
    ax.set_xlabel(f"quantiles of the Gaussian fit N(μ̂, σ̂²) of {name}")
    ax.set_ylabel(f"sample quantiles of {name}")
    ax.set_title(f"Q–Q against the Gaussian fit (band: DKW {level:g})", fontsize="medium")
    ax.legend(fontsize="small")
    return ax


# -- convergence: was n_draws enough? ------------------------------------------------------------------
def plot_convergence(calibration: Calibration | Convergence, *, ord: float | str = 2, target: float | None = None,
                     n_points: int = 20, axes: Any = None):
    """The sensitivity bound and its slack as the draws accumulate.

    Draws what :func:`bayespriv.calibration.convergence.convergence` computes
    (the calibration recomputed on prefixes of its draws): left, the L_ord
    sensitivity estimate and its upper bound against the draws per secret;
    right, the slack (bound − estimate) on log–log axes with the ``1/√n`` line
    through the last point, which is how the slack keeps shrinking with more
    draws. With ``target``, the target slack is drawn and the draws it needs
    (:func:`~bayespriv.calibration.convergence.draws_for_slack`) are marked.

    Parameters
    ----------
    calibration : Calibration or Convergence
        A sampled calibration, or its computed convergence (then ``target`` is
        extrapolated from its last point).
    ord : {1, 2, "inf"}, default 2
    target : float > 0, optional
        A wanted slack.
    n_points : int, default 20
        Prefix sizes (ignored for a Convergence).
    axes : sequence of two matplotlib Axes, optional

    Returns
    -------
    ndarray of two matplotlib.axes.Axes
        Lines have gid ``"estimate"``, ``"bound"``, ``"slack"``, ``"sqrt-n"``, and with a
        target ``"target"`` and ``"draws-for-target"``.
    """
    from ..calibration.convergence import Convergence, convergence

    conv = calibration if isinstance(calibration, Convergence) else convergence(calibration, ord, n_points=n_points)
    if axes is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(1, 2, figsize=(10.0, 4.0), layout="constrained")
    axes = np.asarray(axes).reshape(-1)
    if axes.size != 2 or not all(hasattr(a, "plot") for a in axes):
        raise ParameterTypeError(f"axes must be two matplotlib Axes; got {axes.size} object(s)")
    norm = {1.0: "L1", 2.0: "L2"}.get(conv.ord, "L∞")
    left, right = axes
    left.plot(conv.n, conv.sensitivity, "o-", ms=3, label="estimate", gid="estimate")
    left.plot(conv.n, conv.sensitivity_bound, "s-", ms=3, label=f"bound (confidence {conv.confidence})", gid="bound")
    left.set_xscale("log")
    left.set_xlabel("draws per secret")
    left.set_ylabel(f"{norm} sensitivity")
    left.legend(fontsize="small")
    n_last, s_last = float(conv.n[-1]), float(conv.slack[-1])
    right.plot(conv.n, conv.slack, "o-", ms=3, label="slack (bound − estimate)", gid="slack")
    grid = np.geomspace(float(conv.n[0]), n_last * 4, 50)
    if s_last > 0:
        right.plot(grid, s_last * np.sqrt(n_last / grid), "--", color="grey", label="∝ 1/√n", gid="sqrt-n")
    if target is not None:
        need = conv.draws_for_slack(target)  # validates target; refuses a calibration without slack
        right.axhline(float(target), color="C3", lw=1, label=f"target {float(target):.3g}", gid="target")
        right.axvline(need, color="C3", ls=":", label=f"{need} draws", gid="draws-for-target")
    right.set_xscale("log")
    right.set_yscale("log")
    right.set_xlabel("draws per secret")
    right.set_ylabel("slack")
    right.legend(fontsize="small")
    return axes


def _noise_density(noise: ReleaseNoise, c: int, offsets: np.ndarray) -> np.ndarray:
    """Density of component c of a release's noise at ``offsets`` (uniform grid, increasing): the normal
    part, each Laplace term, convolved numerically on the grid."""
    from scipy.stats import laplace, norm

    var, weights = noise.component_terms(c)
    step = float(offsets[1] - offsets[0])
    terms = ([norm.pdf(offsets, scale=math.sqrt(var))] if var > 0 else []) + [laplace.pdf(offsets, scale=w)
                                                                               for w in weights]
    density = terms[0]
    for t in terms[1:]:
        density = np.convolve(density, t, mode="same") * step
    return density


def plot_release(release: Release, *, component: int | str = 0, true_value: float | None = None, level: float = 0.95,
                 ax: Axes | None = None):
    """A released value with the law of its noise: where the true answer plausibly lies.

    The curve is the density of the noise centred at the released value (what a recipient knows: the
    truth is the value minus a draw of that law), the band its noise-only interval at ``level``
    (:meth:`~bayespriv.mechanisms.Release.interval`), the marker the release. ``true_value``, which
    only the data owner has (a demo, a simulation), adds a line at the true answer. A release with no
    noise is drawn as one line and says so (its guarantee rests on the statistic's own spread).

    Parameters
    ----------
    release : Release
        With its noise law (``release.noise``).
    component : int or str
        Index or name of the component drawn.
    true_value : float, optional
    level : float in (0, 1)
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib.axes.Axes
        Artists with gids ``"release:density"``, ``"release:interval"``, ``"release:value"`` and
        ``"release:truth"`` (those that apply).
    """
    from bayespriv.privacy.guarantee import Release

    if not isinstance(release, Release):
        raise ParameterTypeError(f"release must be a Release; got {type(release).__name__}")
    noise = release.noise_law("plot_release")
    names = release.component_names or tuple(str(i) for i in range(release.value.size))
    c = names.index(component) if component in names else component
    if not isinstance(c, (int, np.integer)) or not 0 <= c < release.value.size:
        raise fail("component", f"an index in [0, {release.value.size}) or one of {list(names)}", component)
    ax = _axes(ax)
    value, sd = float(release.value[c]), float(noise.sd[c])
    if sd > 0:
        offsets = np.linspace(-6.0 * sd, 6.0 * sd, 1201)
        ax.plot(value + offsets, _noise_density(noise, c, offsets), color="C0", gid="release:density",
                label=f"noise law around the release (sd {sd:.3g})")
        low, high = release.interval(level)[c]
        ax.axvspan(low, high, color="C0", alpha=0.15, gid="release:interval",
                   label=f"{level:.0%} noise-only interval [{low:.4g}, {high:.4g}]")
        ax.set_ylabel("density")
    else:
        ax.text(0.02, 0.95, "no noise: the statistic's own spread\nmeets (ε, δ) (see the guarantee)",
                transform=ax.transAxes, va="top", fontsize="small")
        ax.set_yticks([])
    ax.axvline(value, color="C3", lw=2, gid="release:value", label=f"released {value:.4g}")
    if true_value is not None:
        ax.axvline(float(true_value), color="k", ls="--", gid="release:truth", label=f"true {float(true_value):.4g}")
    ax.set_xlabel(names[c])
    ax.set_title(f"{release.mechanism}: {names[c]}", fontsize="medium")
    ax.legend(fontsize="small")
    return ax
