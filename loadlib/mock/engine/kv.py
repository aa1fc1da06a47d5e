"""KV-cache block accounting with a prefix cache, as vLLM keeps it: a sequence holds anonymous blocks while it
computes, and full prompt blocks become cached blocks named by a key (their content), which later sequences share.

A cached block nobody references stays in the cache (least recently used first out) until a fresh allocation needs
its room, so a shared system prompt is prefilled once and then hit. Counts only, no block ids: pure and cheap.
"""

from __future__ import annotations

from collections import OrderedDict


class KvCache:
    """`total` blocks. Used = anonymous blocks + every cached block; idle cached blocks (no reference) are
    evictable, so admission counts them as free."""

    __slots__ = ("anon", "idle", "refs", "retired", "total")

    def __init__(self, total_blocks: int) -> None:
        self.total = total_blocks
        self.anon = 0
        self.refs: dict[int, int] = {}  # cached keys with references -> count
        self.idle: OrderedDict[int, None] = OrderedDict()  # cached keys without one, least recently used first
        self.retired: set[int] = set()  # referenced keys the cache forgot: no lookup finds them, release frees them

    @property
    def free(self) -> int:
        """Blocks an allocation can get: never used, or cached and idle (evicted on demand)."""
        return self.total - self.anon - len(self.refs)

    @property
    def used(self) -> int:
        """Blocks held by running sequences (what vLLM's kv_cache_usage_perc counts)."""
        return self.anon + len(self.refs)

    def cached(self, key: int) -> bool:
        return key in self.refs or key in self.idle

    def hits(self, keys: tuple[int, ...]) -> int:
        """How many leading keys are cached: the prefix a new sequence need not compute."""
        n = 0
        for key in keys:
            if key not in self.idle and (key not in self.refs or key in self.retired):
                break
            n += 1
        return n

    def free_after_pinning(self, keys: tuple[int, ...]) -> int:
        """Free blocks once `keys` (cached) are referenced: idle ones among them stop being evictable."""
        return self.free - sum(1 for key in keys if key in self.idle)

    def pin(self, key: int) -> None:
        if key in self.idle:
            del self.idle[key]
            self.refs[key] = 1
        else:
            self.refs[key] += 1

    def unpin_all(self, keys: tuple[int, ...]) -> None:
        """Drop a reference to each of `keys`; a key nobody references any more goes idle (most recent last) or,
        retired, is freed."""
        refs, idle, retired = self.refs, self.idle, self.retired
        for key in keys:
            count = refs[key] - 1
            if count:
                refs[key] = count
                continue
            del refs[key]
            if key in retired:
                retired.discard(key)
            else:
                idle[key] = None

    def allocate(self, n: int) -> bool:
        """Take `n` anonymous blocks, evicting idle cached ones as needed; False (and nothing taken) without room."""
        if n > self.free:
            return False
        overflow = self.anon + n + len(self.refs) + len(self.idle) - self.total
        for _ in range(max(0, overflow)):
            self.idle.popitem(last=False)
        self.anon += n
        return True

    def release(self, n: int) -> None:
        self.anon -= n

    def publish_all(self, keys: tuple[int, ...]) -> None:
        """A sequence's anonymous blocks now hold the full prompt blocks named `keys`: cache each (or share the copy
        another sequence cached meanwhile and free this one)."""
        refs, idle, retired = self.refs, self.idle, self.retired
        self.anon -= len(keys)
        for key in keys:
            retired.discard(key)  # computed again after the cache forgot it: cached again
            if key in idle:
                del idle[key]
                refs[key] = 1
            else:
                refs[key] = refs.get(key, 0) + 1

    def forget(self) -> None:
        """Empty the prefix cache (`POST /mock/reset`): idle cached blocks are freed now; the blocks running
        sequences hold stay theirs until they release them, then are freed, and no lookup finds them meanwhile."""
        self.idle.clear()
        self.retired.update(self.refs)
