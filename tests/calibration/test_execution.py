"""How a calibration's draws run (``calibration/execution.py``): the :class:`ExecutionOptions` table, and
``calibrate`` / ``draw_query_samples`` taking it as ``execution=`` (their keywords of their own deprecated for one
release)."""

from __future__ import annotations

import dataclasses
import pickle
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions, draw_query_samples
from bayespriv.errors import BayesPrivDeprecationWarning, ParameterTypeError, ValidationError

PAIR = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
QUERY = bp.mean("x")


def _model():
    return bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, 1.0, (n, 4))}, columns=["x"], n_records=4)


# -- the option table ---------------------------------------------------------------------------------------------


def test_execution_options_defaults_draw_serially():
    options = ExecutionOptions()
    assert (options.executor, options.chunk_size, options.progress, options.reuse) == (None, None, None, None)
    assert options == ExecutionOptions() and hash(options) == hash(ExecutionOptions())
    checked = ExecutionOptions(chunk_size=np.int64(50), progress=np.bool_(False))
    assert type(checked.chunk_size) is int and checked.chunk_size == 50 and not checked.progress
    with ThreadPoolExecutor(1) as pool:
        assert ExecutionOptions(executor=pool).executor is pool
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.chunk_size = 10
    with pytest.raises(TypeError):
        ExecutionOptions(None)


@pytest.mark.parametrize("field, value, error, rule, shown", [
    ("executor", object(), ParameterTypeError, "None, a concurrent.futures.Executor or a dask.distributed Client",
     "got object"),
    ("chunk_size", 0, ValidationError, "an integer >= 1", "got 0"),
    ("chunk_size", 2.5, ParameterTypeError, "an integer >= 1", "got 2.5"),
    ("chunk_size", True, ParameterTypeError, "an integer >= 1", "got True"),
    ("progress", "yes", ParameterTypeError, "None, True or False", "got 'yes'"),
    ("reuse", "cal.nc", ParameterTypeError, "None or a bayespriv Calibration", "got str"),
])
def test_execution_options_refuse_an_invalid_value_naming_the_field(field, value, error, rule, shown):
    with pytest.raises(error) as info:
        ExecutionOptions(**{field: value})
    message = str(info.value)
    assert message.startswith(f"{field} must be") and rule in message and shown in message


# -- calibrate(..., execution=...) and its deprecated keywords ----------------------------------------------------


def test_old_calibrate_keywords_warn_and_give_the_same_calibration():
    """``executor=, chunk_size=, progress=, reuse=`` (deprecated) warn and give the calibration of
    ``execution=ExecutionOptions(...)``, which is the serial one with the same chunks."""
    earlier = bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=1)
    serial = bp.calibrate(_model(), PAIR, QUERY, n_draws=300, rng=3, execution=ExecutionOptions(chunk_size=70))
    with ThreadPoolExecutor(2) as pool:
        fields = dict(executor=pool, chunk_size=70, progress=False, reuse=earlier)
        new = bp.calibrate(_model(), PAIR, QUERY, n_draws=300, rng=3, execution=ExecutionOptions(**fields))
        with pytest.warns(BayesPrivDeprecationWarning,
                          match=r"calibrate\(executor=\.\.\., chunk_size=\.\.\., progress=\.\.\., reuse=\.\.\.\) is "
                                r"deprecated .*use calibrate\(execution=ExecutionOptions\(executor=\.\.\."):
            old = bp.calibrate(_model(), PAIR, QUERY, n_draws=300, rng=3, **fields)
    for other in (old, serial):
        np.testing.assert_array_equal(other.sample_array, new.sample_array)
        np.testing.assert_array_equal(other.cov_array, new.cov_array)
        assert other.assumptions == new.assumptions


def test_execution_and_its_old_keywords_together_are_refused():
    with pytest.raises(ValidationError, match=r"calibrate: pass execution= only \(chunk_size=\.\.\. is its deprecated "
                                              r"spelling\); got both"):
        bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0, execution=ExecutionOptions(), chunk_size=10)


def test_an_unknown_keyword_is_still_a_type_error():
    """The broken twin: only the four execution keywords are folded into ``execution=``; a misspelt one is Python's
    TypeError, without a deprecation warning (the suite turns one into an error), and ``execution=`` takes an
    ExecutionOptions only."""
    with pytest.raises(TypeError, match=r"^calibrate\(\) got an unexpected keyword argument 'chunksize'$"):
        bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0, chunksize=10)
    with pytest.raises(ParameterTypeError, match=r"execution must be None or a bayespriv ExecutionOptions; got "
                                                 r"\{'chunk_size': 10\}"):
        bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0, execution={"chunk_size": 10})


def test_reuse_refuses_an_unverified_calibration(tmp_path):
    """A calibration loaded unverified is refused as ``execution.reuse`` when the call starts (its MCMC posteriors
    are not vouched for); the same file loaded verified is taken."""
    path = bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0).to_netcdf(tmp_path / "cal.nc",
                                                                           key=b"another owner's key, 32 bytes.." * 2)
    foreign = bp.load_calibration(path, query=QUERY, trust="unverified")
    with pytest.raises(bp.errors.UnverifiedCalibrationError, match="reuse must be a calibration .* verified file"):
        bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0, execution=ExecutionOptions(reuse=foreign))
    trusted = bp.load_calibration(path, query=QUERY, key=b"another owner's key, 32 bytes.." * 2)
    taken = bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0, execution=ExecutionOptions(reuse=trusted))
    assert taken.n_draws == 100


# -- draw_query_samples(..., execution=...) -------------------------------------------------------------------------


def test_old_draw_query_samples_keywords_warn_and_give_the_same_draws():
    new = draw_query_samples(_model(), PAIR.secrets, QUERY, n_draws=50, rng=2,
                             execution=ExecutionOptions(chunk_size=20, progress=False))
    with pytest.warns(BayesPrivDeprecationWarning, match=r"draw_query_samples\(chunk_size=\.\.\., progress=\.\.\.\) "
                                                         r"is deprecated"):
        old = draw_query_samples(_model(), PAIR.secrets, QUERY, n_draws=50, rng=2, chunk_size=20, progress=False)
    np.testing.assert_array_equal(old, new)
    assert new.shape == (2, 50, 1)


def test_draw_query_samples_takes_no_reuse():
    """The model is already prepared: ``reuse`` has nothing to offer there (refused both ways, never ignored)."""
    cal = bp.calibrate(_model(), PAIR, QUERY, n_draws=100, rng=0)
    with pytest.raises(ValidationError, match=r"execution\.reuse must be None for draw_query_samples"):
        draw_query_samples(_model(), PAIR.secrets, QUERY, n_draws=10, rng=0, execution=ExecutionOptions(reuse=cal))
    with pytest.raises(TypeError, match=r"draw_query_samples\(\) got an unexpected keyword argument 'reuse'"):
        draw_query_samples(_model(), PAIR.secrets, QUERY, n_draws=10, rng=0, reuse=cal)
    with pytest.raises(ValidationError, match=r"draw_query_samples: pass execution= only"):
        draw_query_samples(_model(), PAIR.secrets, QUERY, n_draws=10, rng=0, execution=ExecutionOptions(),
                           progress=False)


def test_execution_options_pickle_without_an_executor():
    options = ExecutionOptions(chunk_size=30, progress=True)
    assert pickle.loads(pickle.dumps(options)) == options
