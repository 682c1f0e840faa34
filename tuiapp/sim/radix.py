"""The modelled radix (prefix) cache: how many leading prompt tokens a request finds cached.

SGLang's RadixAttention keeps finished requests' KV in a token trie and a new request
reuses its longest cached prefix (page size 1; at least one token is always computed, so
a repeated prompt reports ``prompt_tokens - 1`` cached). The cache lives in the KV pool's
free space: when it outgrows that, least recently used entries go. Here a trie of dicts,
and eviction drops whole least-recently-used top-level branches (one per distinct first
token, i.e. per shared-prefix group in a typical workload) rather than single leaves:
coarser than SGLang's leaf LRU, but a workload's hot prefixes stay and cold ones go.
"""

from __future__ import annotations

from collections import OrderedDict


class RadixCache:
    def __init__(self) -> None:
        # first token -> (subtree dict, node count); LRU order, most recent last
        self.roots: OrderedDict[int, list] = OrderedDict()
        self.nodes = 0

    def match(self, ids: list[int]) -> int:
        """Length of the longest cached prefix of ``ids`` (touches its branch)."""
        if not ids or ids[0] not in self.roots:
            return 0
        self.roots.move_to_end(ids[0])
        node = self.roots[ids[0]][0]
        n = 1
        for tok in ids[1:]:
            node = node.get(tok)
            if node is None:
                break
            n += 1
        return n

    def insert(self, ids: list[int]) -> None:
        if not ids:
            return
        entry = self.roots.get(ids[0])
        if entry is None:
            entry = self.roots[ids[0]] = [{}, 1]
            self.nodes += 1
        self.roots.move_to_end(ids[0])
        node = entry[0]
        added = 0
        for tok in ids[1:]:
            child = node.get(tok)
            if child is None:
                child = node[tok] = {}
                added += 1
            node = child
        entry[1] += added
        self.nodes += added

    def evict_to(self, capacity_tokens: int) -> None:
        """Drop least recently used branches until the cache holds at most ``capacity_tokens``."""
        while self.nodes > max(capacity_tokens, 0) and self.roots:
            _, (_, count) = self.roots.popitem(last=False)
            self.nodes -= count

    def clear(self) -> None:
        self.roots.clear()
        self.nodes = 0
