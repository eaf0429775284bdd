"""The recipients list's one rule, over generated histories: a device takes a list only if it
is the list it verified last or one made from it, however lists branch (a device changing an
earlier copy put back), rotate (a new data key, vouched for by the earlier ones) or are put
back. The oracle is the history itself: which list each list was made from."""

from __future__ import annotations

import os

import pyrage
from hypothesis import given, settings
from hypothesis import strategies as st

from memsync.stores.crypt_keys import DataKey, Device, Keyring, Trust, build, follows

EXAMPLES = int(os.environ.get("MEMSYNC_KEYS_EXAMPLES", "40"))
DEVICE = Device(str(pyrage.x25519.Identity.generate().to_public()), "laptop", 0.0)

# each step: (the list it is made from, by index; whether it rotates the data key)
steps = st.lists(st.tuples(st.integers(min_value=0), st.booleans()), min_size=1, max_size=7)


def _trusted(ring: Keyring) -> Trust:
    """What a device that verified `ring` keeps (as save_trust writes it)."""
    key = ring.key
    history = tuple((k.generation, k.secret) for k in ring.history)
    mac = key.mac(b"recipients", ring.body)
    return Trust(key.generation, key.secret, "", history, (DEVICE,), False, ring.version, mac)


@settings(max_examples=EXAMPLES, deadline=None)
@given(steps)
def test_a_device_takes_its_own_list_and_the_lists_made_from_it_and_no_other(history):
    rings = [Keyring(DataKey.generate(1), [DEVICE])]
    parents: list[int | None] = [None]
    lists = [build(rings[0])]  # as written: a list is made from one that was written
    for parent_at, rotates in history:
        parent = rings[parent_at % len(rings)]
        if rotates:
            key, kept = DataKey.generate(parent.key.generation + 1), [parent.key, *parent.history]
        else:
            key, kept = parent.key, parent.history
        rings.append(parent.successor(key, [DEVICE], kept))
        lists.append(build(rings[-1]))
        parents.append(parent_at % len(parents))

    def made_from(later: int, earlier: int) -> bool:
        at: int | None = later
        while at is not None:
            if at == earlier:
                return True
            at = parents[at]
        return False

    for i, ring in enumerate(rings):
        trusted = _trusted(ring)
        for j, data in enumerate(lists):
            assert follows(data, trusted) == made_from(j, i), (i, j, parents)
