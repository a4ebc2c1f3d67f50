"""Data classes and labels: what a piece of data is, and whether it came from outside.

DataClass is ordered public < private < secret. A Label pairs a class with the untrusted flag; the
stricter of two labels has the higher class, and is untrusted if either is.
"""

from typing import Literal, TypeGuard, TypeVar

from pydantic import BaseModel, ConfigDict, Field

DataClass = Literal["public", "private", "secret"]

CLASS_RANK: dict[str, int] = {"public": 0, "private": 1, "secret": 2}
CLASSES: tuple[str, ...] = ("public", "private", "secret")


# A class as the caller holds it: DataClass where it is known to be one, str where it is not.
ClassT = TypeVar("ClassT", bound=str)


def higher_class(a: ClassT, b: ClassT) -> ClassT:
    """The higher of two data classes."""
    return a if CLASS_RANK[a] >= CLASS_RANK[b] else b


def is_class(value: object) -> TypeGuard[DataClass]:
    return isinstance(value, str) and value in CLASS_RANK


class Label(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, populate_by_name=True, frozen=True)

    klass: DataClass = Field(alias="class")
    untrusted: bool

    def to_wire(self) -> dict:
        return {"class": self.klass, "untrusted": self.untrusted}


def stricter(a: Label, b: Label | None) -> Label:
    """The stricter of two labels: the higher class, untrusted if either is."""
    if b is None:
        return a
    return Label(klass=higher_class(a.klass, b.klass), untrusted=a.untrusted or b.untrusted)
