"""Labeled nulls read back from the embedded engine's tables: the fast path for flat terms over
numbers (selp.engines.embedded.store._skolem) gives exactly the values the canonical parser
gives, for every shape of term."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from selp.engines.embedded.physical import Kind
from selp.engines.embedded.store import decode_rows
from selp.values import SKOLEM_MARK, Skolem, encode, format_value, parse_skolem_text

numbers = st.one_of(
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False).map(lambda x: x + 0.0),
)
leaves = st.one_of(numbers, st.text(alphabet='ab,()"\\ 1-', max_size=4))
names = st.sampled_from(["f", "f_m3_c", "f_m2_5_id"])
terms = st.recursive(
    st.builds(Skolem, names, st.lists(leaves, max_size=3).map(tuple)),
    lambda inner: st.builds(Skolem, names, st.lists(st.one_of(leaves, inner), max_size=3).map(tuple)),
    max_leaves=6,
)


@given(terms)
def test_decoded_labeled_nulls_equal_the_canonical_parse(t):
    text = encode(t)
    (row,) = decode_rows([(text,)], (Kind("int", True),))
    assert row == (t,) == (parse_skolem_text(text[len(SKOLEM_MARK):]),)
    assert type(row[0].args[0]) is type(t.args[0]) if t.args else True  # 1 stays int, 1.0 float
    assert format_value(row[0]) == format_value(t)
