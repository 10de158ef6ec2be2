"""How many draws the rounds of :func:`~bayespriv.mechanisms.on_demand.build_on_demand` take, as one checked
value: :class:`DrawSchedule`."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._validation import check_confidence, check_optional_positive_int, check_positive_int, fail
from ..errors import ParameterTypeError

__all__ = ["DrawSchedule"]


@dataclass(frozen=True, kw_only=True)
class DrawSchedule:
    """The rounds of draws of :func:`~bayespriv.mechanisms.on_demand.build_on_demand`
    (``build_on_demand(..., schedule=...)``), checked once.

    Keyword-only and frozen; the default, ``DrawSchedule()``, starts from the draws a refusal asks for,
    stops at 2,000,000 draws per secret, holds at confidence 0.95 and shows a progress bar only where one
    can be seen. A wrong type is a :class:`~bayespriv.errors.ParameterTypeError` and a value out of range a
    :class:`~bayespriv.errors.ValidationError`, each naming the field.

    Attributes
    ----------
    start : int, optional
        Draws per secret of the first round, at least 2 (a start above ``max_draws`` starts at
        ``max_draws``). Default: the number a refusal asks for at the requested δ
        (:func:`~bayespriv.mechanisms.on_demand.draws_for_delta`,
        :func:`~bayespriv.privacy.accountant.check_draws`).
    max_draws : int, default 2_000_000
        Ceiling of draws per secret, at least 2: a refusal asking for more once a round has drawn it is
        raised (:class:`~bayespriv.errors.DrawsNeededError`).
    confidence : float in (0, 1), default 0.95
        Level of the whole procedure: round k calibrates at ``1 − (1 − confidence)/2^k``, so that the
        rounds together fail with probability at most ``1 − confidence`` (:mod:`.on_demand`). Not None:
        draws on demand need a confidence to spend.
    progress : bool, optional
        Show a progress bar over each round's sampling tasks (``ExecutionOptions.progress`` of
        :func:`~bayespriv.calibrate`). True: always; False: never; None (default): where one can be seen.

    Examples
    --------
    >>> from bayespriv.mechanisms.on_demand import DrawSchedule
    >>> DrawSchedule(start=1000, max_draws=50_000)
    DrawSchedule(start=1000, max_draws=50000, confidence=0.95, progress=None)
    >>> DrawSchedule(max_draws=1)
    Traceback (most recent call last):
        ...
    bayespriv.errors.ValidationError: max_draws must be an integer >= 2; got 1
    """

    start: int | None = None
    max_draws: int = 2_000_000
    confidence: float = 0.95
    progress: bool | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", check_optional_positive_int(self.start, "start", minimum=2))
        object.__setattr__(self, "max_draws", check_positive_int(self.max_draws, "max_draws", minimum=2))
        confidence = check_confidence(self.confidence)
        if confidence is None:
            raise fail("confidence", "a number in (0, 1) (draws on demand need a confidence to spend)", None)
        object.__setattr__(self, "confidence", confidence)
        if self.progress is not None and not isinstance(self.progress, (bool, np.bool_)):
            raise ParameterTypeError(f"progress must be None, True or False; got {self.progress!r:.80}")
