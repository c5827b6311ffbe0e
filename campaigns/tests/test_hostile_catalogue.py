"""The hostile campaign's catalogue (campaigns/attacks.py) is data: the same seed generates the
same attacks, every family is there, and the runner imports. The attacks themselves are not
run here (each has its own regression test; `campaigns/run.sh hostile` runs them all)."""

from __future__ import annotations

from campaigns.attacks import DEFAULT_SAMPLE, FAMILIES, catalogue, fill


def test_the_catalogue_is_generated_deterministically_from_its_seed() -> None:
    first = catalogue(7, DEFAULT_SAMPLE)
    assert first == catalogue(7, DEFAULT_SAMPLE), "the same seed, the same attacks in order"
    assert first != catalogue(8, DEFAULT_SAMPLE), "another seed samples other variants"
    assert {a.family for a in first} == set(FAMILIES)
    for family, n in DEFAULT_SAMPLE.items():
        assert sum(a.family == family for a in first) == n
    whole = catalogue(7)
    assert len(whole) > 2000
    assert len({a.key() for a in whole}) == len(whole), "every variant is named once"


def test_placeholders_are_filled_through_lists_and_dicts() -> None:
    got = fill({"u": ["{site}/t/{aid}", 3]}, {"site": "http://127.0.0.1:1", "aid": "a1"})
    assert got == {"u": ["http://127.0.0.1:1/t/a1", 3]}


def test_the_runner_imports() -> None:
    import campaigns.hostile

    assert campaigns.hostile.ORDER
