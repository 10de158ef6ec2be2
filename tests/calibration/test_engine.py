"""calibrate(): reproducibility, executors, chunking, samples layout, from_moments."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import mpmath as mp
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions
from bayespriv.calibration.engine import minimum_draws

V = np.array([[1.0, 0.5], [0.5, 2.0]])


def _setup(n_records=20):
    model = bp.GaussianDataModel([0.0, 1.0], V, ["s", "y"], n_records)
    pairs = bp.pairs_between([bp.DatasetSecret.mean("s", -1.0)], [bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)])
    return model, pairs, bp.stack(bp.mean("y"), bp.mean("s"))


def test_same_seed_same_calibration_and_different_seed_differs():
    model, pairs, q = _setup()
    a = bp.calibrate(model, pairs, q, n_draws=500, rng=7)
    b = bp.calibrate(model, pairs, q, n_draws=500, rng=7)
    c = bp.calibrate(model, pairs, q, n_draws=500, rng=8)
    np.testing.assert_array_equal(a.samples.values, b.samples.values)
    assert not np.array_equal(a.samples.values, c.samples.values)


def test_executor_gives_identical_numbers():
    model, pairs, q = _setup()
    serial = bp.calibrate(model, pairs, q, n_draws=900, rng=3, execution=ExecutionOptions(chunk_size=100))
    with ThreadPoolExecutor(2) as pool:
        threaded = bp.calibrate(model, pairs, q, n_draws=900, rng=3,
                                execution=ExecutionOptions(chunk_size=100, executor=pool))
    np.testing.assert_array_equal(serial.samples.values, threaded.samples.values)
    np.testing.assert_array_equal(serial.mean_array, threaded.mean_array)


def test_samples_layout_and_summaries():
    model, pairs, q = _setup()
    cal = bp.calibrate(model, pairs, q, n_draws=250, execution=ExecutionOptions(chunk_size=60), rng=1)
    assert cal.samples.dims == ("secret", "draw", "component")
    assert cal.samples.shape == (3, 250, 2)
    assert list(cal.samples.component.values) == ["mean(y)", "mean(s)"]
    assert set(cal.means) == set(cal.secrets) and len(cal.secrets) == 3
    # the secret column's mean is fixed exactly by the conditioning
    assert cal.means[bp.DatasetSecret.mean("s", 1.0)][1] == pytest.approx(1.0)
    assert cal.worst_pair == bp.SecretPair(bp.DatasetSecret.mean("s", -1.0), bp.DatasetSecret.mean("s", 1.0))
    assert cal.sensitivity(2, bound=True) >= cal.sensitivity(2)
    assert np.all(cal.variance(bound=True) <= cal.variance())
    assert cal.summary().shape == (2, 6)
    assert "<table" in cal._repr_html_()
    assert cal.assumptions == ("monte_carlo_clt",)


def test_plug_in_calibration_bounds_equal_estimates():
    model, pairs, q = _setup()
    cal = bp.calibrate(model, pairs, q, n_draws=300, rng=1, confidence=None)
    assert cal.z == 0 and cal.plug_in
    assert cal.sensitivity(2, bound=True) == pytest.approx(cal.sensitivity(2))
    assert cal.assumptions == ("estimated_moments",)


def test_from_moments_is_exact():
    a, b = bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)
    cal = bp.Calibration.from_moments({a: [1.0, 2.0], b: [4.0, 6.0]}, {a: np.eye(2), b: np.eye(2)}, bp.SecretPair(a, b))
    assert cal.exact and cal.confidence == 1.0 and cal.assumptions == ()
    assert cal.sensitivity(1) == 7.0 and cal.sensitivity(2) == 5.0 and cal.sensitivity("inf") == 4.0
    assert cal.sensitivity(2, bound=True) == 5.0
    with pytest.raises(bp.ValidationError, match="ord"):
        cal.sensitivity(3)
    with pytest.raises(bp.ValidationError, match="every secret"):
        bp.Calibration.from_moments({a: [1.0]}, {a: 1.0}, bp.SecretPair(a, b))
    scalar = bp.Calibration.from_moments({a: 1.0, b: 2.0}, {a: 0.5, b: 0.5}, bp.SecretPair(a, b))
    assert scalar.k == 1 and scalar.covs[a].shape == (1, 1)


def test_calibrate_argument_checks():
    model, pairs, q = _setup()
    with pytest.raises(bp.ValidationError, match="n_draws"):
        bp.calibrate(model, pairs, q, n_draws=1)
    with pytest.raises(bp.ValidationError, match="confidence"):
        bp.calibrate(model, pairs, q, n_draws=10, confidence=1.5)
    with pytest.raises(bp.ValidationError, match="query columns"):
        bp.calibrate(model, pairs, bp.mean("nope"), n_draws=10)
    with pytest.raises(bp.ParameterTypeError, match="model"):
        bp.calibrate(object(), pairs, q, n_draws=10)
    with pytest.raises(bp.ParameterTypeError, match="rng"):
        bp.calibrate(model, pairs, q, n_draws=10, rng="seed")


def test_chunking_bounds_the_batch_size():
    seen = []

    def draw(secret, n, rng):
        seen.append(n)
        return {"x": rng.normal(secret.value, 1.0, (n, 5))}

    model = bp.FunctionDataModel(draw, columns=["x"], n_records=5)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    cal = bp.calibrate(model, pair, bp.mean("x"), n_draws=1000, execution=ExecutionOptions(chunk_size=300), rng=0)
    assert max(seen) == 300 and sum(seen) == 2000
    assert cal.n_draws == 1000


def test_function_model_shape_errors_are_clear():
    model = bp.FunctionDataModel(lambda s, n, rng: {"x": np.zeros((n, 4))}, columns=["x"], n_records=5)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    with pytest.raises(bp.ValidationError, match=r"shape \(n_draws, n_records\)"):
        bp.calibrate(model, pair, bp.mean("x"), n_draws=10, rng=0)


@pytest.mark.subprocess
def test_process_pool_gives_identical_numbers():
    from concurrent.futures import ProcessPoolExecutor

    model, pairs, q = _setup()
    serial = bp.calibrate(model, pairs, q, n_draws=600, rng=11, execution=ExecutionOptions(chunk_size=150))
    with ProcessPoolExecutor(2) as pool:
        parallel = bp.calibrate(model, pairs, q, n_draws=600, rng=11,
                                execution=ExecutionOptions(chunk_size=150, executor=pool))
    np.testing.assert_array_equal(serial.samples.values, parallel.samples.values)


def _lambda_setup():
    """A model and a query written with lambdas (the README's idiom), which the standard pickle refuses."""
    model = bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, 1.0, (n, 8))}, columns=["x"], n_records=8)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    query = bp.Query(lambda b: np.stack([b["x"].mean(1), b["x"].max(1)], axis=1), ["x"], "x-stats")
    return model, pair, query


@pytest.mark.subprocess
def test_lambda_query_and_model_through_a_process_pool_save_and_load(tmp_path):
    import pickle
    from concurrent.futures import ProcessPoolExecutor

    model, pair, query = _lambda_setup()
    with pytest.raises((pickle.PicklingError, AttributeError, TypeError)):
        pickle.dumps(query)  # twin: what the executor got before cloudpickle
    serial = bp.calibrate(model, pair, query, n_draws=400, rng=5, execution=ExecutionOptions(chunk_size=100))
    with ProcessPoolExecutor(2) as pool:
        parallel = bp.calibrate(model, pair, query, n_draws=400, rng=5,
                                execution=ExecutionOptions(chunk_size=100, executor=pool))
    np.testing.assert_array_equal(serial.samples.values, parallel.samples.values)
    np.testing.assert_array_equal(serial.cov_array, parallel.cov_array)
    path = parallel.to_netcdf(tmp_path / "lambda.nc", seed=5)
    loaded = bp.load_calibration(path, query=query)  # the query is code: given again at load
    assert loaded.query is query and loaded.query_fingerprint == parallel.query_fingerprint
    np.testing.assert_array_equal(loaded.sample_array, parallel.sample_array)
    other = bp.Query(lambda b: np.stack([b["x"].mean(1), b["x"].min(1)], axis=1), ["x"], "x-stats")
    with pytest.raises(bp.errors.ReleaseMismatchError, match="fingerprint"):
        bp.load_calibration(path, query=other)


@pytest.mark.subprocess
def test_unpicklable_model_on_a_process_pool_names_the_model():
    import threading
    from concurrent.futures import ProcessPoolExecutor

    lock = threading.Lock()
    model = bp.FunctionDataModel(lambda s, n, rng, _lock=lock: {"x": rng.normal(s.value, 1.0, (n, 4))},
                                 columns=["x"], n_records=4)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    with ProcessPoolExecutor(1) as pool:
        with pytest.raises(bp.ParameterTypeError, match="model must be picklable"):
            bp.calibrate(model, pair, bp.mean("x"), n_draws=100, rng=0, execution=ExecutionOptions(executor=pool))


def test_classic_warning_points_at_the_callers_line():
    import warnings

    a, b = bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)
    cal = bp.Calibration.from_moments({a: [0.0], b: [1.0]}, {a: 1.0, b: 1.0}, bp.SecretPair(a, b))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        bp.mechanisms.APGM(cal, epsilon=2.0, delta=1e-3, gaussian_calibration="classic")
    assert caught and caught[0].filename == __file__


# -- the fewest draws the bounds need ---------------------------------------------------------------


def _gauss_pair_k1(n_records=20):
    model = bp.GaussianDataModel([0.0, 1.0], V, ["s", "y"], n_records)
    return model, bp.SecretPair(bp.DatasetSecret.mean("s", -1.0), bp.DatasetSecret.mean("s", 1.0)), bp.mean("y")


def test_too_few_draws_for_the_bounds_are_refused_with_the_minimum_and_why():
    model, pairs, q = _setup()  # 3 secrets, k = 2: the 30-draw floor of the mean boxes binds
    with pytest.raises(bp.ValidationError, match=r"n_draws must be at least 30 draws per secret .*normal approximation"
                                                 r".*confidence=None.*; got 29"):
        bp.calibrate(model, pairs, q, n_draws=29, rng=0)
    assert bp.calibrate(model, pairs, q, n_draws=30, rng=0).n_draws == 30
    model, pair, q1 = _gauss_pair_k1()  # one pair, k = 1: the variance bound binds
    with pytest.raises(bp.ValidationError, match=r"n_draws must be at least 63 draws per secret .*Loewner covariance "
                                                 r"bound at z=2.5 .*4 intervals.*; got 62"):
        bp.calibrate(model, pair, q1, n_draws=62, rng=0)
    assert bp.calibrate(model, pair, q1, n_draws=63, rng=0).n_draws == 63
    # plug-in: sample variances need 2 draws, no more
    assert bp.calibrate(model, pair, q1, n_draws=2, rng=0, confidence=None).n_draws == 2
    with pytest.raises(bp.ValidationError, match="n_draws"):
        bp.calibrate(model, pair, q1, n_draws=1, rng=0, confidence=None)
    # stricter confidence, more intervals: more draws
    assert minimum_draws(0.99, 1, 4)[0] == 241
    assert minimum_draws(0.95, 1, 12)[0] > minimum_draws(0.95, 1, 4)[0]
    assert minimum_draws(0.95, 40, 2 * (40 + 820)) == (41, "a full-rank covariance of the k=40 components needs k + 1 = 41")


def test_variance_bound_minimum_against_mpmath():
    """The documented rule, recomputed with mpmath: the first n from which
    P(χ²_{n−1} > (n − 1)(1 + z(√2 + k − 1)/√n)) ≤ 2Φ(−z), checked for every n up to 400."""
    for confidence, n_events, k in [(0.95, 4, 1), (0.8, 4, 1), (0.95, 10, 2)]:
        z = mp.sqrt(2) * mp.erfinv(1 - (1 - mp.mpf(confidence)) / n_events)
        share = mp.erfc(z / mp.sqrt(2))  # 2Φ(−z)

        def ok(n):
            x = (n - 1) * (1 + z * (mp.sqrt(2) + k - 1) / mp.sqrt(n))
            return mp.gammainc(mp.mpf(n - 1) / 2, x / 2, mp.inf, regularized=True) <= share

        with mp.workdps(30):
            flags = [ok(n) for n in range(3, 401)]
        first = 3 + max((i + 1 for i, f in enumerate(flags) if not f), default=0)
        expected = max(30, k + 1, first)
        assert minimum_draws(confidence, k, n_events)[0] == expected
    assert minimum_draws(0.95, 1, 4)[0] == 63 and minimum_draws(0.8, 1, 4)[0] == 30  # 11 < 30: the floor binds
