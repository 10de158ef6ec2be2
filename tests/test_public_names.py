"""Every public name of the package before its stages were redrawn still resolves, and says when it moved.

``data/public_names.json`` lists, per module, the ``__all__`` of the layout before the privacy curves,
the exact noise, the files, the parameter networks and the ledger got stages of their own. Each name
must still be readable from where it was; a name that moved warns with
:class:`~bayespriv.errors.BayesPrivDeprecationWarning` (and only such a name warns); the object read
is the one at its new home.
"""

from __future__ import annotations

import importlib
import json
import warnings
from pathlib import Path

import pytest

import bayespriv as bp
from bayespriv.errors import BayesPrivDeprecationWarning

NAMES = json.loads((Path(__file__).parent / "data" / "public_names.json").read_text())
CASES = [(module, name) for module, names in NAMES.items() for name in names]


@pytest.mark.parametrize("module, name", CASES, ids=[f"{m}.{n}" for m, n in CASES])
def test_every_public_name_of_the_old_layout_still_resolves(module, name):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        value = getattr(importlib.import_module(module), name)
    assert value is not None or name in {"__version__"}
    kinds = {w.category for w in caught}
    assert kinds <= {BayesPrivDeprecationWarning}, [str(w.message) for w in caught]


def test_a_moved_name_warns_and_is_the_object_at_its_new_home():
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.privacy\.gaussian_sigma"):
        old = bp.mechanisms.gaussian_sigma
    assert old is bp.privacy.gaussian_sigma
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.ledger\.Ledger"):
        assert bp.accounting.Ledger is bp.ledger.Ledger
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.files\.load_calibration"):
        assert bp.calibration.load_calibration is bp.files.load_calibration
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.networks\.calibrate_quilts"):
        assert bp.calibration.calibrate_quilts is bp.networks.calibrate_quilts


def test_an_old_module_path_imports_as_its_new_module():
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.noise\.plan_gaussian"):
        from bayespriv.mechanisms.exact_noise import plan_gaussian
    assert plan_gaussian is bp.noise.plan_gaussian
    with pytest.warns(BayesPrivDeprecationWarning, match=r"bayespriv\.networks\.quilts\.Quilt"):
        from bayespriv.calibration.quilts import Quilt
    assert Quilt is bp.Quilt


def test_a_name_that_never_existed_is_still_an_attribute_error():
    """The broken twin: the aliases forward only the names they list."""
    with pytest.raises(AttributeError, match="no_such_name"):
        bp.mechanisms.no_such_name  # noqa: B018
    with pytest.raises(AttributeError, match="no_such_name"):
        bp.accounting.no_such_name  # noqa: B018


def test_names_still_at_home_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert bp.mechanisms.APGM is not None and bp.ledger.Ledger is bp.Ledger
        assert len(bp.mechanisms.__all__) <= 20
