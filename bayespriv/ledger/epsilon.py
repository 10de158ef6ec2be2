"""ε on each subset of the variables (Tan, Propositions 3.2–3.5 and Example 3.6).

A release depends on some of the dataset's variables (``variables``) and protects some of them
(``protected``): a differentially private release protects every variable it uses; a table of
Algorithm 1 protects the protected variable and releases the public one exactly. For a subset W of
the variables, a release is

* **0-private on W** when it uses no variable of W (Proposition 3.3: it is independent of the values
  of W);
* **ε-private on W** when every variable of W it uses is protected by its ε guarantee
  (Proposition 3.5 for ε-DP, Proposition 3.2 for a guarantee on a larger set, and Proposition 3.3 for
  the variables it does not use: a neighbour that also changes unused variables changes nothing the
  release sees);
* **not private on W** (ε = ∞) when it uses a variable of W without protecting it (e.g. the exact
  public margins of Algorithm 1).

Releases compose sequentially (Proposition 3.4): the ε on W of a collection is the sum.

For releases of the Pufferfish mechanisms of :mod:`bayespriv.mechanisms`, ``protected`` names the
attributes their secrets are about, and the entry is the ε of their guarantee for those secrets;
summing them assumes sequential composition holds for the secrets and Θ at hand (it does for
ε-privacy on a subset, by Proposition 3.4, and for Pufferfish instantiations with independent
mechanisms in general only under conditions on Θ — Kifer & Machanavajjhala 2014, §5).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from bayespriv._validation import check_name_or_none, check_real, check_sequence, fail, seal_fields
from bayespriv.errors import ParameterTypeError

__all__ = ["UNPROTECTED", "VariableRelease", "as_variable_release", "epsilon_on", "epsilon_table"]

#: What an ``inf`` of :func:`epsilon_table` means, for views made for a person.
UNPROTECTED = "not private: used without protection"


def _names(value: Any, name: str) -> tuple[str, ...]:
    if isinstance(value, str):
        value = (value,)
    try:
        items = tuple(value)
    except TypeError:
        raise ParameterTypeError(f"{name} must be a sequence of variable names; got {value!r}") from None
    for v in items:
        if not isinstance(v, str) or not v:
            raise ParameterTypeError(f"{name} must contain non-empty strings; got {v!r}")
    return tuple(dict.fromkeys(items))


@seal_fields
@dataclass(frozen=True)
class VariableRelease:
    """What per-variable accounting needs to know about one release.

    Attributes
    ----------
    name : str
        Row label in :func:`epsilon_table`.
    epsilon : float
        ε of the release's guarantee (≥ 0, finite).
    variables : tuple of str, or None
        The variables the release depends on; ``None`` means unknown, counted as every variable.
    protected : tuple of str, or None
        The variables its ε protects; ``None`` (the default) means all of ``variables`` (ε-DP on
        the variables it uses, Proposition 3.5). Variables used but not protected are released
        without privacy (ε = ∞ on any subset containing them).
    delta : float
        δ of the guarantee (summed alongside ε; 0 for pure ε-privacy).

    Examples
    --------
    Exact ages released next to a private answer about sex: ε on sex, but nothing protects age.

    >>> from bayespriv import VariableRelease
    >>> release = VariableRelease("ages and sex", 0.5, ["age", "sex"], protected=["sex"])
    >>> release.epsilon_on(("sex",)), release.epsilon_on(("age",)), release.epsilon_on(("income",))
    (0.5, inf, 0.0)
    """

    name: str
    epsilon: float
    variables: tuple[str, ...] | None
    protected: tuple[str, ...] | None = None
    delta: float = 0.0

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise ParameterTypeError(f"name must be a non-empty string; got {self.name!r}")
        eps = check_real("epsilon", self.epsilon)
        if not (math.isfinite(eps) and eps >= 0):
            raise fail("epsilon", "a finite number >= 0", self.epsilon)
        object.__setattr__(self, "epsilon", eps)
        delta = check_real("delta", self.delta)
        if not 0.0 <= delta < 1.0:
            raise fail("delta", "in [0, 1)", self.delta)
        object.__setattr__(self, "delta", delta)
        if self.variables is not None:
            object.__setattr__(self, "variables", _names(self.variables, "variables"))
        if self.protected is None:
            object.__setattr__(self, "protected", self.variables)
        else:
            prot = _names(self.protected, "protected")
            if self.variables is not None:
                extra = [p for p in prot if p not in self.variables]
                if extra:
                    raise fail("protected", f"a subset of variables {self.variables!r}", extra)
            object.__setattr__(self, "protected", prot)

    def epsilon_on(self, subset: Iterable[str]) -> float:
        """ε of this release on the set of variables ``subset`` (0, ε or ∞; see the module)."""
        w = set(_names(subset, "subset"))
        used = w if self.variables is None else w & set(self.variables)
        if not used:
            return 0.0
        protected = set(self.protected) if self.protected is not None else used
        return self.epsilon if used <= protected else math.inf


def as_variable_release(release: Any, name: str | None = None) -> VariableRelease:
    """A :class:`VariableRelease` for a bayespriv ``Release``, a table of :func:`subset_count_table`,
    a mechanism, or any object with ``guarantee`` and ``variables`` (and optionally ``protected``).

    A bayespriv ``Release`` whose ``variables`` is empty (its query was unknown) is counted as using
    every variable. ``protected`` defaults to ``variables`` (ε-DP on the variables used).
    """
    if isinstance(release, VariableRelease):
        return release if name is None else VariableRelease(name, release.epsilon, release.variables,
                                                            release.protected, release.delta)
    if isinstance(release, pd.DataFrame):
        attrs = release.attrs
        if "guarantee" not in attrs or "variables" not in attrs:
            raise ParameterTypeError("a DataFrame release must carry attrs['guarantee'] and attrs['variables'] "
                                     "(as subset_count_table's result does)")
        g, variables, protected = attrs["guarantee"], attrs["variables"], attrs.get("protected")
        label = name or attrs.get("name") or "table"
    else:
        g = getattr(release, "guarantee", None)
        if g is None or not hasattr(release, "variables"):
            raise ParameterTypeError(f"a release must have a guarantee and variables; got {type(release).__name__}")
        variables, protected = release.variables, getattr(release, "protected", None)
        mech = getattr(release, "mechanism", type(release).__name__)
        query = getattr(release, "query", None) or getattr(release, "query_name", None)
        label = name or (f"{mech}({query})" if query else str(mech))
    variables = tuple(variables) if variables else None
    if protected is not None:
        protected = tuple(protected)
        # Pufferfish releases name attributes of secrets (parameters) that the query may not use
        if variables is not None:
            variables = tuple(dict.fromkeys(variables + protected))
    return VariableRelease(label, g.epsilon, variables, protected, g.delta)


def _collect(releases: Any) -> list[VariableRelease]:
    if isinstance(releases, Mapping):
        return [as_variable_release(r, str(k)) for k, r in releases.items()]
    if isinstance(releases, (VariableRelease, pd.DataFrame)) or hasattr(releases, "guarantee"):
        return [as_variable_release(releases)]
    out = []
    for i, r in enumerate(check_sequence(releases, "releases", what="releases (or a mapping name -> release)")):
        try:
            out.append(as_variable_release(r))
        except ParameterTypeError as exc:
            raise ParameterTypeError(f"releases[{i}]: {exc}") from None
    return out


def _compose(values: Iterable[float]) -> float:
    values = list(values)
    if any(math.isinf(v) for v in values):
        return math.inf
    return math.fsum(values)  # correctly rounded: 10 × 0.1 == 1.0


def epsilon_on(releases: Any, variables: Iterable[str] | str) -> float:
    """ε of a collection of releases on the subset ``variables`` (Propositions 3.2–3.5).

    0 for releases that do not use the subset, the release's ε for those that protect what they use
    of it, ∞ for those that release some of it exactly; summed over releases (Proposition 3.4).

    Examples
    --------
    The three tables of the paper's Example 3.6, each ε = 1 on the variables it uses:

    >>> from bayespriv import VariableRelease, epsilon_on
    >>> tables = [VariableRelease("Table A", 1, ["age", "sex"]),
    ...           VariableRelease("Table B", 1, ["residential region", "race"]),
    ...           VariableRelease("Table C", 1, ["residential region", "age"])]
    >>> epsilon_on(tables, ["age"]), epsilon_on(tables, ["sex", "race"]), epsilon_on(tables, "other variable")
    (2.0, 2.0, 0.0)
    """
    subset = _names(variables, "variables")
    return _compose(r.epsilon_on(subset) for r in _collect(releases))


def epsilon_table(releases: Any, variables: Iterable[str] | None = None, *, total: str | None = "Total") -> pd.DataFrame:
    """ε of each release (rows) on each singleton {variable} (columns), with a composed total row.

    Parameters
    ----------
    releases : iterable or mapping name → release
        :class:`VariableRelease`, bayespriv ``Release``, tables from :func:`subset_count_table`, or
        anything with ``guarantee`` and ``variables``. A mapping gives the row labels.
    variables : iterable of str, optional
        Columns, in order (default: every variable the releases use — or protect, when what they
        use is unknown — in order of appearance). Add variables no release uses to show their 0.
    total : str or None
        Label of the row composing all releases (Proposition 3.4); ``None`` omits it.

    Returns
    -------
    pandas.DataFrame of float (``inf`` where a release is not private on the variable).

    Examples
    --------
    The paper's Example 3.6 / Table 1:

    >>> rel = [VariableRelease("Table A", 1, ["age", "sex"]),
    ...        VariableRelease("Table B", 1, ["residential region", "race"]),
    ...        VariableRelease("Table C", 1, ["residential region", "age"])]
    >>> epsilon_table(rel, ["age", "sex", "residential region", "race", "other variable"],
    ...               total="Tables A, B & C").astype(int)  # doctest: +NORMALIZE_WHITESPACE
    variable         age  sex  residential region  race  other variable
    release
    Table A            1    1                   0     0               0
    Table B            0    0                   1     1               0
    Table C            1    0                   1     0               0
    Tables A, B & C    2    1                   2     1               0
    """
    total = check_name_or_none(total, "total")
    recs = _collect(releases)
    if variables is None:
        cols = list(dict.fromkeys(v for r in recs for v in (r.variables or r.protected or ())))
    else:
        cols = list(_names(variables, "variables"))
    data = [[r.epsilon_on((v,)) for v in cols] for r in recs]
    index = [r.name for r in recs]
    if total is not None:
        data.append([_compose(row[j] for row in data) for j in range(len(cols))])
        index.append(str(total))
    out = pd.DataFrame(data, index=pd.Index(index, name="release"), columns=pd.Index(cols, name="variable"), dtype=float)
    return out
