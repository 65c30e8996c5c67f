# SPDX-License-Identifier: MIT
# Copyright (c) 2026 The PyTorch pitfalls, measured authors
# Project: PyTorch pitfalls, measured — measured and explained on its page loader-overhead/
"""Batches of in-memory tensors, as DataLoader(TensorDataset(...)) yields them, without its per-sample overhead.

The pitfall: ``DataLoader(TensorDataset(x, y), batch_size=b)`` builds every batch one sample at a time — it
calls ``dataset[i]`` once per sample and then ``torch.stack``\\ s the pieces (``default_collate``). For
tensors that already sit in memory that per-sample work costs as much as the training step of a small model,
and several times more at a full batch of 1,000 samples. Two fixes, both yielding the same batches and drawing
the same random numbers as ``DataLoader(TensorDataset(...))``:

* ``TensorLoader`` replaces the DataLoader: it slices (sequential) or gathers rows with ``index_select``
  (shuffled) on the tensors' own device. The faster of the two, for data on one device and no sampler.
* ``BatchedTensorDataset`` replaces the TensorDataset and keeps the DataLoader: its ``__getitems__`` indexes
  every tensor once per batch. Samplers (``DistributedSampler`` too), worker processes and ``pin_memory``
  keep working.

Usage::

    from tensor_loader import TensorLoader, BatchedTensorDataset

    loader = TensorLoader(x, y, batch_size=64, shuffle=True)
    # or, keeping DataLoader and its options (from torch.utils.data import DataLoader):
    loader = DataLoader(BatchedTensorDataset(x, y), batch_size=64, shuffle=True,
                        collate_fn=BatchedTensorDataset.collate)
    for x_batch, y_batch in loader:
        loss = criterion(model(x_batch), y_batch)

What TensorLoader replaces, exactly: ``DataLoader(TensorDataset(*tensors), batch_size=..., shuffle=...,
drop_last=..., generator=...)`` with the default ``num_workers=0`` (or workers without ``persistent_workers``) in
a loop you write yourself. For the same arguments it yields the same batches in the same order, epoch after
epoch, and it draws the same random numbers, so the global RNG and ``generator`` end every epoch in the same
state: a seeded training run changes nothing but its speed. ``len(loader)`` and ``len(loader.dataset)`` work as
for a DataLoader; ``loader.sampler``, ``batch_sampler`` and ``collate_fn`` do not exist.

Where it does not fit: a training framework that rebuilds or re-shards your DataLoader (PyTorch Lightning swaps
in a ``DistributedSampler``, Accelerate's ``prepare`` shards the batch sampler) cannot do that to a TensorLoader:
there, keep the DataLoader and use ``BatchedTensorDataset``, with which every DataLoader feature keeps working.
Nor does it fit a dataset whose ``__getitem__`` does per-sample work (augmentation, decoding), or work that needs
worker processes: keep that dataset in its DataLoader.

Distributed training (DDP): TensorLoader shards like ``DistributedSampler``. ``TensorLoader(x, y, batch_size=b,
shuffle=True, distributed=True)`` takes the rank and the number of ranks from the initialised
``torch.distributed`` process group (or pass ``rank=`` and ``world_size=``), and call ``loader.set_epoch(epoch)``
before each epoch, as with ``DistributedSampler``. Each rank then gets the batches of
``DataLoader(TensorDataset(x, y), batch_size=b, drop_last=d, sampler=DistributedSampler(dataset, world_size,
rank, shuffle=s, seed=seed, drop_last=d))``: the same padding (the first indices repeated, so that every rank
has as many samples) or, with ``drop_last=True``, the same dropped tail. Without a choice, TensorLoader raises
when it is built or iterated inside an initialised process group of more than one rank: every rank would
silently train on the whole dataset — on two ranks, twice the optimizer steps per epoch of a sharded run.
``distributed=False`` says that is what you want.

Differences from DataLoader, all deliberate:

* Batches are tuples, not lists (``default_collate`` turns a tuple sample into a list).
* Sequential batches (``shuffle=False``) are *views* of the input: they share its memory, so an in-place
  change to a batch changes the dataset, and a slice of a non-contiguous tensor is not contiguous.
  DataLoader's batches are fresh contiguous copies (with automatic batching: its stacked batch). Shuffled
  batches are copies here too (small
  ones are views into one block of about 1 MiB gathered for several batches at once).
* No ``num_workers``, ``pin_memory``, ``sampler`` or ``collate_fn``: data already in memory (or on the GPU)
  needs none of them. Every ``iter()`` draws the worker base seed that every ``iter(DataLoader)`` draws
  without ``persistent_workers``, so at the end of each epoch the global RNG and ``generator`` are where
  DataLoader leaves them with ``num_workers=0`` or with worker processes (which, prefetching, draw
  RandomSampler's seed at ``iter()`` rather than at the first batch). With ``persistent_workers=True``
  DataLoader draws the base seed at the first ``iter()`` only, and TensorLoader does not match it. What
  cannot match either way is randomness *inside* DataLoader's worker processes: there are none.
* With ``shuffle=True`` and no ``generator`` DataLoader also draws a second permutation from a private
  generator after the last index of each epoch; nobody can observe that draw, so TensorLoader skips it.
  With a user ``generator`` that second permutation advances the generator, so TensorLoader draws it too,
  at the same moment in the epoch.

BatchedTensorDataset is fast with ``collate_fn=BatchedTensorDataset.collate``: DataLoader passes what
``__getitems__`` returns (a ``BatchedRows``) to the collate function, which takes its tensors as they are.
``BatchedRows`` also reads as the list of samples torch's wrappers (``StackDataset``, ``Subset``) and
``default_collate`` expect, so without that ``collate_fn``, or inside a wrapper that builds samples of its own,
the batches are still those of the same wrapper around ``TensorDataset`` — at ``default_collate``'s cost. With
automatic batching (a ``batch_size`` or a ``batch_sampler``) it never calls ``dataset[i]``; its batches are
fresh contiguous copies, lists as DataLoader's are, equal to those of ``DataLoader(TensorDataset(...))`` with
the same arguments. With worker processes, ``default_collate`` stacks a batch straight into shared memory inside
the worker; a batch ``BatchedTensorDataset`` gathered before its ``collate`` is copied once more, into shared memory,
to reach the main process.
"""

from __future__ import annotations

import collections.abc
import math
import numbers
from array import array
from typing import Any, Iterator, Optional, Sequence

import torch
from torch.utils.data import TensorDataset, default_collate

__all__ = ["TensorLoader", "BatchedTensorDataset"]

# Sequential batches are cut in spans of this many batches with one call per tensor, so the views are made
# in C++; a span bounds the memory held by views when batch_size is 1 and the dataset has millions of rows.
_BATCHES_PER_SPAN = 1024
# Small shuffled batches are gathered in groups of up to this many rows and about this many bytes.
_ROWS_PER_GATHER = 4096
_BYTES_PER_GATHER = 1 << 20


def _check_tensors(owner: str, tensors: tuple) -> list[tuple[int, ...]]:
    """The shapes of ``tensors``, after checking that they are tensors with one common first dimension."""
    if not tensors:
        raise TypeError(f"{owner} needs at least one tensor, got none")
    for position, tensor in enumerate(tensors):
        if not isinstance(tensor, torch.Tensor):
            raise TypeError(f"{owner} takes tensors; argument {position} is a {type(tensor).__name__}")
        if tensor.dim() == 0:
            raise ValueError(f"argument {position} is a 0-dim tensor; it has no first dimension to batch")
    shapes = [tuple(tensor.shape) for tensor in tensors]
    if len({shape[0] for shape in shapes}) != 1:
        raise ValueError(f"all tensors need the same size of the first dimension, got shapes {shapes}")
    return shapes


class TensorLoader:
    """Iterate over ``tensors`` in batches along their first dimension, like DataLoader over a TensorDataset.

    Args:
        *tensors: one or more tensors with the same size of the first dimension, all on one device.
        batch_size: samples per batch (an int >= 1).
        shuffle: reshuffle at every epoch, exactly as ``DataLoader(shuffle=True)`` does.
        drop_last: drop the last batch if it has fewer than ``batch_size`` samples (sharded: also the tail of
            the dataset that does not divide among the ranks, as ``DistributedSampler(drop_last=True)``).
        generator: a CPU ``torch.Generator`` to draw from instead of the global RNG (as DataLoader's). Sharded,
            the shuffle is drawn from ``seed + epoch`` instead, as ``DistributedSampler``'s.
        distributed: True: shard over the initialised ``torch.distributed`` process group; False: every rank
            iterates over the whole dataset, on purpose; None (default): shard if ``rank``/``world_size`` are
            given, refuse inside a process group of more than one rank otherwise.
        rank, world_size: this rank's shard of ``world_size`` (as ``DistributedSampler``'s ``rank`` and
            ``num_replicas``).
        seed: the sharded shuffle's seed, the same on every rank (``DistributedSampler``'s ``seed``); the
            permutation of epoch ``e`` is drawn from ``seed + e`` (``set_epoch``).

    Yields tuples with one batch per input tensor, on the tensors' device. See the module docstring for
    the (few) differences from DataLoader.
    """

    def __init__(self, *tensors: torch.Tensor, batch_size: int = 1, shuffle: bool = False,
                 drop_last: bool = False, generator: Optional[torch.Generator] = None,
                 distributed: Optional[bool] = None, rank: Optional[int] = None,
                 world_size: Optional[int] = None, seed: int = 0) -> None:
        shapes = _check_tensors("TensorLoader", tensors)
        devices = {tensor.device for tensor in tensors}
        if len(devices) != 1:
            raise ValueError(f"all tensors must be on one device, got {sorted(str(d) for d in devices)}")
        if not isinstance(batch_size, int) or isinstance(batch_size, bool):
            raise TypeError(f"batch_size must be an int, got {type(batch_size).__name__} {batch_size!r}")
        if batch_size < 1:
            raise ValueError(f"batch_size must be >= 1, got {batch_size}")
        for name, flag in (("shuffle", shuffle), ("drop_last", drop_last)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {type(flag).__name__} {flag!r}")
        if generator is not None:
            if not isinstance(generator, torch.Generator):
                raise TypeError(f"generator must be a torch.Generator or None, got {type(generator).__name__}")
            if generator.device.type != "cpu":
                raise ValueError(f"generator must be a CPU generator, as DataLoader's; got one on {generator.device}")
        if shapes[0][0] == 0:
            raise ValueError(f"the dataset is empty: the tensors have shapes {shapes}")

        self.rank, self.world_size = _shard(distributed, rank, world_size)
        self._distributed = distributed
        if not isinstance(seed, numbers.Integral) or isinstance(seed, bool):
            raise TypeError(f"seed must be an int, got {type(seed).__name__} {seed!r}")
        self.seed = int(seed)
        self.epoch = 0
        self.tensors: tuple[torch.Tensor, ...] = tensors
        self.dataset = TensorDataset(*tensors)  # len(loader.dataset), as with a DataLoader
        self.batch_size = batch_size
        self.shuffle = shuffle
        self.drop_last = drop_last
        self.generator = generator
        self.device: torch.device = tensors[0].device
        self._num_samples: int = shapes[0][0]
        row_bytes = sum(math.prod(shape[1:]) * tensor.element_size() for shape, tensor in zip(shapes, tensors))
        self._rows_per_gather = max(1, min(_ROWS_PER_GATHER, _BYTES_PER_GATHER // max(row_bytes, 1)))
        # The value is never used: drawing into it reproduces DataLoader's per-epoch base-seed draw.
        self._seed_sink = torch.empty((), dtype=torch.int64)
        # index_select on dim 0 of an (n, 1) tensor is several times slower than on its flat (n,) view
        # (torch 2.x, CPU), so rows of one element are gathered from the flat view; same bits either way.
        self._gather_sources = [
            (tensor.view(-1), tensor.shape[1:])
            if tensor.dim() > 1 and math.prod(tensor.shape[1:]) == 1 and tensor.is_contiguous()
            else (tensor, None)
            for tensor in tensors
        ]

    def set_epoch(self, epoch: int) -> None:
        """The epoch about to start, for the sharded shuffle (as ``DistributedSampler.set_epoch``): without it
        every epoch is shuffled alike. It changes nothing when the loader is not sharded."""
        if not isinstance(epoch, numbers.Integral) or isinstance(epoch, bool):
            raise TypeError(f"epoch must be an int, got {type(epoch).__name__} {epoch!r}")
        self.epoch = int(epoch)

    def _shard_size(self) -> int:
        """Samples on this rank, as ``DistributedSampler.num_samples``."""
        n, world = self._num_samples, self.world_size
        if self.drop_last and n % world:
            return math.ceil((n - world) / world)
        return math.ceil(n / world)

    def __len__(self) -> int:
        samples = self._num_samples if self.world_size is None else self._shard_size()
        if self.drop_last:
            return samples // self.batch_size
        return -(-samples // self.batch_size)

    def __repr__(self) -> str:
        shapes = ", ".join(str(tuple(t.shape)) for t in self.tensors)
        shard = "" if self.world_size is None else f", rank={self.rank}, world_size={self.world_size}"
        return (f"TensorLoader({shapes}, batch_size={self.batch_size}, shuffle={self.shuffle}, "
                f"drop_last={self.drop_last}, device={self.device}{shard})")

    def __iter__(self) -> Iterator[tuple[torch.Tensor, ...]]:
        # iter(DataLoader) draws one int64 (its workers' base seed) right away, before the first batch.
        if self.world_size is None and self._distributed is None:
            _shard(None, None, None)  # a process group started after this loader was built: refuse now
        self._seed_sink.random_(generator=self.generator)
        if self.world_size is not None:
            return self._sharded()
        return self._shuffled() if self.shuffle else self._sequential()

    def _sharded(self) -> Iterator[tuple[torch.Tensor, ...]]:
        """This rank's batches, from the indices ``DistributedSampler`` gives it."""
        n, world, size = self._num_samples, self.world_size, self.batch_size
        if self.shuffle:
            indices = torch.randperm(n, generator=torch.Generator().manual_seed(self.seed + self.epoch))
        else:
            indices = torch.arange(n)
        total = self._shard_size() * world
        if total > n:  # padded with the first indices, repeated as often as needed
            indices = torch.cat([indices] * (total // n) + [indices[:total % n]])
        indices = indices[:total][self.rank::world].to(self.device)
        count = indices.numel()
        full = count - count % size
        for start in range(0, full, size):
            yield self._gather(indices[start:start + size])
        if full < count and not self.drop_last:
            yield self._gather(indices[full:])

    def _sequential(self) -> Iterator[tuple[torch.Tensor, ...]]:
        n, size = self._num_samples, self.batch_size
        span = size * _BATCHES_PER_SPAN
        for start in range(0, n, span):
            length = min(span, n - start)
            count, rest = divmod(length, size)
            sizes = [size] * count + ([rest] if rest else [])
            # split_with_sizes makes all views of a span in one call (split() costs ~3x more per call).
            parts = [tensor[start:start + length].split_with_sizes(sizes) for tensor in self.tensors]
            if rest and self.drop_last:
                parts = [part[:count] for part in parts]
            yield from zip(*parts)

    def _shuffled(self) -> Iterator[tuple[torch.Tensor, ...]]:
        n, size = self._num_samples, self.batch_size
        generator = self.generator
        if generator is None:
            # RandomSampler seeds a private generator from the global RNG, lazily, at the first batch.
            seed = int(torch.empty((), dtype=torch.int64).random_().item())
            permutation = torch.randperm(n, generator=torch.Generator().manual_seed(seed))
        else:
            permutation = torch.randperm(n, generator=generator)
        permutation = permutation.to(self.device)
        full = n - n % size
        # Small batches are gathered a group at a time (one index_select per tensor, then views of it), as
        # each index_select has a fixed cost of microseconds; a group holds at most about 1 MiB or one batch.
        per_gather = max(1, self._rows_per_gather // size) * size
        for start in range(0, full, per_gather):
            end = min(start + per_gather, full)
            rows = self._gather(permutation[start:end])
            count = (end - start) // size
            if count == 1:
                yield rows
            else:
                yield from zip(*[part.split_with_sizes([size] * count) for part in rows])
        # RandomSampler draws a second permutation when the first runs out: while filling a short last
        # batch, or at the request after the last batch. Only a user generator can tell.
        if full < n and not self.drop_last:
            if generator is not None:
                torch.randperm(n, generator=generator)
            yield self._gather(permutation[full:])
        elif generator is not None:
            torch.randperm(n, generator=generator)

    def _gather(self, index: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return tuple([
            source.index_select(0, index) if row_shape is None
            else source.index_select(0, index).view(-1, *row_shape)
            for source, row_shape in self._gather_sources
        ])


class BatchedTensorDataset(TensorDataset):
    """A TensorDataset that DataLoader indexes once per batch instead of once per sample.

    ``DataLoader(BatchedTensorDataset(x, y), batch_size=..., collate_fn=BatchedTensorDataset.collate)`` yields
    the batches ``DataLoader(TensorDataset(x, y), batch_size=...)`` yields with the same other arguments
    (``shuffle``, ``sampler``, ``batch_sampler``, ``drop_last``, ``generator``, ``num_workers``, ``pin_memory``...)
    and draws the same random numbers — the sampler draws them, not the dataset — but fetches each batch with
    one indexing per tensor (``__getitems__``) instead of one ``dataset[i]`` per sample and a ``torch.stack``.

    Args:
        *tensors: one or more tensors with the same size of the first dimension.
    """

    def __init__(self, *tensors: torch.Tensor) -> None:
        _check_tensors("BatchedTensorDataset", tensors)
        super().__init__(*tensors)

    def __getitems__(self, indices: Sequence[int]) -> "BatchedRows":
        """The rows at ``indices`` of every tensor, fetched with one indexing per tensor: a ``BatchedRows``, which
        ``collate`` turns into the batch at once and which reads as the list of samples that torch's wrappers
        (``StackDataset``, ``Subset``) and ``default_collate`` expect from ``__getitems__``."""
        index = _index_tensor(indices)
        # contiguous(): the stacked batch of default_collate is contiguous whatever the input's strides.
        return BatchedRows(tuple(tensor[index.to(tensor.device)].contiguous() for tensor in self.tensors))

    @staticmethod
    def collate(batch: Any) -> Any:
        """DataLoader's ``collate_fn`` for this dataset: a batch from ``__getitems__`` (``BatchedRows``, directly or
        through ``Subset``) becomes the list DataLoader yields, as it is; anything else — a list of samples from
        a wrapper that indexes sample by sample (``ConcatDataset``) or builds its own samples (``StackDataset``)
        — goes to ``default_collate`` as usual."""
        if isinstance(batch, BatchedRows):
            return list(batch.tensors)
        return default_collate(batch)


class BatchedRows(collections.abc.Sequence):
    """One batch of a ``BatchedTensorDataset``: a tensor per input tensor, each holding the batch's rows. It is
    also the sequence of its samples — ``len()`` is the batch size and ``rows[i]`` the tuple ``dataset[i]`` would
    give — so a wrapper that expects ``__getitems__`` to return one sample per index gets exactly that."""

    __slots__ = ("tensors",)

    def __init__(self, tensors: tuple[torch.Tensor, ...]) -> None:
        self.tensors = tensors

    def __len__(self) -> int:
        return self.tensors[0].shape[0]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if not -len(self) <= i < len(self):
            raise IndexError(f"batch index {i} out of range for a batch of {len(self)}")
        return tuple(tensor[i] for tensor in self.tensors)

    def __repr__(self) -> str:
        return f"BatchedRows({len(self)} rows of {len(self.tensors)} tensors)"


def _shard(distributed: Optional[bool], rank: Optional[int],
           world_size: Optional[int]) -> tuple[Optional[int], Optional[int]]:
    """(rank, world_size) of the shard to iterate, or (None, None) for the whole dataset."""
    if distributed not in (None, True, False):
        raise TypeError(f"distributed must be True, False or None, got {distributed!r}")
    given = rank is not None or world_size is not None
    group = None
    if torch.distributed.is_available() and torch.distributed.is_initialized():
        group = (torch.distributed.get_rank(), torch.distributed.get_world_size())
    if distributed is False:
        if given:
            raise ValueError("distributed=False iterates over the whole dataset; it takes no rank or world_size")
        return None, None
    if not given:
        if distributed:
            if group is None:
                raise RuntimeError("TensorLoader(distributed=True) needs an initialised torch.distributed process "
                                   "group (torch.distributed.init_process_group), or rank= and world_size=")
            return group
        if group is not None and group[1] > 1:
            raise RuntimeError(
                f"TensorLoader: a torch.distributed process group of {group[1]} ranks is initialised, but this "
                f"loader was not told to shard: every rank would iterate over the whole dataset ({group[1]}x "
                "the optimizer steps per epoch, each sample seen on every rank). Pass distributed=True to shard "
                "like DistributedSampler (and call set_epoch(epoch) each epoch), or distributed=False if every "
                "rank should see every sample.")
        return None, None
    if rank is None or world_size is None:
        raise ValueError(f"rank and world_size go together, got rank={rank!r}, world_size={world_size!r}")
    for name, value in (("rank", rank), ("world_size", world_size)):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"{name} must be an int, got {type(value).__name__} {value!r}")
    rank, world_size = int(rank), int(world_size)
    if world_size < 1 or not 0 <= rank < world_size:
        raise ValueError(f"rank must be in [0, world_size) and world_size >= 1, got rank={rank}, "
                         f"world_size={world_size}")
    if group is not None and distributed and group != (rank, world_size):
        raise ValueError(f"rank={rank}, world_size={world_size} differ from the process group's "
                         f"rank {group[0]} of {group[1]}")
    return rank, world_size


def _index_tensor(indices: Any) -> torch.Tensor:
    """A sampler's list of indices as an int64 tensor."""
    if isinstance(indices, torch.Tensor):
        return indices
    try:
        # Through array("q"): about 5x faster than torch.as_tensor on a list of Python ints (torch 2.x).
        buffer = array("q", indices)
    except TypeError:  # not plain integers: let torch convert them, or say why it cannot
        return torch.as_tensor(indices, dtype=torch.int64)
    if not buffer:
        return torch.empty(0, dtype=torch.int64)
    return torch.frombuffer(buffer, dtype=torch.int64)
