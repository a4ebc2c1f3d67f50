"""One line of pending.jsonl, a staged write waiting for the owner (review.py says the rest).

Why a module of its own: the review that writes these lines and pendinggone.py, which reads their
times to say which missing write a forget probably took, both read them.
"""

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict

from memoryd.journal.idform import PENDING_ID


def pending_id(value: str) -> str:
    """value, when it is a pending id (idform.PENDING_ID); a line whose id is none (a hand edit, a
    number past nine digits) is damaged: shown as such by pending, kept by a rewrite."""
    if not PENDING_ID.match(value):
        raise ValueError("not a pending id (p-YYYY-MM-DD-NNNN)")
    return value


class PendingLine(BaseModel):
    """One line of pending.jsonl, fields in the order memoryd writes them. args is checked again
    when the item is accepted (args_of), so a damaged one is refused then, naming the item."""

    model_config = ConfigDict(extra="allow", strict=True)
    id: Annotated[str, AfterValidator(pending_id)]
    time: str
    session: str | None = None
    call: str | None = None
    taint: str | None = None
    untrusted: bool | None = None
    action: str | None = None
    file: str | None = None
    args: object = None

    def dump(self) -> dict:
        return self.model_dump(mode="json", exclude_unset=True)
