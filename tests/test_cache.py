"""The cache grep and glob share: keyed on a store and its nodes table version, within one bound."""

from __future__ import annotations

from dataclasses import dataclass

from openviking.retrieve.cache import VersionCache


@dataclass
class Grepped:
    name: str


@dataclass
class Globbed:
    name: str


def test_a_value_is_found_only_under_its_store_version_and_kind() -> None:
    cache = VersionCache(max_bytes=100, max_entries=4)
    cache.put("/a", 1, Grepped("x"), 10)
    assert cache.find("/a", 1, Grepped, lambda v: v.name == "x") == Grepped("x")
    assert cache.find("/a", 2, Grepped, lambda v: True) is None
    assert cache.find("/b", 1, Grepped, lambda v: True) is None
    assert cache.find("/a", 1, Globbed, lambda v: True) is None
    assert cache.find("/a", 1, Grepped, lambda v: v.name == "y") is None


def test_a_new_version_drops_the_old_one_of_the_same_store_only() -> None:
    cache = VersionCache(max_bytes=100, max_entries=4)
    cache.put("/a", 1, Grepped("old"), 10)
    cache.put("/b", 1, Globbed("other store"), 10)
    cache.put("/a", 2, Globbed("new"), 10)
    assert cache.find("/a", 1, Grepped, lambda v: True) is None
    assert cache.find("/b", 1, Globbed, lambda v: True) == Globbed("other store")
    assert cache.find("/a", 2, Globbed, lambda v: True) == Globbed("new")


def test_one_bound_for_both_kinds_least_recently_used_out_first() -> None:
    cache = VersionCache(max_bytes=100, max_entries=3)
    cache.put("/a", 1, Grepped("1"), 10)
    cache.put("/a", 1, Globbed("2"), 10)
    cache.put("/a", 1, Grepped("3"), 10)
    assert cache.find("/a", 1, Grepped, lambda v: v.name == "1")  # now the most recently used
    cache.put("/a", 1, Globbed("4"), 10)  # four entries: "2" goes
    assert cache.find("/a", 1, Globbed, lambda v: v.name == "2") is None
    assert [cache.find("/a", 1, Grepped, lambda v, n=n: v.name == n) for n in "13"] == [Grepped("1"), Grepped("3")]
    cache.put("/a", 1, Globbed("big"), 95)  # over the byte budget: the oldest go until it fits
    assert cache.find("/a", 1, Globbed, lambda v: v.name == "big") == Globbed("big")
    assert cache.find("/a", 1, Grepped, lambda v: True) is None
    cache.put("/a", 1, Grepped("too big"), 101)  # larger than the whole budget: not kept
    assert cache.find("/a", 1, Grepped, lambda v: True) is None
    assert cache.find("/a", 1, Globbed, lambda v: v.name == "big") == Globbed("big")
