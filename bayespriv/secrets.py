"""Secrets (facts to hide) and secret pairs (what must stay indistinguishable).

A *dataset secret* is an event on a statistic g_i(X_i) of a sensitive column
(Definition 4 of the attribute-privacy paper): "the share of women among the
50 patients is 0.25", "the mean height is 66". A *distribution secret* is an
event on a parameter φ_i of the distribution the records come from
(Definition 5; distribution privacy's θ): "p_female = 0.5".

Secrets are frozen and hashable; they are the keys of a calibration's moments.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Literal, Union

from ._validation import check_real, check_sequence, fail
from .errors import ParameterTypeError, UnsupportedSecretError, ValidationError

__all__ = ["DatasetSecret", "DistributionSecret", "Secret", "SecretPair", "pairs_between", "all_pairs", "as_pairs", "share_count"]


def _check_value(value: Any, name: str) -> float:
    """A finite real number (the value a secret fixes)."""
    v = check_real(name, value)
    if not math.isfinite(v):
        raise fail(name, "finite", value)
    return v


def _check_secrets(values: Any, name: str) -> list:
    """A collection of DatasetSecret / DistributionSecret objects."""
    out = list(check_sequence(values, name, what="secrets"))
    for s in out:
        if not isinstance(s, (DatasetSecret, DistributionSecret)):
            raise ParameterTypeError(f"{name} must contain only DatasetSecret or DistributionSecret objects; "
                                     f"got {type(s).__name__}")
    return out


def _check_name(value: Any, name: str) -> str:
    if not isinstance(value, str) or not value:
        raise ParameterTypeError(f"{name} must be a non-empty string; got {value!r}")
    return value


def check_category(category: Any) -> None:
    """A proportion's category is one value a cell can equal: hashable (secrets are dict keys and
    categories are looked up in tables) and not a missing value (NaN equals no cell)."""
    try:
        hash(category)
    except TypeError:
        raise fail("category", "one hashable value such as a string or a number (not a list or an array)",
                   category) from None
    try:
        missing = bool(category != category)
    except (TypeError, ValueError):  # pd.NA: its comparisons are neither True nor False
        missing = True
    if missing:
        raise fail("category", "a value a cell can equal (not NaN, NaT or pd.NA)", category)


@dataclass(frozen=True)
class DatasetSecret:
    """The event that a statistic of a sensitive column takes a value.

    Build it with :meth:`proportion` or :meth:`mean`.

    Attributes
    ----------
    column : str
        The sensitive column X_i.
    statistic : {"proportion", "mean"}
        g_i: share of records in ``category``, or the column mean.
    value : float
        The value g_i(X_i) takes under this secret.
    category : object, optional
        For proportions: the category whose share is fixed.

    Examples
    --------
    >>> import bayespriv as bp
    >>> women = bp.DatasetSecret.proportion("sex", "Female", 0.25)
    >>> women.column, women.statistic, women.value, women.category
    ('sex', 'proportion', 0.25, 'Female')
    >>> str(bp.DatasetSecret.mean("height", 66.0))
    'mean(height)=66'
    """

    column: str
    statistic: Literal["proportion", "mean"]
    value: float
    category: Any = None

    def __post_init__(self) -> None:
        _check_name(self.column, "column")
        if not isinstance(self.statistic, str) or self.statistic not in ("proportion", "mean"):
            raise fail("statistic", "'proportion' or 'mean'", self.statistic)
        value = check_real("value", self.value)
        if not math.isfinite(value):
            raise fail("value", "finite", self.value)
        if self.statistic == "proportion":
            if not 0.0 <= value <= 1.0:
                raise fail("p", "a proportion in [0, 1]", self.value)
            if self.category is None:
                raise ValidationError("category must be given for a proportion secret; got None")
            check_category(self.category)
        object.__setattr__(self, "value", value)

    @classmethod
    def proportion(cls, column: str, category: Any, p: float) -> "DatasetSecret":
        """Secret "the share of records with ``column == category`` is ``p``".

        Privacy
        -------
        A proportion secret fixes how many records are in ``category`` (p·n of
        them), not which ones; the papers' guarantees for it treat the records
        as exchangeable, so every calibration using it carries the assumption
        ``"exchangeable_records"`` (see :attr:`bayespriv.Calibration.assumptions`).
        """
        if not 0.0 <= _check_value(p, "p") <= 1.0:
            raise fail("p", "a proportion in [0, 1]", p)
        return cls(column, "proportion", p, category)

    @classmethod
    def mean(cls, column: str, a: float) -> "DatasetSecret":
        """Secret "the mean of ``column`` over the dataset is ``a``"."""
        _check_value(a, "a")
        return cls(column, "mean", a)

    @property
    def attribute(self) -> str:
        """The sensitive attribute this secret is about (pairs must share it)."""
        return self.column

    @property
    def label(self) -> str:
        """Short readable form, e.g. ``"share(sex=Female)=0.25"`` or ``"mean(height)=66"``."""
        if self.statistic == "proportion":
            return f"share({self.column}={self.category})={self.value:g}"
        return f"mean({self.column})={self.value:g}"

    def __str__(self) -> str:
        return self.label


@dataclass(frozen=True)
class DistributionSecret:
    """The event that a parameter φ_i of the data distribution equals ``value``.

    Attributes
    ----------
    parameter : str
        Name of the parameter (a hyperparameter of a PyMC model, a CPD
        parameter of a Bayesian network, a column of a family's grid).
    value : float
        The value φ_i takes under this secret.

    Examples
    --------
    >>> import bayespriv as bp
    >>> pair = bp.SecretPair(bp.DistributionSecret("p_female", 0.3), bp.DistributionSecret("p_female", 0.7))
    >>> str(pair)
    'p_female=0.3 vs p_female=0.7'
    """

    parameter: str
    value: float

    def __post_init__(self) -> None:
        _check_name(self.parameter, "parameter")
        value = check_real("value", self.value)
        if not math.isfinite(value):
            raise fail("value", "finite", self.value)
        object.__setattr__(self, "value", value)

    @property
    def attribute(self) -> str:
        """The protected attribute: the parameter's name (a ledger charges this budget)."""
        return self.parameter

    @property
    def label(self) -> str:
        """Short readable form, e.g. ``"p_female=0.5"``."""
        return f"{self.parameter}={self.value:g}"

    def __str__(self) -> str:
        return self.label


Secret = Union[DatasetSecret, DistributionSecret]


@dataclass(frozen=True)
class SecretPair:
    """A discriminative pair (s_a, s_b): the release must not tell them apart.

    Both secrets must be of the same kind, about the same attribute, and differ.

    Examples
    --------
    >>> import bayespriv as bp
    >>> pair = bp.SecretPair(bp.DatasetSecret.proportion("sex", "Female", 0.25),
    ...                      bp.DatasetSecret.proportion("sex", "Female", 0.5))
    >>> pair.label
    'share(sex=Female)=0.25 vs share(sex=Female)=0.5'
    >>> bp.SecretPair(bp.DistributionSecret("p", 0.1), bp.DistributionSecret("q", 0.2))
    Traceback (most recent call last):
    ...
    bayespriv.errors.ValidationError: a secret pair must be about one attribute (Definition 4/5: pairs (s_a^i, s_b^i)); got 'p' and 'q'
    """

    a: Secret
    b: Secret

    def __post_init__(self) -> None:
        for name, s in (("a", self.a), ("b", self.b)):
            if not isinstance(s, (DatasetSecret, DistributionSecret)):
                raise ParameterTypeError(
                    f"SecretPair.{name} must be a DatasetSecret or DistributionSecret; got {type(s).__name__}"
                )
        if type(self.a) is not type(self.b):
            raise ValidationError(
                f"a secret pair must join secrets of one kind; got {type(self.a).__name__} and {type(self.b).__name__}"
            )
        if self.a.attribute != self.b.attribute:
            raise ValidationError(
                "a secret pair must be about one attribute (Definition 4/5: pairs (s_a^i, s_b^i)); "
                f"got {self.a.attribute!r} and {self.b.attribute!r}"
            )
        if isinstance(self.a, DatasetSecret) and (self.a.statistic, self.a.category) != (self.b.statistic, self.b.category):
            raise ValidationError(
                f"a secret pair must be about one statistic; got {self.a.label!r} and {self.b.label!r}"
            )
        if self.a == self.b:
            raise ValidationError(f"the two secrets of a pair must differ; got {self.a.label!r} twice")

    @property
    def secrets(self) -> tuple[Secret, Secret]:
        """The two secrets, ``(a, b)``."""
        return (self.a, self.b)

    @property
    def label(self) -> str:
        """The two secrets' labels, ``"a vs b"``."""
        return f"{self.a.label} vs {self.b.label}"

    def __str__(self) -> str:
        return self.label


def share_count(p: float, n_records: int) -> int:
    """k = p·n: the number of records a share ``p`` of ``n_records`` fixes.

    Raises :class:`~bayespriv.errors.UnsupportedSecretError` when no dataset of
    ``n_records`` records can have that share (p·n not a whole number).
    """
    exact = float(p) * n_records
    k = round(exact)
    if abs(exact - k) > 1e-9 * max(1, n_records):
        raise UnsupportedSecretError(
            f"p·n_records must be an integer number of records (the secret fixes exactly p·n of them); "
            f"got p={float(p):g}, n_records={n_records}, p·n={exact:g}; use a multiple of 1/{n_records}"
        )
    return int(k)


def pairs_between(first: Iterable[Secret], second: Iterable[Secret]) -> tuple[SecretPair, ...]:
    """Every secret of ``first`` against every secret of ``second``.

    This is the pair set of the papers' experiments, e.g. the share of women
    ``a in (0.25, 0.5)`` against ``b in (0.5, 0.75)``.

    Examples
    --------
    >>> import bayespriv as bp
    >>> share = lambda p: bp.DatasetSecret.proportion("sex", "Female", p)
    >>> pairs = bp.pairs_between([share(0.25), share(0.4)], [share(0.6), share(0.75)])
    >>> [p.label for p in pairs]  # doctest: +NORMALIZE_WHITESPACE
    ['share(sex=Female)=0.25 vs share(sex=Female)=0.6', 'share(sex=Female)=0.25 vs share(sex=Female)=0.75',
     'share(sex=Female)=0.4 vs share(sex=Female)=0.6', 'share(sex=Female)=0.4 vs share(sex=Female)=0.75']
    """
    first, second = _check_secrets(first, "first"), _check_secrets(second, "second")
    if not first or not second:
        raise fail("first and second", "non-empty collections of secrets", (len(first), len(second)))
    return tuple(SecretPair(a, b) for a, b in itertools.product(first, second))


def all_pairs(secrets: Iterable[Secret]) -> tuple[SecretPair, ...]:
    """Every unordered pair of distinct secrets (needs at least two).

    Examples
    --------
    >>> import bayespriv as bp
    >>> [str(pair) for pair in bp.all_pairs(bp.DistributionSecret("p", v) for v in (0.3, 0.5, 0.7))]
    ['p=0.3 vs p=0.5', 'p=0.3 vs p=0.7', 'p=0.5 vs p=0.7']
    """
    secrets = list(dict.fromkeys(_check_secrets(secrets, "secrets")))
    if len(secrets) < 2:
        raise fail("secrets", "at least two distinct secrets", secrets)
    return tuple(SecretPair(a, b) for a, b in itertools.combinations(secrets, 2))


def as_pairs(pairs: SecretPair | Iterable[SecretPair]) -> tuple[SecretPair, ...]:
    """Normalise one pair or an iterable of pairs to a non-empty tuple."""
    if isinstance(pairs, SecretPair):
        return (pairs,)
    try:
        out = tuple(pairs)
    except TypeError:
        raise ParameterTypeError(f"pairs must be a SecretPair or an iterable of them; got {type(pairs).__name__}") from None
    if not out:
        raise fail("pairs", "a non-empty collection of SecretPair", out)
    for p in out:
        if not isinstance(p, SecretPair):
            raise ParameterTypeError(f"pairs must contain only SecretPair objects; got {type(p).__name__}")
    return tuple(dict.fromkeys(out))
