"""Old spellings kept for one release: a name or a module path that moved still resolves, and says so.

Five forms, each warning with :class:`~bayespriv.errors.BayesPrivDeprecationWarning` at the moment the
old spelling is used (never at import):

* :func:`moved_names` — a module ``__getattr__`` for names that left its namespace
  (``bp.mechanisms.gaussian_sigma`` → ``bp.privacy.gaussian_sigma``);
* :func:`alias_module` — an old module path (``bayespriv.mechanisms.exact_noise``) that imports as the
  module now holding it, forwarding every attribute;
* :func:`renamed_keyword` — a keyword argument spelled the old way (``dataset=`` → ``dataset_name=``);
* :func:`keywords_into_option` — keywords of their own that became the fields of one option object
  (``clip=True`` → ``options=ReleaseOptions(clip=True)``), and :func:`option_value`, which also checks the
  option object given;
* :func:`positional_arguments` — arguments that became keyword-only, passed by position.

Each table is installed next to real imports of the new homes — in the package that kept the old spelling,
or, for ``bayespriv.calibration``'s names, by ``bayespriv.files`` (the first stage importing both of their
homes) — so the import graph (and the house check reading it) sees every dependency an alias creates.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .errors import BayesPrivDeprecationWarning, warn

__all__ = ["moved_names", "alias_module", "renamed_keyword", "keywords_into_option", "positional_arguments"]


def _warn(old: str, new: str) -> None:
    warn(f"{old} is deprecated and will be removed in the next release: use {new}", BayesPrivDeprecationWarning)


def moved_names(module: types.ModuleType, table: Mapping[str, tuple[Any, str]]) -> None:
    """Let ``module`` resolve each old name of ``table`` to ``(object, new spelling)``, warning on use.

    Installs (or extends) the module's ``__getattr__``, so a name that left its namespace keeps working
    for one release. A later stage may extend an earlier stage's table (``bayespriv.files`` adds the
    file functions ``bayespriv.calibration`` used to export) because it imports that stage anyway.
    """
    existing = module.__dict__.get("__getattr__")
    names: dict[str, tuple[Any, str]] = getattr(existing, "moved", {})
    names.update(table)
    if existing is not None and getattr(existing, "moved", None) is names:
        return
    package = module.__name__

    def __getattr__(name: str) -> Any:
        try:
            value, new = names[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        _warn(f"{package}.{name}", new)
        return value

    __getattr__.moved = names  # type: ignore[attr-defined]
    module.__getattr__ = __getattr__  # type: ignore[method-assign]


class _AliasModule(types.ModuleType):
    """A module object standing for ``target`` under its old path; every attribute read warns."""

    def __init__(self, old: str, target: types.ModuleType) -> None:
        super().__init__(old, f"Deprecated alias of {target.__name__}.")
        object.__setattr__(self, "_target", target)

    def __getattr__(self, name: str) -> Any:
        target = object.__getattribute__(self, "_target")
        if name.startswith("__") and name.endswith("__"):
            return getattr(target, name)
        _warn(f"{self.__name__}.{name}", f"{target.__name__}.{name}")
        return getattr(target, name)

    def __dir__(self) -> list[str]:
        return dir(object.__getattribute__(self, "_target"))


def alias_module(old: str, target: types.ModuleType) -> types.ModuleType:
    """Register ``old`` in ``sys.modules`` as a forwarding alias of ``target`` and return the alias."""
    alias = sys.modules.get(old)
    if not isinstance(alias, _AliasModule):
        alias = _AliasModule(old, target)
        sys.modules[old] = alias
    return alias


def renamed_keyword(owner: str, old: str, new: str, old_value: Any, new_value: Any, missing: Any = None) -> Any:
    """The value of keyword ``new`` when the caller spelled it ``old`` (warns); both given is an error."""
    if old_value is missing:
        return new_value
    if new_value is not missing:
        from .errors import ValidationError

        raise ValidationError(f"{owner}: pass {new}= only ({old}= is its deprecated spelling); got both")
    _warn(f"{owner}({old}=...)", f"{owner}({new}=...)")
    return old_value


def keywords_into_option(owner: str, option: str, build: Callable[..., Any], old: Mapping[str, Any], value: Any,
                         missing: Any = None) -> Any:
    """The value of keyword ``option`` when the caller spelled its fields as keywords of their own, ``old``
    (warns): ``build(**old)``. Without ``old``, ``value``; both given (``value`` is not ``missing``) is an error."""
    if not old:
        return value
    fields = ", ".join(f"{name}=..." for name in old)
    if value is not missing:
        from .errors import ValidationError

        raise ValidationError(f"{owner}: pass {option}= only ({fields} {'is its' if len(old) == 1 else 'are its'} "
                              f"deprecated spelling); got both")
    _warn(f"{owner}({fields})", f"{owner}({option}={getattr(build, '__name__', option)}({fields}))")
    return build(**old)


def option_value(owner: str, option: str, cls: type, value: Any, old: Mapping[str, Any],
                 default: Any = None) -> Any:
    """The value of the option keyword ``option`` of a call of ``owner``, checked: ``value``, an instance of the
    frozen, self-checking ``cls``; None gives ``default`` (None: ``cls()``). The deprecated keywords ``old`` (the
    fields of ``cls``, once keywords of their own) give ``cls(**old)``, warning (:func:`keywords_into_option`).
    A keyword of ``old`` that is not a field of ``cls`` is a ``TypeError`` worded as Python's; an old keyword
    given with ``value`` a :class:`~bayespriv.errors.ValidationError`; a ``value`` of another type a
    :class:`~bayespriv.errors.ParameterTypeError`."""
    import dataclasses

    fields = {f.name for f in dataclasses.fields(cls)}
    unknown = [name for name in old if name not in fields]
    if unknown:
        raise TypeError(f"{owner}() got an unexpected keyword argument {unknown[0]!r}")
    value = keywords_into_option(owner, option, cls, old, value)
    if value is None:
        return cls() if default is None else default
    if not isinstance(value, cls):
        from .errors import ParameterTypeError

        raise ParameterTypeError(f"{option} must be None or a bayespriv {cls.__name__}; got {value!r:.80} of type "
                                 f"{type(value).__name__}")
    return value


def positional_arguments(owner: str, names: Sequence[str], args: tuple[Any, ...], given: Mapping[str, Any],
                         missing: Any = None) -> dict[str, Any]:
    """``given`` (keyword values, ``missing`` where not passed) with ``args`` passed by position filling
    ``names`` in order (warns: they are keyword-only now). A name given both ways is an error; more
    arguments than ``names`` a TypeError, as Python's own."""
    out = dict(given)
    if not args:
        return out
    if len(args) > len(names):
        raise TypeError(f"{owner}() takes at most {len(names)} arguments by position (a deprecated form: pass them "
                        f"by keyword); got {len(args)}")
    spelled = names[:len(args)]
    both = [name for name in spelled if given.get(name, missing) is not missing]
    if both:
        from .errors import ValidationError

        raise ValidationError(f"{owner}: pass {both[0]}= only (by keyword); got it both by position and by keyword")
    _warn(f"{owner}({', '.join(spelled)}) by position", f"{owner}({', '.join(f'{n}=...' for n in spelled)})")
    out.update(zip(spelled, args))
    return out
