"""DTensor sharding rules: the ops run shard by shard on sharded inputs.

mymuladd, mymul and myadd_out compute each element from the elements at the
same index, so inputs sharded alike (or all replicated) need no
communication: each rank runs the op on its local shards and the output is
sharded the same way. DTensor picks among the placements listed here and
redistributes inputs that match none (a Shard(0) times a Shard(1), say)
before the call. mymul is also linear in each input, so a Partial (pending
sum) input times a Replicate one gives a Partial output; mymuladd is not
(the + c would be summed once per rank), so it has no Partial rule.

Importing torch.distributed.tensor takes about half a second, which users
without DTensor should not pay on `import extension_cpp`. So this module is
imported when torch.distributed.tensor is: at once if it already is, else by
register_when_dtensor_loads() below, from the package's __init__.
"""

import torch
from torch.distributed.tensor import Partial, Replicate, Shard
from torch.distributed.tensor.experimental import register_sharding

# extension_cpp or extension_cpp_stable: the stable-ABI package ships this
# same file, and its ops live in a namespace named after it.
ops = getattr(torch.ops, __package__)


def _alike(ndim: int, n_tensors: int, extra=()):
    """Output and inputs all Replicate, or all Shard(d) for one dimension d."""
    placements = [Replicate()] + [Shard(d) for d in range(ndim)]
    return [([p], [p] * n_tensors + list(extra)) for p in placements]


@register_sharding(ops.mymuladd.default)
def _mymuladd_sharding(a, b, c):
    return _alike(a.ndim, 2, extra=[None])  # None: c is not a tensor


@register_sharding(ops.mymul.default)
def _mymul_sharding(a, b):
    partial = [([Partial()], [Partial(), Replicate()]), ([Partial()], [Replicate(), Partial()])]
    return _alike(a.ndim, 2) + partial


@register_sharding(ops.myadd_out.default)
def _myadd_out_sharding(a, b, out):
    # out is written in place, so it must keep its own placement: DTensor
    # would otherwise redistribute it into a temporary, write the sum there
    # and leave out unchanged. So the only rule offered is out's placement,
    # and a and b are redistributed to it. Rules are per mesh dimension and
    # DTensor combines them across dimensions, so out must have one placement
    # on every mesh dimension for the combination to be out's own.
    placements = set(out.placements)
    if len(placements) != 1:
        raise NotImplementedError(
            "myadd_out: on a DTensor, out must have the same placement on every mesh "
            f"dimension, got {tuple(out.placements)}; use a + b, or redistribute out"
        )
    (placement,) = placements
    # No output (the op writes into out), so the rule's output list is empty.
    return [([], [placement] * 3)]
