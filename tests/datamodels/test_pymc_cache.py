"""PyMCDataModel speed paths: the posterior cache (memory and disk) and the NumPy forward draws.

The cache must be invisible in the numbers: a hit gives the same calibration bit for bit as
the miss before it, and anything that changes the posterior (prior, data, seed, settings)
misses. ``pm.sample`` calls are counted by wrapping it.
"""

from __future__ import annotations

import functools
import weakref

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
from scipy import stats

import bayespriv as bp
import bayespriv.datamodels.pymc as pymc_module
from bayespriv.calibration import ExecutionOptions
from bayespriv.datamodels import posterior_cache
from bayespriv.datamodels._fast_rv import FastBernoulliRV, FastNormalRV
from bayespriv.datamodels._model_fingerprint import model_fingerprint
from bayespriv.datamodels.compat import random_draws_call_rng_fn
from bayespriv.datamodels.pymc import PyMCDataModel

N = 12
SECRETS = (bp.DatasetSecret.proportion("gender", 1, 0.25), bp.DatasetSecret.proportion("gender", 1, 0.75))
PAIR = bp.SecretPair(*SECRETS)


def build_logit(n, sd=1.5):
    """z ~ N(0, sd); p = sigmoid(z); gender ~ Bernoulli(p); score ~ N(10 p, 1)."""
    with pm.Model() as m:
        z = pm.Normal("z", 0.0, sd)
        p = pm.Deterministic("p", pm.math.sigmoid(z))
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", 10.0 * p, 1.0, shape=n)
    return m


def logit_model(builder=build_logit, conjugate=False, **kw):
    """MCMC forced (conjugate=False), short chains: the cache, not the posterior, is under test."""
    mcmc = bp.McmcSettings(**{"draws": 300, "tune": 300, "min_ess_bulk": 100.0, **kw})
    return PyMCDataModel(builder, n_records=N, columns=["gender", "score"], parameters=["z"], mcmc=mcmc,
                         conjugate=conjugate)


@pytest.fixture
def sample_calls(monkeypatch):
    """Count pm.sample calls; start from an empty cache."""
    calls = []
    real = pm.sample

    def counting(*args, **kwargs):
        calls.append(kwargs.get("random_seed"))
        return real(*args, **kwargs)

    monkeypatch.setattr(pm, "sample", counting)
    bp.clear_posterior_cache()
    yield calls
    bp.clear_posterior_cache()


def _calibrate(model, rng=5):
    return bp.calibrate(model, PAIR, bp.mean("score"), n_draws=200, rng=rng)


@pytest.mark.slow
def test_second_calibration_reuses_the_posteriors_bit_identically(sample_calls):
    first = _calibrate(logit_model())
    assert len(sample_calls) == 2  # one run per secret
    second = _calibrate(logit_model())  # a new instance of the same model: same key
    assert len(sample_calls) == 2
    np.testing.assert_array_equal(first.samples.values, second.samples.values)
    assert first.diagnostics == second.diagnostics
    for label, idata in first.posteriors.items():
        np.testing.assert_array_equal(second.posteriors[label].posterior["z"].values, idata.posterior["z"].values)
    assert posterior_cache.stats()["hits"] == 2


@pytest.mark.slow
def test_anything_that_changes_the_posterior_misses(sample_calls):
    """Twin of the test above: a changed prior, seed or MCMC setting runs MCMC again."""
    _calibrate(logit_model())
    assert len(sample_calls) == 2
    _calibrate(logit_model(functools.partial(build_logit, sd=1.4)))  # another prior
    assert len(sample_calls) == 4
    _calibrate(logit_model(), rng=6)  # another seed
    assert len(sample_calls) == 6
    _calibrate(logit_model(draws=320))  # another setting
    assert len(sample_calls) == 8
    _calibrate(logit_model())  # the first again: still cached
    assert len(sample_calls) == 8


def _forget_runtimes(monkeypatch) -> None:
    """Forget every model this process built (as a new process would)."""
    bp.clear_posterior_cache()
    monkeypatch.setattr(pymc_module, "_live_runtimes", weakref.WeakValueDictionary())
    monkeypatch.setattr(pymc_module, "_recent_runtimes", type(pymc_module._recent_runtimes)())


@pytest.mark.slow
def test_loading_a_file_puts_nothing_in_the_cache(sample_calls, tmp_path, monkeypatch):
    """Save, forget everything, load: the cache stays empty and a later calibration runs its own MCMC,
    with the same numbers."""
    first = _calibrate(logit_model())
    path = first.to_netcdf(tmp_path / "cal.nc")
    _forget_runtimes(monkeypatch)
    bp.load_calibration(path, query=bp.mean("score"))
    assert posterior_cache.stats()["entries"] == 0
    again = _calibrate(logit_model())
    assert len(sample_calls) == 4
    np.testing.assert_array_equal(first.samples.values, again.samples.values)


@pytest.mark.slow
def test_reuse_of_a_loaded_calibration_skips_mcmc_bit_identically(sample_calls, tmp_path, monkeypatch):
    """calibrate(..., execution=ExecutionOptions(reuse=loaded)): no pm.sample call, the same numbers, nothing left in
    the cache; another seed or setting is not served by the loaded runs."""
    first = _calibrate(logit_model())
    path = first.to_netcdf(tmp_path / "cal.nc")
    _forget_runtimes(monkeypatch)
    loaded = bp.load_calibration(path, query=bp.mean("score"))
    reuse = ExecutionOptions(reuse=loaded)
    again = bp.calibrate(logit_model(), PAIR, bp.mean("score"), n_draws=200, rng=5, execution=reuse)
    assert len(sample_calls) == 2
    np.testing.assert_array_equal(first.samples.values, again.samples.values)
    assert posterior_cache.stats()["entries"] == 0  # offered to that call only
    bp.calibrate(logit_model(), PAIR, bp.mean("score"), n_draws=200, rng=6, execution=reuse)  # another seed
    assert len(sample_calls) == 4
    bp.calibrate(logit_model(draws=320), PAIR, bp.mean("score"), n_draws=200, rng=5, execution=reuse)  # another setting
    assert len(sample_calls) == 6


@pytest.mark.slow
def test_reuse_refuses_an_unverified_file(sample_calls, tmp_path):
    from bayespriv.errors import UnverifiedCalibrationError

    path = _calibrate(logit_model()).to_netcdf(tmp_path / "cal.nc", key=b"another owner's key, 32 bytes.." * 2)
    foreign = bp.load_calibration(path, query=bp.mean("score"), trust="unverified")
    with pytest.raises(UnverifiedCalibrationError, match="reuse must be a calibration .* verified file"):
        bp.calibrate(logit_model(), PAIR, bp.mean("score"), n_draws=200, rng=5,
                     execution=ExecutionOptions(reuse=foreign))
    with pytest.raises(bp.ParameterTypeError, match="reuse must be None or a bayespriv Calibration"):
        bp.calibrate(logit_model(), PAIR, bp.mean("score"), n_draws=200, rng=5,
                     execution=ExecutionOptions(reuse=str(path)))


@pytest.mark.slow
def test_a_cache_entry_of_the_wrong_type_is_a_miss_not_a_crash(sample_calls):
    """Whatever sits under a key, a lookup hands out only what the caller can use: an MCMC run under a
    quadrature key, or a table under an MCMC key, is a miss."""
    from bayespriv.datamodels.compat import inference_data_types

    from bayespriv.datamodels._quadrature import QuadratureTable

    model = logit_model(conjugate=True)
    secret = SECRETS[0]
    plan = model._plans.plan(secret)
    run = _calibrate(logit_model()).posteriors[secret.label]
    seed = model._runs.secret_seed(np.random.SeedSequence(5), secret)
    quad_key = model._runs.key(secret, plan, seed, route="quadrature")
    posterior_cache.put(quad_key, run)  # an InferenceData where a table is expected
    assert posterior_cache.get(quad_key, (QuadratureTable, str)) is None
    assert model.route(secret) == "quadrature"
    assert posterior_cache.get(quad_key, inference_data_types()) is run
    mcmc_key = logit_model()._runs.key(secret, plan, seed)
    posterior_cache.put(mcmc_key, "not a run", 10)
    assert posterior_cache.get(mcmc_key, inference_data_types()) is None


def test_keys_differ_by_route_and_seed():
    model = logit_model(conjugate=True)
    plan = model._plans.plan(SECRETS[0])
    keys = {model._runs.key(SECRETS[0], plan, seed, route=route)
            for route in ("mcmc", "quadrature") for seed in (None, 1, 2)}
    assert len(keys) == 6


@pytest.mark.slow
def test_clear_posterior_cache_forces_new_runs(sample_calls):
    _calibrate(logit_model())
    assert bp.clear_posterior_cache() == 2
    _calibrate(logit_model())
    assert len(sample_calls) == 4


# -- the model fingerprint ----------------------------------------------------------------------------
def build_data(data, n=3):
    with pm.Model() as m:
        mu = pm.Normal("mu", 0.0, 1.0)
        d = pm.Data("d", np.asarray(data, dtype=float))
        pm.Normal("x", mu * d.sum(), 1.0, shape=n)
        pm.Normal("obs", mu, 1.0, observed=np.arange(50.0))
    return m


def test_fingerprint_is_stable_and_sees_every_value():
    base = np.arange(2000.0)
    first, complete = model_fingerprint(build_data(base))
    assert complete and model_fingerprint(build_data(base))[0] == first  # a rebuild: same graph
    changed = base.copy()
    changed[1000] += 1e-9  # a value in the middle of a large array (printing would elide it)
    assert model_fingerprint(build_data(changed))[0] != first
    assert model_fingerprint(build_data(base, n=4))[0] != first


# -- forward draws without SciPy ------------------------------------------------------------------------
def build_hier(n):
    with pm.Model() as m:
        p = pm.Beta("p", 2.0, 2.0)
        g = pm.Bernoulli("gender", p, shape=n)
        pm.Normal("height", pt.switch(pt.eq(g, 1), 70.0, 64.0), 3.0, shape=n)
    return m


def _forward_failures(batch, p):
    """The draws given p: gender ~ Bernoulli(p), height | gender ~ N(64 or 70, 3). Share of ones
    within z·sqrt(pq/N), standardised heights with mean within z/sqrt(N) and variance within the
    chi-square interval; α = 1e-3 per check, 3 checks."""
    z = stats.norm.isf(0.5e-3)
    g, h = batch["gender"], batch["height"]
    total = g.size
    failures = []
    if abs(g.mean() - p) > z * np.sqrt(p * (1 - p) / total):
        failures.append("share")
    r = (h - np.where(g == 1, 70.0, 64.0)) / 3.0
    if abs(r.mean()) > z / np.sqrt(total):
        failures.append("mean")
    lo, hi = stats.chi2.ppf([0.5e-3, 1 - 0.5e-3], total - 1) / (total - 1)
    if not lo <= r.var(ddof=1) <= hi:
        failures.append("variance")
    return failures


def test_fast_forward_draws_have_the_model_laws():
    model = PyMCDataModel(build_hier, n_records=50, columns=["gender", "height"], parameters=["p"])
    batch = model.sample(bp.DistributionSecret("p", 0.3), 4000, rng=3)
    assert batch["gender"].dtype == np.int64 and set(np.unique(batch["gender"])) == {0, 1}
    assert _forward_failures(batch, 0.3) == []


@pytest.mark.skipif(not random_draws_call_rng_fn(), reason="PyTensor's default linker (Numba) draws random variables in "
                    "compiled code: the NumPy samplers are not swapped in, so there is no rng_fn to break")
def test_twin_a_wrong_normal_scale_is_caught(monkeypatch):
    """Twin: heights drawn with 1.1 times the scale fail the variance check."""
    real = FastNormalRV.rng_fn

    def wide(self, rng, loc, scale, size):
        return real(self, rng, loc, 1.1 * np.asarray(scale), size)

    monkeypatch.setattr(FastNormalRV, "rng_fn", wide)
    model = PyMCDataModel(build_hier, n_records=50, columns=["gender", "height"], parameters=["p"])
    batch = model.sample(bp.DistributionSecret("p", 0.3), 4000, rng=3)
    assert "variance" in _forward_failures(batch, 0.3)


def test_fast_draws_refuse_invalid_parameters():
    rng = np.random.default_rng(0)
    bern = FastBernoulliRV(**pt.random.basic.bernoulli._props_dict())
    norm = FastNormalRV(**pt.random.basic.normal._props_dict())
    with pytest.raises(ValueError, match=r"p must lie in \[0, 1\]"):
        bern.rng_fn(rng, np.array([0.5, 1.5]), None)
    with pytest.raises(ValueError, match="scale must be >= 0"):
        norm.rng_fn(rng, 0.0, np.array([1.0, -1.0]), None)
    assert bern.rng_fn(rng, np.array([0.0, 1.0]), (1000, 2)).mean(axis=0).tolist() == [0.0, 1.0]


# -- a file cannot poison a later calibration in another process -----------------------------------------------------
_SCRIPT = '''
import json, sys
import numpy as np, pymc as pm
import bayespriv as bp
from bayespriv.datamodels.pymc import PyMCDataModel

def build(n):
    with pm.Model() as m:
        z = pm.Normal("z", 0.0, 1.5)
        p = pm.Deterministic("p", pm.math.sigmoid(z))
        pm.Bernoulli("gender", p, shape=n)
        pm.Normal("score", 10.0 * p, 1.0, shape=n)
    return m

SECRETS = (bp.DatasetSecret.proportion("gender", 1, 0.25), bp.DatasetSecret.proportion("gender", 1, 0.75))
PAIR = bp.SecretPair(*SECRETS)

def model(conjugate):
    return PyMCDataModel(build, n_records=12, columns=["gender", "score"], parameters=["z"],
                         mcmc=bp.McmcSettings(draws=300, tune=300, min_ess_bulk=100.0), conjugate=conjugate)

def bound(conjugate):
    cal = bp.calibrate(model(conjugate), PAIR, bp.mean("score"), n_draws=200, rng=5)
    return cal, cal.sensitivity(2, bound=True)

out = {}
if sys.argv[1] == "save":
    cal, out["mcmc"] = bound(False)
    cal.to_netcdf(sys.argv[2])
    out["quadrature"] = bound(True)[1]
    m = model(True)
    seed = m._runs.secret_seed(np.random.SeedSequence(5), SECRETS[1])
    out["quadrature_key"] = m._runs.key(SECRETS[1], m._plans.plan(SECRETS[1]), seed, route="quadrature")
else:
    from bayespriv.errors import UnverifiedCalibrationError
    edited, resigned, stamped = sys.argv[2:5]
    try:
        bp.load_calibration(edited, query=bp.mean("score"))
    except UnverifiedCalibrationError as exc:
        out["refused"] = str(exc)
    bp.load_calibration(edited, query=bp.mean("score"), trust="unverified")
    bp.load_calibration(resigned, query=bp.mean("score"))
    bp.load_calibration(stamped, query=bp.mean("score"))
    out["mcmc"] = bound(False)[1]
    out["quadrature"] = bound(True)[1]
print(json.dumps(out))
'''


@pytest.mark.subprocess
def test_a_loaded_file_cannot_poison_a_later_calibration_in_a_fresh_process(tmp_path):
    """Process 1 calibrates (rng=5) and saves; the test copies secret A's chains over secret B's with h5py
    (unsigned; re-signed with the owner's key; and re-signed with a quadrature key stamped on B's run);
    process 2 loads all three, then calibrates the same model with rng=5 (MCMC and quadrature): the same
    sensitivity bounds as the clean runs, bit for bit, and no crash (a cache fed from the edited file would
    drop the bound from 4.42 to 0.176, and a stamped key would break every later quadrature calibration)."""
    import json
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import h5py

    from tests._signing import resign

    root = Path(__file__).resolve().parents[2]
    script = tmp_path / "script.py"
    script.write_text(_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(root)}

    def run(*argv):
        done = subprocess.run([sys.executable, str(script), *map(str, argv)], capture_output=True, text=True,
                              env=env, cwd=tmp_path, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        return json.loads(done.stdout.strip().splitlines()[-1])

    saved = tmp_path / "cal.nc"
    clean = run("save", saved)
    edited, resigned, stamped = (tmp_path / f"{name}.nc" for name in ("edited", "resigned", "stamped"))
    shutil.copy(saved, edited)
    with h5py.File(edited, "r+") as f:
        groups = {f[g].attrs["bayespriv_secret_label"]: g for g in f if g.startswith("posterior_")}
        a, b = groups[SECRETS[0].label], groups[SECRETS[1].label]
        f[f"{b}/posterior/z"][...] = f[f"{a}/posterior/z"][()]
        f[f"{b}/posterior/p"][...] = f[f"{a}/posterior/p"][()]
    shutil.copy(edited, resigned)
    resign(resigned)
    shutil.copy(resigned, stamped)
    with h5py.File(stamped, "r+") as f:
        f[f"{b}/posterior"].attrs[posterior_cache.KEY_ATTR] = clean["quadrature_key"]
    resign(stamped)
    after = run("load", edited, resigned, stamped)
    assert "contents changed" in after["refused"]
    assert after["mcmc"] == clean["mcmc"] and after["quadrature"] == clean["quadrature"]
    assert clean["mcmc"] > 1.0  # the honest bound (the poisoned one was 0.176)
