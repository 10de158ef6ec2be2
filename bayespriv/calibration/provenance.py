"""Where a calibration came from: :class:`FileProvenance` and the assumption an unverified file carries.

These values travel with a calibration from the moment it is loaded; the files stage
(:mod:`bayespriv.files`) builds them, the calibration and the mechanisms only read them.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["FileProvenance", "UNVERIFIED"]


#: Assumption carried by every guarantee built on a calibration loaded with ``trust="unverified"``.
UNVERIFIED = "unverified_calibration"


@dataclass(frozen=True)
class FileProvenance:
    """Where a loaded calibration came from, and whether its file verified.

    Attributes
    ----------
    path : str
        The file, as given to ``load_calibration``.
    content_hash : str
        :func:`~bayespriv.files.signing.content_digest` of the file as read (verified or not).
    verified : bool
        True when the MAC verified under the owner's key (and the contents
        agreed with themselves). False for ``trust="unverified"`` loads of a
        file that did not verify: every guarantee built on it then carries
        the assumption :data:`UNVERIFIED`.
    key_fingerprint : str or None
        The fingerprint of the key the file claims to be signed with.
    reason : str or None
        Why it did not verify (None when verified).
    model_signature : str or None
        JSON of the signature of the data model the file was calibrated with
        (:mod:`bayespriv.datamodels.signature`; ``"null"`` when the file records none), read
        from the tree whose MAC was checked.
    """

    path: str
    content_hash: str
    verified: bool
    key_fingerprint: str | None = None
    reason: str | None = None
    model_signature: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.verified, bool) or not isinstance(self.content_hash, str):
            raise TypeError("FileProvenance needs verified: bool and content_hash: str")
