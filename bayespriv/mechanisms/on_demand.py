"""Draws on demand: calibrate with as many draws as the guarantee needs, and no more than a ceiling.

A guarantee resting on draws needs enough of them: below about ln(1/α)/δ per secret no bound can
certify δ (:func:`~bayespriv.privacy.accountant.check_draws`), and the mechanism refuses with a
:class:`~bayespriv.errors.DrawsNeededError` naming how many would do. :func:`build_on_demand`
starts from that number, and while a refusal asks for more it calibrates again with more (at
least twice as many), up to a ceiling; :class:`DrawSchedule` sets the first round, the ceiling and the
procedure's confidence.

Why the confidence still holds. Each round is a fresh calibration with independent draws, at
confidence ``1 − (1 − confidence)/2^k`` for round k = 1, 2, …; the probability that *some* round
builds a mechanism whose true δ exceeds the request is at most the sum of the rounds' error
probabilities, ``(1 − confidence)·Σ 2^{−k} ≤ 1 − confidence`` (a union bound over any number of
rounds). So the mechanism returned — whichever round it comes from, stopping as soon as one is
established — meets (ε, δ) with probability at least ``confidence`` over the whole procedure.
Its own guarantee states its round's (higher) level, which holds for that calibration taken
alone; :class:`OnDemand` records the rounds and the procedure's level, the one to quote.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .._deprecation import option_value
from .._validation import check_confidence, check_positive_int, fail
from ..errors import DrawsNeededError, ParameterTypeError
from .draw_schedule import DrawSchedule

if TYPE_CHECKING:
    from collections.abc import Sequence
    from bayespriv.datamodels import DataModel, DataModelFamily
    from bayespriv.queries import Query
    from bayespriv.random import RNGLike
    from bayespriv.secrets import SecretPair
    from .mechanism import Mechanism

__all__ = ["build_on_demand", "DrawSchedule", "round_confidence", "OnDemand", "draws_for_delta"]


@dataclass(frozen=True)
class OnDemand:
    """What :func:`build_on_demand` returns.

    Attributes
    ----------
    mechanism : Mechanism
        The first established mechanism.
    rounds : tuple of int
        Draws per secret of each round, the last the mechanism's.
    confidence : float
        The level at which the procedure's guarantee holds (module docstring): quote this one.
    """

    mechanism: Any
    rounds: tuple[int, ...]
    confidence: float


def round_confidence(confidence: float, round_index: int) -> float:
    """The calibration confidence of round ``round_index`` (1, 2, …): ``1 − (1 − confidence)/2^k``."""
    return 1.0 - (1.0 - confidence) / 2.0 ** int(round_index)


#: The keywords of their own that :class:`DrawSchedule`'s fields were (deprecated spellings, kept for one release);
#: :func:`build_on_demand` picks them out of the mechanism's options by name.
_SCHEDULE_FIELDS = ("start", "max_draws", "confidence", "progress")


def _schedule(schedule: Any, options: Mapping[str, Any]) -> tuple[DrawSchedule, dict[str, Any]]:
    """``(schedule, the mechanism's options)``: the deprecated schedule keywords picked out of ``options`` and
    folded into ``schedule``, warning (both spellings given: a ValidationError); None gives the defaults."""
    old = {name: value for name, value in options.items() if name in _SCHEDULE_FIELDS}
    rest = {name: value for name, value in options.items() if name not in _SCHEDULE_FIELDS}
    return option_value("build_on_demand", "schedule", DrawSchedule, schedule, old), rest


def build_on_demand(mechanism: type[Mechanism], model: DataModel | DataModelFamily,
                    pairs: SecretPair | Sequence[SecretPair], query: Query, *, epsilon: float, delta: float,
                    rng: RNGLike = None, schedule: DrawSchedule | None = None, **options: Any) -> OnDemand:
    """Calibrate ``model`` and build ``mechanism`` on it, drawing more until the guarantee is established.

    Parameters
    ----------
    mechanism : mechanism class
        E.g. ``bp.mechanisms.APGM``; built as ``mechanism(calibration, epsilon=, delta=, **options)``.
    model, pairs, query
        As :func:`~bayespriv.calibrate`.
    epsilon, delta : float
        The request.
    rng : None, int, SeedSequence or Generator
        Round k draws with the k-th child of this seed.
    schedule : DrawSchedule, optional
        The rounds' draws — first round, ceiling, the procedure's confidence, progress bar:
        :class:`~bayespriv.mechanisms.on_demand.DrawSchedule` (default: from the draws a refusal asks for up
        to 2,000,000 per secret, at confidence 0.95). ``start=``, ``max_draws=``, ``confidence=`` and
        ``progress=`` are its deprecated spelling, kept for one release.
    **options
        Other arguments of the mechanism.

    Returns
    -------
    OnDemand
        The first established mechanism, the rounds' draws and the procedure's confidence.

    Raises
    ------
    DrawsNeededError
        When even ``schedule.max_draws`` per secret do not do (naming what the last refusal asked for).
    ValidationError
        Any other refusal of the mechanism (not a matter of draws) is raised as it is.
    """
    from ..calibration import ExecutionOptions, calibrate
    from ..random import as_seed_sequence

    if not callable(mechanism):
        raise ParameterTypeError(f"mechanism must be a mechanism class; got {type(mechanism).__name__}")
    schedule, options = _schedule(schedule, options)
    conf, ceiling = schedule.confidence, schedule.max_draws
    n = min(ceiling, schedule.start if schedule.start is not None
            else draws_for_delta(pairs, delta, confidence=round_confidence(conf, 1)))
    execution = ExecutionOptions(progress=schedule.progress)
    seeds = as_seed_sequence(rng)
    rounds: list[int] = []
    while True:
        k = len(rounds) + 1
        rounds.append(n)
        cal = calibrate(model, pairs, query, n_draws=n, rng=seeds.spawn(1)[0], confidence=round_confidence(conf, k),
                        execution=execution)
        try:
            return OnDemand(mechanism(cal, epsilon=epsilon, delta=delta, **options), tuple(rounds), conf)
        except DrawsNeededError as exc:
            if n >= ceiling:
                raise DrawsNeededError(f"{exc} — the ceiling max_draws={ceiling} is reached (rounds: {rounds})",
                                       draws_needed=exc.draws_needed, draws=n) from None
            n = min(ceiling, max(2 * n, exc.draws_needed))


def draws_for_delta(pairs: SecretPair | Sequence[SecretPair], delta: float, *, confidence: float = 0.95,
                    members: int = 1) -> int:
    """Draws per secret a calibration needs before any mechanism can certify ``delta`` with room for the noise.

    The number a refusal asks for (:func:`~bayespriv.privacy.accountant.check_draws`): the draws whose
    floor — the mass a region may have while every draw misses it — is a third of δ, at each direction's
    Bonferroni share of ``1 − confidence`` (two directions per pair and family member). A law that needs
    more (a rare region seen a few times, a wide draws' margin) is refused with a larger number.

    Examples
    --------
    >>> import bayespriv as bp
    >>> pair = bp.SecretPair(bp.DatasetSecret.mean("x", 0.0), bp.DatasetSecret.mean("x", 1.0))
    >>> draws_for_delta(pair, 1e-3)
    15512
    """
    from ..secrets import as_pairs
    from bayespriv.privacy.accountant import ASK_FLOOR_SHARE, LEVEL_SHARES
    from bayespriv.privacy.draw_bounds import draws_for_floor

    conf = check_confidence(confidence)
    if conf is None:
        raise fail("confidence", "a number in (0, 1) (a plug-in calibration certifies nothing)", confidence)
    directions = 2 * len(as_pairs(pairs)) * check_positive_int(members, "members")
    alpha_a = (1.0 - conf) / directions * LEVEL_SHARES[0]
    return draws_for_floor(ASK_FLOOR_SHARE * float(delta), alpha_a)
