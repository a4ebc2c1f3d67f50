import pytest

from proto.labels import Label, higher_class, stricter


@pytest.mark.parametrize(
    "a,b,expected",
    [
        (("public", False), ("private", False), ("private", False)),
        (("secret", False), ("private", True), ("secret", True)),
        (("private", True), ("public", False), ("private", True)),
        (("private", False), ("private", False), ("private", False)),
    ],
)
def test_stricter(a, b, expected):
    la, lb = Label(klass=a[0], untrusted=a[1]), Label(klass=b[0], untrusted=b[1])
    assert stricter(la, lb) == Label(klass=expected[0], untrusted=expected[1])
    assert stricter(lb, la) == stricter(la, lb)


def test_stricter_with_none_keeps_label():
    label = Label(klass="public", untrusted=False)
    assert stricter(label, None) is label


def test_order():
    assert higher_class("public", "secret") == "secret"
    assert higher_class("private", "public") == "private"


def test_wire_form_uses_class():
    assert Label.model_validate({"class": "secret", "untrusted": True}).to_wire() == {
        "class": "secret",
        "untrusted": True,
    }
