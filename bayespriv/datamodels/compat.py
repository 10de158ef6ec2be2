"""The two generations of the PyMC stack, behind one narrow interface.

``bayespriv`` supports both (``pyproject.toml`` declares the tested ranges):

* **PyMC 5 / ArviZ 0.x** (what pip installs on Python 3.11): a sampler run is an
  :class:`arviz.InferenceData`, whose groups are listed by the *method* ``groups()``;
  ``pymc.model.fgraph`` names a model variable's dimensions through ``extract_dims`` and
  ``model_deterministic(expr, *dims)`` takes the name from ``expr``.
* **PyMC 6 / ArviZ 1.x** (what pip installs on Python 3.12 and later): a run is an
  :class:`xarray.DataTree` whose groups are its children (``arviz.InferenceData`` is gone);
  ``model_deterministic(expr, name, *dims)`` takes the name and the dimensions as arguments and a
  model variable's node carries its dimensions on ``node.op.dims``. PyTensor 3 compiles with Numba by
  default, which draws random variables in compiled code instead of calling their ``rng_fn``.

Every other module reads runs and rewrites graphs through the functions below, never through a
version check of its own. The generation is recognised by what the installed packages offer
(``xarray.DataTree``, ``arviz.convert_to_datatree``; ``extract_dims``), not by version numbers.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

__all__ = [
    "arviz_generation",
    "deterministic_like",
    "group",
    "group_names",
    "inference_data_types",
    "is_inference_data",
    "make_inference_data",
    "random_draws_call_rng_fn",
]


@functools.lru_cache(maxsize=1)
def arviz_generation() -> int:
    """1 when the installed ArviZ stores runs as :class:`xarray.DataTree` (ArviZ ≥ 1), else 0."""
    import arviz as az

    return 1 if hasattr(az, "convert_to_datatree") else 0


def inference_data_types() -> tuple[type, ...]:
    """The types a sampler run may have with the installed packages (for ``isinstance``).

    On ArviZ 0.x an :class:`arviz.InferenceData`; on ArviZ 1.x an :class:`xarray.DataTree`.
    """
    if arviz_generation() == 0:
        import arviz as az

        return (az.InferenceData,)
    import xarray as xr

    return (xr.DataTree,)


def is_inference_data(obj: Any) -> bool:
    """Whether ``obj`` is a sampler run of the installed ArviZ generation."""
    return isinstance(obj, inference_data_types())


def group_names(idata: Any) -> tuple[str, ...]:
    """The group names of a run (``"posterior"``, ``"sample_stats"``, …), in the run's order."""
    if arviz_generation() == 0:
        return tuple(idata.groups())
    return tuple(str(name) for name in idata.children)


def group(idata: Any, name: str) -> Any:
    """The group ``name`` of a run as an :class:`xarray.Dataset` (KeyError when absent).

    On ArviZ 1.x the Dataset is a view of the tree node's variables: reading it copies nothing.
    """
    if arviz_generation() == 0:
        if name not in idata.groups():
            raise KeyError(name)
        return idata[name]
    return idata[name].to_dataset()


def group_attrs(idata: Any, name: str) -> dict:
    """The attribute dictionary of group ``name`` itself (writes to it stay with the run)."""
    return idata[name].attrs


def make_inference_data(groups: Mapping[str, Any]) -> Any:
    """A run of the installed generation from ``{group name: xarray.Dataset}``.

    An :class:`arviz.InferenceData` on ArviZ 0.x, an :class:`xarray.DataTree` with one child per
    group on ArviZ 1.x: what ``az.summary``, ``az.plot_trace`` and ``az.ess`` of that ArviZ read.
    """
    if arviz_generation() == 0:
        import arviz as az

        return az.InferenceData(**dict(groups))
    import xarray as xr

    return xr.DataTree.from_dict({str(name): ds for name, ds in groups.items()})


def deterministic_like(target: Any, expr: Any, name: str) -> Any:
    """``expr`` as a model Deterministic named ``name`` with the dimensions of the model variable ``target``.

    ``target`` is a variable of a :func:`pymc.model.fgraph.fgraph_from_model` graph (its owner is a
    ``ModelVar`` node). PyMC 5 reads the dimensions as the node's extra inputs and the name from
    ``expr``; PyMC 6 keeps both on the node's op.
    """
    from pymc.model import fgraph

    if hasattr(fgraph, "extract_dims"):  # PyMC 5
        return fgraph.model_deterministic(expr.copy(name=name), *fgraph.extract_dims(target))
    dims = tuple(getattr(target.owner.op, "dims", ()) or ()) if target.owner is not None else ()
    return fgraph.model_deterministic(expr.copy(), name, *dims)


def random_draws_call_rng_fn() -> bool:
    """Whether functions compiled in PyTensor's default mode draw random variables through ``RandomVariable.rng_fn``.

    True for the C and Python linkers (PyTensor 2, PyMC 5); False for the Numba linker (PyTensor 3's
    default), whose compiled random variables never call Python.
    """
    from pytensor.compile.mode import get_default_mode

    return "numba" not in type(get_default_mode().linker).__name__.lower()
