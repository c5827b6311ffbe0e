"""The wire codec the thin client uses instead of ``json`` (browserbay.protocol drives CPython's
``_json`` itself): the same text out and the same value in as ``json``, for every JSON value,
and the same error for every text ``json`` refuses."""

from __future__ import annotations

import json
import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from browserbay import protocol
from browserbay.refusals import json_safe, printable

scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text()
)
values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def same(a: object, b: object) -> bool:
    """Equal, NaN included (NaN != NaN)."""
    return json.dumps(a) == json.dumps(b)


@given(values)
def test_dumps_and_encode_are_json_dumps_to_the_character(value: object) -> None:
    assert protocol.dumps(value) == json.dumps(value, ensure_ascii=False)
    frame = {"v": value}
    expected = json.dumps(frame, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    assert protocol.encode(frame) == expected


@given(values)
def test_loads_reads_what_json_reads(value: object) -> None:
    for text in (json.dumps(value), json.dumps(value, ensure_ascii=False, indent=1)):
        assert same(protocol.loads(text), json.loads(text))


@pytest.mark.parametrize(
    "text",
    ["", " ", "nope", "{", '{"a": 1} x', "[1,]", '"\\ud800', "01", "{'a': 1}", '"a\nb"'],
)
def test_loads_refuses_what_json_refuses_with_the_same_error(text: str) -> None:
    with pytest.raises(json.JSONDecodeError) as theirs:
        json.loads(text)
    with pytest.raises(json.JSONDecodeError) as ours:
        protocol.loads(text)
    assert (ours.value.msg, ours.value.pos) == (theirs.value.msg, theirs.value.pos)


def test_loads_takes_whitespace_constants_and_big_numbers_as_json_does() -> None:
    assert protocol.loads(' {"a": [1, 2.5e3, true, null]}\n') == {"a": [1, 2500.0, True, None]}
    assert math.isnan(protocol.loads("NaN"))
    assert protocol.loads("-Infinity") == -math.inf
    with pytest.raises(ValueError, match="digits"):  # int's own limit, as json.loads says it
        protocol.loads("1" * 5000)


def test_dumps_refuses_what_json_refuses() -> None:
    with pytest.raises(TypeError, match="Object of type set is not JSON serializable"):
        protocol.dumps({"a": {1}})
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="Circular reference"):
        protocol.dumps(loop)


def test_printable_and_json_safe_escape_every_control_character_and_only_those() -> None:
    every = "".join(map(chr, range(0x200)))
    shown = printable(every)
    controls = [c for c in every if (ord(c) < 0x20 and c not in "\t\n") or 0x7F <= ord(c) < 0xA0]
    assert len(controls) == 63
    assert not any(c in shown for c in controls)
    assert shown == "".join(f"\\x{ord(c):02x}" if c in controls else c for c in every)
    line = json.dumps({"t": every}, ensure_ascii=False)
    assert json.loads(json_safe(line)) == {"t": every}
    assert not any(chr(n) in json_safe(line) for n in range(0x7F, 0xA0))
