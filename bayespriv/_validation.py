"""Argument checks used at public entry points.

Messages follow one style: ``"<parameter> must be <rule>; got <value>"`` so that
the user sees which argument, which rule and which value in one line.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import os
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import numpy as np

from .errors import ImmutableError, ParameterTypeError, ValidationError


class described(str):
    """Text that describes a value (``"shape (3,)"``), shown without quotes in errors."""

    def __repr__(self) -> str:
        return str(self)


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def fail(name: str, rule: str, value: Any) -> ValidationError:
    """Build the uniform error for parameter ``name`` breaking ``rule``."""
    return ValidationError(f"{name} must be {rule}; got {_show(value)}")


def check_real(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(f"{name} must be a real number; got {_show(value)} of type {type(value).__name__}")
    return float(value)


def check_epsilon(value: Any, name: str = "epsilon") -> float:
    """epsilon: a finite real number > 0."""
    eps = check_real(name, value)
    if not (math.isfinite(eps) and eps > 0):
        raise fail(name, "a finite number > 0", value)
    return eps


def check_delta(value: Any, name: str = "delta", *, allow_zero: bool = False) -> float:
    """delta: in the open interval (0, 1), or [0, 1) when ``allow_zero``."""
    d = check_real(name, value)
    ok = (0.0 <= d < 1.0) if allow_zero else (0.0 < d < 1.0)
    if not ok or not math.isfinite(d):
        raise fail(name, "in [0, 1)" if allow_zero else "in the open interval (0, 1)", value)
    return d


def check_confidence(value: Any, name: str = "confidence") -> float | None:
    """confidence: None (plug-in estimates) or a probability in (0, 1)."""
    if value is None:
        return None
    c = check_real(name, value)
    if not (0.0 < c < 1.0):
        raise fail(name, "None or in the open interval (0, 1)", value)
    return c


def check_positive_int(value: Any, name: str, *, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(f"{name} must be an integer >= {minimum}; got {_show(value)} of type {type(value).__name__}")
    if int(value) < minimum:
        raise fail(name, f"an integer >= {minimum}", value)
    return int(value)


def check_finite_array(value: Any, name: str, *, ndim: int | None = None) -> np.ndarray:
    """A finite float array; booleans and text are refused, not converted
    (``np.asarray("1.5", dtype=float)`` would parse text, ``True`` become 1)."""
    try:
        kind = np.asarray(value).dtype.kind
    except (TypeError, ValueError):  # ragged nesting: reported below
        kind = "O"
    if kind in "bUS":
        raise ParameterTypeError(f"{name} must be numeric (not booleans or text); got {_show(value)}")
    try:
        arr = np.asarray(value, dtype=float)
    except (TypeError, ValueError) as exc:
        raise ParameterTypeError(f"{name} must be numeric; got {_show(value)}") from exc
    if ndim is not None and arr.ndim != ndim:
        raise fail(name, f"a {ndim}-dimensional array", described(f"shape {arr.shape}"))
    if not np.all(np.isfinite(arr)):
        raise fail(name, "finite (no NaN or infinity)", value)
    return arr


def check_covariance(value: Any, name: str, k: int | None = None, *, strict: bool = False) -> np.ndarray:
    """A symmetric positive semi-definite (or definite, when ``strict``) k x k matrix."""
    cov = check_finite_array(value, name)
    if cov.ndim == 0:
        cov = cov.reshape(1, 1)
    if cov.ndim != 2 or cov.shape[0] != cov.shape[1]:
        raise fail(name, "a square matrix", described(f"shape {cov.shape}"))
    if k is not None and cov.shape != (k, k):
        raise fail(name, f"of shape ({k}, {k})", described(f"shape {cov.shape}"))
    if not np.allclose(cov, cov.T, rtol=1e-10, atol=1e-12 * max(1.0, float(np.abs(cov).max(initial=0)))):
        raise fail(name, "symmetric", cov)
    eig_min = float(np.linalg.eigvalsh(cov).min()) if cov.size else 0.0
    scale = max(1.0, float(np.abs(cov).max(initial=0)))
    if strict and eig_min <= 1e-12 * scale:
        raise fail(name, "positive definite", described(f"smallest eigenvalue {eig_min:.3g}"))
    if eig_min < -1e-9 * scale:
        raise fail(name, "positive semi-definite", described(f"smallest eigenvalue {eig_min:.3g}"))
    return 0.5 * (cov + cov.T)


def check_columns_present(required: Iterable[str], available: Iterable[str], name: str) -> None:
    available = list(available)
    missing = [c for c in required if c not in available]
    if missing:
        raise ValidationError(
            f"{name} must name columns of the data; got {missing!r}, which are not among {available!r}"
        )


def check_mapping(value: Any, name: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise ParameterTypeError(f"{name} must be a mapping; got {type(value).__name__}")
    return value


def check_choice(value: Any, name: str, choices: Iterable[str]) -> str:
    choices = tuple(choices)
    if value not in choices:
        raise fail(name, f"one of {choices!r}", value)
    return value


def check_optional_positive_int(value: Any, name: str, *, minimum: int = 1) -> int | None:
    """None, or an integer >= ``minimum`` (bools refused)."""
    return None if value is None else check_positive_int(value, name, minimum=minimum)


def check_name_or_none(value: Any, name: str) -> str | None:
    """None or a non-empty string (labels such as a query's ``name``)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ParameterTypeError(f"{name} must be None or a non-empty string; got {_show(value)} of type {type(value).__name__}")
    return value


def check_column_names(value: Any, name: str = "columns", *, allow_str: bool = True) -> tuple[str, ...]:
    """Column names: a non-empty sequence of distinct non-empty strings.

    A single string is read as *one* column name when ``allow_str`` (so
    ``"height"`` means ``("height",)``, never ``("h", "e", ...)``); otherwise it is
    refused, pointing to ``[name]``. Duplicates are refused rather than merged.
    """
    if isinstance(value, str):
        if not allow_str:
            raise ParameterTypeError(
                f"{name} must be a sequence of column names, not a single string; got {value!r} "
                f"(write [{value!r}] for one column)"
            )
        value = (value,)
    if value is None or isinstance(value, (bytes, Mapping)) or not isinstance(value, Iterable) or isinstance(value, np.ndarray) and value.ndim != 1:
        raise ParameterTypeError(f"{name} must be a non-empty sequence of column names; got {_show(value)} of type {type(value).__name__}")
    cols = tuple(value)
    if not cols:
        raise fail(name, "a non-empty sequence of column names", value)
    bad = [c for c in cols if not isinstance(c, str) or not c]
    if bad:
        raise ParameterTypeError(f"{name} must contain only non-empty strings; got {_show(bad)}")
    dup = sorted({c for c in cols if cols.count(c) > 1})
    if dup:
        raise fail(name, "distinct column names", described(f"{list(cols)!r}, which repeats {dup!r}"))
    return cols


def check_frame(value: Any, name: str) -> Any:
    """A pandas DataFrame whose column labels are unique (a repeated label makes
    ``frame[label]`` a DataFrame, so a column would be read ambiguously)."""
    import pandas as pd

    if not isinstance(value, pd.DataFrame):
        raise ParameterTypeError(f"{name} must be a pandas DataFrame; got {type(value).__name__}")
    if not value.columns.is_unique:
        dup = sorted({str(c) for c in value.columns[value.columns.duplicated()]})
        raise fail(name, "a DataFrame with unique column names", described(f"columns {dup!r} repeated"))
    return value


def check_sequence(value: Any, name: str, *, what: str = "values") -> tuple:
    """A finite collection (list, tuple, set, ...), not a string, mapping or scalar."""
    if value is None or isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise ParameterTypeError(f"{name} must be a sequence of {what}; got {_show(value)} of type {type(value).__name__}")
    if isinstance(value, np.ndarray) and value.ndim != 1:
        raise fail(name, f"a one-dimensional sequence of {what}", described(f"array of shape {value.shape}"))
    return tuple(value)


def available_memory() -> int:
    """Physical memory of this machine in bytes (a generous cap for one array)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):  # pragma: no cover - non-POSIX
        return 2**34


def format_bytes(n: float) -> str:
    for unit in ("B", "KB", "MB", "GB", "TB", "PB"):
        if n < 1024 or unit == "PB":
            return f"{n:.3g} {unit}"
        n /= 1024
    return f"{n:.3g} PB"  # pragma: no cover


def check_memory(n_bytes: float, name: str, value: Any, what: str) -> None:
    """Refuse up front (instead of a MemoryError later) when an array of
    ``n_bytes`` cannot fit in this machine's physical memory."""
    cap = available_memory()
    if n_bytes > cap:
        raise fail(name, f"small enough for memory: {what} would need {format_bytes(n_bytes)}, "
                         f"more than this machine's {format_bytes(cap)}", value)


#: Up to this many values, :func:`all_finite` tests them as Python floats (faster than a NumPy reduction).
_SMALL = 32


def all_finite(values: np.ndarray) -> bool:
    """Whether every value of a float array is finite (no NaN, no infinity); fast for short vectors."""
    if values.size <= _SMALL:
        return all(map(math.isfinite, values.ravel().tolist()))
    return bool(np.isfinite(values).all())


def sealed(value: Any, dtype: Any = None) -> np.ndarray:
    """A copy of ``value`` whose memory cannot be written: an array over an immutable ``bytes``.

    ``arr.setflags(write=False)`` alone does not protect an array that owns its memory: NumPy
    lets anyone call ``arr.setflags(write=True)`` on it again — and on every view of it, even
    when the view's base is read-only (measured with NumPy 2.4). An array whose memory belongs
    to a ``bytes`` object cannot be made writable: ``setflags(write=True)`` raises
    ``ValueError`` on it, on its ``.base`` and on every view of it. Object arrays (no buffer)
    become read-only copies, the best NumPy offers for them.

    Parameters
    ----------
    value : array-like
    dtype : NumPy dtype, optional
        Default: the dtype ``np.asarray`` gives ``value``.
    """
    arr = np.asarray(value, dtype=dtype)
    if arr.dtype.hasobject:
        out = np.array(arr)
        out.setflags(write=False)
        return out
    arr = np.ascontiguousarray(arr)
    return np.frombuffer(arr.tobytes(), dtype=arr.dtype).reshape(arr.shape)


#: Key present in an instance's ``__dict__`` only while :func:`seal_fields`'s ``__init__`` runs.
BUILDING = "_building_fields"


class _SealedField:
    """A dataclass field that only the instance's own ``__init__`` may set (:func:`seal_fields`).

    A data descriptor: ``object.__setattr__`` goes through it too. The value lives in the
    instance's ``__dict__`` under the field's own name.
    """

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __get__(self, obj: Any, owner: type | None = None) -> Any:
        if obj is None:
            return self
        try:
            return obj.__dict__[self.name]
        except KeyError:
            raise AttributeError(f"{type(obj).__name__!r} object has no attribute {self.name!r}") from None

    def __set__(self, obj: Any, value: Any) -> None:
        if BUILDING not in obj.__dict__:
            raise ImmutableError(f"{type(obj).__name__} is immutable: got an assignment to {self.name!r} (through "
                                 "object.__setattr__). Build a new one instead (dataclasses.replace).")
        obj.__dict__[self.name] = value

    def __delete__(self, obj: Any) -> None:
        raise ImmutableError(f"{type(obj).__name__} is immutable: got a deletion of {self.name!r}")


def seal_fields(cls: type) -> type:
    """Class decorator, below ``@dataclass(frozen=True)``: the fields refuse even ``object.__setattr__``
    once the instance is built.

    A frozen dataclass only refuses ``obj.field = ...``; anyone can still write a field with
    ``object.__setattr__``. Here each field becomes a data descriptor that allows writes while the
    instance is being built — from ``__new__`` to the end of ``__post_init__`` (or of ``__init__``
    for the decorated class) — and raises :class:`~bayespriv.errors.ImmutableError` afterwards.
    Dataclass subclasses inherit this (their generated ``__init__`` ends with the inherited
    ``__post_init__``). Copies (``dataclasses.replace``, pickling, :mod:`copy`) are new instances,
    built or restored the same way; after construction the instance's ``__dict__`` holds exactly
    its fields (and whatever the class itself stores there).
    """
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"seal_fields needs a dataclass; got {cls.__name__}")
    init, post, setstate = cls.__init__, cls.__dict__.get("__post_init__"), cls.__dict__.get("__setstate__")

    def __new__(klass: type, *args: Any, **kwargs: Any) -> Any:
        obj = object.__new__(klass)
        obj.__dict__[BUILDING] = True
        return obj

    @functools.wraps(init)
    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        try:
            init(self, *args, **kwargs)
        finally:
            self.__dict__.pop(BUILDING, None)

    def __post_init__(self: Any, *args: Any) -> None:
        try:
            if post is not None:
                post(self, *args)
        finally:
            self.__dict__.pop(BUILDING, None)

    def __setstate__(self: Any, state: Any) -> None:  # unpickling and copy: restored, not built
        if setstate is not None:
            setstate(self, state)
        else:
            self.__dict__.update(state)
        self.__dict__.pop(BUILDING, None)

    for f in dataclasses.fields(cls):
        setattr(cls, f.name, _SealedField(f.name))
    if post is not None:
        functools.update_wrapper(__post_init__, post)
    cls.__new__ = __new__  # type: ignore[method-assign]
    cls.__init__ = __init__  # type: ignore[misc]
    cls.__post_init__ = __post_init__  # type: ignore[attr-defined]
    cls.__setstate__ = __setstate__  # type: ignore[attr-defined]
    return cls


def freeze(value: Any) -> Any:
    """A deep read-only copy: mappings become :class:`types.MappingProxyType`
    over a fresh dict (nested mappings too), lists become tuples, NumPy arrays
    :func:`sealed` copies. Other values are returned as they are."""
    if isinstance(value, Mapping):
        return MappingProxyType({k: freeze(v) for k, v in value.items()})
    if isinstance(value, (list, tuple)) and not hasattr(value, "_fields"):
        return tuple(freeze(v) for v in value)
    if isinstance(value, np.ndarray):
        return sealed(value)
    return value


def thaw(value: Any) -> Any:
    """Plain picklable containers from :func:`freeze`'s output (mapping proxies
    become dicts); used by ``__getstate__`` since mapping proxies do not pickle."""
    if isinstance(value, Mapping):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, tuple) and not hasattr(value, "_fields"):
        return tuple(thaw(v) for v in value)
    return value
