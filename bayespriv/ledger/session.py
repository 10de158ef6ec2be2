"""One protected dataset, one account: a :class:`Session` binds a frame to a ledger and its budgets.

Modelled on the anchors that own their data (Tumult Analytics' ``Session``, OpenDP's context): the data
owner opens a session on the protected table once; every release goes through it, computed on the
session's own copy of the table and accounted on the session's account of the ledger, so no release
can be made on "another" copy of the same data and escape joint accounting.

What "the same data" means to the ledger
---------------------------------------
A ledger's releases are accounted by *account*, never by the bytes of a frame. Releases that name no
account are all on the ledger's default account — whatever frame, copy, column subset, row order or
dtype each read — and are accounted together (:mod:`bayespriv.ledger.joint`). A name
(``Session(name=...)``, ``release(dataset_name=...)``) is a declaration that the data differs from
that of every other account, recorded on each release row as ``declared_separate_data``: if it is
false, the releases on the two accounts were never accounted together and their joint ε is unbounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pandas as pd

from bayespriv._validation import fail
from bayespriv.errors import ImmutableError, ParameterTypeError
from .ledger import Ledger
from .ledger_records import UNNAMED_DATASET, account_of, checked_account

if TYPE_CHECKING:
    from bayespriv.mechanisms import Mechanism
    from .composition import JointGaussian

__all__ = ["Session"]


def _budget_values(name: str, value: Any) -> tuple[float, float | None]:
    """``value`` of ``budget[name]``: ε, or (ε, δ)."""
    if isinstance(value, (tuple, list)) and len(value) == 2:
        return value[0], value[1]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value, None
    raise fail(f"budget[{name!r}]", "ε or a pair (ε, δ)", value)


class Session:
    """The account of one protected dataset on a ledger.

    Parameters
    ----------
    data : pandas.DataFrame
        The protected table. The session keeps a deep copy: later edits of ``data`` change nothing here.
    ledger : Ledger
        Where the budgets are kept and every release is charged.
    budget : mapping, optional
        ``{attribute: ε}`` or ``{attribute: (ε, δ)}``: budgets created if missing
        (:meth:`Ledger.create_budget`; an existing budget with another value is refused, never changed).
    name : str, optional
        The account. Default None: the ledger's default account, where every release that names no
        account is accounted together (conservative). A name declares that this data is not the data
        of the ledger's other accounts; each release row records ``declared_separate_data``.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> import pandas as pd
    >>> import bayespriv as bp
    >>> young, old = bp.DatasetSecret.mean("age", 30.0), bp.DatasetSecret.mean("age", 32.0)
    >>> moments = bp.Calibration.from_moments({young: [30.0], old: [32.0]}, {young: [[4.0]], old: [[4.0]]},
    ...                                       bp.SecretPair(young, old), query=bp.mean("age"), n_records=4)
    >>> workdir = tempfile.TemporaryDirectory()
    >>> session = bp.Session(pd.DataFrame({"age": [28.0, 30.0, 31.0, 35.0]}),
    ...                      ledger=bp.Ledger(pathlib.Path(workdir.name) / "ages.sqlite"), budget={"age": (2.0, 1e-4)})
    >>> noisy = session.release(bp.mechanisms.APGM(moments, epsilon=1.0, delta=1e-5))
    >>> session.spent("age"), session.remaining("age")
    ((1.0, 1e-05), (1.0, 9e-05))
    >>> session.releases()["dataset"].tolist()   # the ledger's default account
    ['unnamed']
    >>> session.ledger.close(); workdir.cleanup()
    """

    __slots__ = ("_data", "_ledger", "_name")

    def __init__(self, data: pd.DataFrame, *, ledger: Ledger, budget: Mapping[str, Any] | None = None,
                 name: str | None = None) -> None:
        if not isinstance(data, pd.DataFrame):
            raise fail("data", "a pandas DataFrame (the protected table)", type(data).__name__)
        if not isinstance(ledger, Ledger):
            raise ParameterTypeError(f"ledger must be a bayespriv Ledger; got {type(ledger).__name__}")
        if name is not None:
            if not isinstance(name, str) or not name.strip():
                raise fail("name", "None or a non-empty string naming the protected data", name)
            checked_account(name)
        if budget is not None and not isinstance(budget, Mapping):
            raise fail("budget", "a mapping {attribute: ε or (ε, δ)}", type(budget).__name__)
        for attribute, value in (budget or {}).items():
            ledger.create_budget(attribute, *_budget_values(attribute, value), reason="bayespriv.Session")
        object.__setattr__(self, "_data", data.copy(deep=True))
        object.__setattr__(self, "_ledger", ledger)
        object.__setattr__(self, "_name", name)

    def __setattr__(self, name: str, value: Any) -> None:
        raise ImmutableError(f"Session is immutable: its data, ledger and account are fixed; got an assignment to "
                             f"{name!r}. Open another Session instead.")

    @property
    def name(self) -> str:
        """The account's name (``"unnamed"``: the ledger's default account)."""
        return UNNAMED_DATASET if self._name is None else self._name

    @property
    def ledger(self) -> Ledger:
        """The ledger every release of the session is charged to."""
        return self._ledger

    @property
    def data(self) -> pd.DataFrame:
        """A copy of the protected table (editing it changes nothing here)."""
        return self._data.copy(deep=True)

    def release(self, mechanism: Mechanism | JointGaussian, **kwargs: Any) -> Any:
        """Release ``mechanism``'s query on the session's data, charged to the session's account.

        ``kwargs`` as the mechanism's ``release`` (``rng``, ``options`` — a :class:`~bayespriv.ReleaseOptions` —,
        ...), except ``ledger`` and ``dataset_name``, which are the session's. A
        :class:`~bayespriv.ledger.JointGaussian` is charged once for all its mechanisms.
        """
        release = getattr(mechanism, "release", None)
        if not callable(release):
            raise ParameterTypeError(f"mechanism must have a release(dataset, ...) method; got {type(mechanism).__name__}")
        for reserved in ("ledger", "dataset_name", "dataset"):
            if reserved in kwargs:
                raise fail(reserved, "left to the session (its ledger and account)", kwargs[reserved])
        return release(self._data, ledger=self._ledger, dataset_name=self._name, **kwargs)

    def spent(self, budget: str) -> tuple[float, float]:
        """(ε, δ) spent on ``budget`` by every account of the ledger (the budget is the attribute's, not the account's)."""
        return self._ledger.spent(budget)

    def remaining(self, budget: str) -> tuple[float, float]:
        """(ε, δ) left on ``budget``."""
        return self._ledger.remaining(budget)

    def releases(self) -> pd.DataFrame:
        """The ledger's release rows on this session's account (voided ones included, as :meth:`Ledger.releases`)."""
        rows = self._ledger.releases()
        return rows[[account_of(d) == self.name for d in rows["dataset"]]]

    def __repr__(self) -> str:
        shape = f"{self._data.shape[0]} rows × {self._data.shape[1]} columns"
        return f"Session({shape}, ledger={str(self._ledger.path)!r}, account={self.name!r})"
