"""calibrate() on a dask Client, default chunk sizing, BLAS threads in process workers.

Everything here is exact (seed-determined numbers compared bit for bit, chunk sizes,
thread counts): no statistical tolerance, so no false-failure probability to state.
"""

from __future__ import annotations

import contextlib
import time
from concurrent.futures import Executor, Future, ProcessPoolExecutor

import multiprocessing
import numpy as np
import pytest

import bayespriv as bp
from bayespriv.calibration import ExecutionOptions, engine
from bayespriv.calibration.engine import CHUNK_BYTES, CHUNK_ELEMENTS, default_chunk_size, draw_query_samples

V = np.array([[1.0, 0.5], [0.5, 2.0]])


def _gauss():
    model = bp.GaussianDataModel([0.0, 1.0], V, ["s", "y"], 20)
    pairs = bp.pairs_between([bp.DatasetSecret.mean("s", -1.0)],
                             [bp.DatasetSecret.mean("s", 0.0), bp.DatasetSecret.mean("s", 1.0)])
    return model, pairs, bp.stack(bp.mean("y"), bp.mean("s"))


def _lambdas():
    model = bp.FunctionDataModel(lambda s, n, rng: {"x": rng.normal(s.value, 1.0, (n, 8))}, columns=["x"], n_records=8)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    return model, pair, bp.Query(lambda b: np.stack([b["x"].mean(1), b["x"].max(1)], axis=1), ["x"], "x-stats")


@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def _scheduler_tasks(client) -> int:
    return client.run_on_scheduler(lambda dask_scheduler: len(dask_scheduler.tasks))


def _settles_to(client, n: int, timeout: float = 10.0) -> int:
    """The scheduler's task count once it reaches ``n`` (releases are asynchronous), or the last seen."""
    end = time.monotonic() + timeout
    while (seen := _scheduler_tasks(client)) != n and time.monotonic() < end:
        time.sleep(0.05)
    return seen


@pytest.mark.subprocess
def test_ten_consecutive_calibrations_on_one_client_give_the_seed_determined_numbers(client):
    """A content-hash scatter key would be shared by consecutive calls, and one call releasing it
    makes the next fail with ``FutureCancelledError: lost dependencies``; the same model and query are reused on purpose, alternating
    with a lambda model and query, every call compared with the serial run bit for bit."""
    cases = [(*_gauss(), 300, 50), (*_lambdas(), 200, 40)]
    serial = [bp.calibrate(m, p, q, n_draws=n, rng=3, execution=ExecutionOptions(chunk_size=c)).sample_array
              for m, p, q, n, c in cases]
    for i in range(10):
        m, p, q, n, c = cases[i % 2]
        cal = bp.calibrate(m, p, q, n_draws=n, rng=3, execution=ExecutionOptions(chunk_size=c, executor=client))
        np.testing.assert_array_equal(cal.sample_array, serial[i % 2], err_msg=f"call {i + 1} of 10")
    assert _settles_to(client, 0) == 0  # nothing of the ten calls is left on the cluster


@pytest.mark.subprocess
def test_scatter_keys_are_fresh_per_call_twin_content_hash_keys_collide(client):
    model, _, _ = _gauss()
    first, second = engine._dask_scatter(client, [model, model]), engine._dask_scatter(client, [model])
    assert len(first) == 1 and first[id(model)].key != second[id(model)].key
    # twin: a content-hash scatter gives both calls the same key, the root of lost dependencies
    assert client.scatter(model, broadcast=True).key == client.scatter(model, broadcast=True).key
    del first, second


@pytest.mark.subprocess
def test_a_failing_task_cancels_the_rest_and_leaves_the_client_usable(client):
    def draw(secret, n, rng):
        if secret.value == 1.0:
            raise RuntimeError("boom in a worker")
        return {"x": rng.normal(secret.value, 1.0, (n, 4))}

    bad = bp.FunctionDataModel(draw, columns=["x"], n_records=4)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    with pytest.raises(RuntimeError, match="boom in a worker"):
        bp.calibrate(bad, pair, bp.mean("x"), n_draws=400, rng=0,
                     execution=ExecutionOptions(chunk_size=20, executor=client))
    assert _settles_to(client, 0) == 0
    model, pairs, q = _gauss()
    ok = bp.calibrate(model, pairs, q, n_draws=100, rng=1, execution=ExecutionOptions(chunk_size=30, executor=client))
    np.testing.assert_array_equal(ok.sample_array, bp.calibrate(model, pairs, q, n_draws=100, rng=1,
                                                                execution=ExecutionOptions(chunk_size=30)).sample_array)


# -- chunk sizing counts the model's columns ---------------------------------------------------------


def _three_columns(n_records: int, seen: list[int]):
    def draw(secret, n, rng):  # draws every column, whatever the query reads
        seen.append(n)
        return {c: np.zeros((n, n_records)) + secret.value for c in ("x", "y", "z")}

    return bp.FunctionDataModel(draw, columns=["x", "y", "z"], n_records=n_records)


def test_default_chunk_counts_every_column_the_model_draws_twin_query_columns_do_not():
    n_records, seen = 50_000, []
    model = _three_columns(n_records, seen)
    pair = bp.SecretPair(bp.DistributionSecret("mu", 0.0), bp.DistributionSecret("mu", 1.0))
    assert model.bytes_per_record() == model.bytes_per_record(["x"]) == 24
    expected = CHUNK_BYTES // (n_records * 24)  # 53 draws per task
    assert default_chunk_size(model, bp.mean("x"), 1000) == expected == 53
    bp.calibrate(model, pair, bp.mean("x"), n_draws=200, rng=0, confidence=None)
    assert max(seen) == expected and max(seen) * n_records * 3 * 8 <= CHUNK_BYTES
    # twin: a rule counting only the query's one column would take three times the bytes the budget allows
    old = CHUNK_ELEMENTS // (n_records * len(bp.mean("x").columns))
    assert old * n_records * 3 * 8 > 2.9 * CHUNK_BYTES
    assert default_chunk_size(model, bp.mean("x"), 10) == 10  # never more than n_draws


def test_a_model_can_declare_its_bytes_per_record_and_a_bad_declaration_is_refused():
    class Lean(bp.FunctionDataModel):
        def bytes_per_record(self, columns=None):
            return 8 * len(columns)  # draws only what is asked

    class Bad(bp.FunctionDataModel):
        def bytes_per_record(self, columns=None):
            return 0

    draw = lambda s, n, rng: {"x": np.zeros((n, 10)), "y": np.zeros((n, 10))}  # noqa: E731
    lean = Lean(draw, columns=["x", "y"], n_records=10**6)
    assert default_chunk_size(lean, bp.mean("x"), 1000) == CHUNK_BYTES // (10**6 * 8) == 8
    with pytest.raises(bp.ValidationError, match=r"Bad.bytes_per_record\(\) must be a positive int; got 0"):
        default_chunk_size(Bad(draw, columns=["x", "y"], n_records=10), bp.mean("x"), 100)


# -- BLAS threads in process-pool workers -------------------------------------------------------------


def _blas_threads() -> int:
    from threadpoolctl import threadpool_info

    return max((i["num_threads"] for i in threadpool_info() if i["user_api"] == "blas"), default=0)


def _thread_model():
    """A model whose every value is the number of BLAS threads in the process that drew it."""
    return bp.FunctionDataModel(lambda s, n, rng: {"x": np.full((n, 2), float(_blas_threads()))},
                                columns=["x"], n_records=2)


def _threads_seen(executor) -> set[float]:
    secrets = [bp.DistributionSecret("mu", 0.0)]
    return set(np.unique(draw_query_samples(_thread_model(), secrets, bp.mean("x"), n_draws=40, rng=0,
                                            execution=ExecutionOptions(chunk_size=10, executor=executor))))


@pytest.mark.subprocess
def test_process_workers_run_blas_on_one_thread_twin_without_the_limit_they_do_not(monkeypatch):
    pytest.importorskip("threadpoolctl")
    before = _blas_threads()
    if before == 0:
        pytest.skip("no BLAS library visible to threadpoolctl")
    fork = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(2, mp_context=fork) as pool:
        assert _threads_seen(pool) == {1.0}
    assert _blas_threads() == before  # the caller's pools are untouched
    if before == 1:
        pytest.skip("BLAS already runs one thread here: the twin cannot differ")
    monkeypatch.setattr(engine, "_one_blas_thread", contextlib.nullcontext)  # before the pool forks
    with ProcessPoolExecutor(2, mp_context=fork) as pool:
        assert _threads_seen(pool) == {float(before)}


class _Inline(Executor):
    """An executor that runs every task in the caller's process (the engine treats it as a process pool)."""

    def submit(self, fn, /, *args, **kwargs):
        future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


def test_an_inline_executor_limits_blas_for_the_task_only():
    pytest.importorskip("threadpoolctl")
    before = _blas_threads()
    if before == 0:
        pytest.skip("no BLAS library visible to threadpoolctl")
    assert _threads_seen(_Inline()) == {1.0}
    assert _blas_threads() == before  # scoped: the caller's pools are restored
