"""snippets/seeding.py: seed_everything, seeded, same_parameters, rng_states and restore_rng_states."""

from __future__ import annotations

import random
import sys

import numpy
import pytest
import torch
from torch import nn

from snippets.seeding import restore_rng_states, rng_states, same_parameters, seed_everything, seeded


def _draws():
    return random.random(), float(numpy.random.random()), torch.rand(1).item()


def test_seed_everything_covers_python_numpy_and_torch():
    seed_everything(5)
    first = _draws()
    seed_everything(5)
    assert _draws() == first
    seed_everything(6)
    second = _draws()
    assert all(a != b for a, b in zip(first, second)), "each named RNG must follow the seed"


def test_seed_everything_matches_torch_manual_seed():
    seed_everything(3)
    ours = torch.get_rng_state()
    torch.manual_seed(3)
    assert torch.equal(ours, torch.get_rng_state())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: test_seed_everything_matches_torch_manual_seed")
def test_seed_everything_seeds_cuda():
    seed_everything(3)
    first = torch.rand(4, device="cuda")
    seed_everything(3)
    assert torch.equal(first, torch.rand(4, device="cuda"))


def test_seeded_makes_blocks_equal_and_restores_state():
    torch.manual_seed(123)
    before = torch.get_rng_state()
    with seeded(0):
        a = nn.Linear(4, 3)
    assert torch.equal(before, torch.get_rng_state())
    with seeded(0):
        b = nn.Linear(4, 3)
    assert same_parameters(a, b)
    assert torch.equal(before, torch.get_rng_state())


def test_seeded_restores_state_when_the_block_raises():
    torch.manual_seed(9)
    before = torch.get_rng_state()
    with pytest.raises(KeyError):
        with seeded(1):
            torch.rand(100)
            raise KeyError("inside")
    assert torch.equal(before, torch.get_rng_state())


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: test_seeded_restores_state_when_the_block_raises")
def test_seeded_restores_cuda_state():
    before = torch.cuda.get_rng_state()
    with seeded(1):
        torch.rand(100, device="cuda")
    assert torch.equal(before, torch.cuda.get_rng_state())


@pytest.mark.parametrize("bad", [1.5, "0", None, True, [1]])
def test_non_integer_seed_is_a_type_error(bad):
    with pytest.raises(TypeError, match=f"seed must be an int, got {type(bad).__name__}"):
        seed_everything(bad)
    with pytest.raises(TypeError, match="seed must be an int"):
        with seeded(bad):
            pass


@pytest.mark.parametrize("bad", [-1, 2**32, 2**64])
def test_out_of_range_seed_is_a_value_error(bad):
    with pytest.raises(ValueError, match=rf"seed must be in \[0, 4294967295\], got {bad}"):
        seed_everything(bad)


def test_same_parameters_is_bitwise_and_checks_names():
    torch.manual_seed(0)
    a = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    b = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    assert not same_parameters(a, b)
    b.load_state_dict(a.state_dict())
    assert same_parameters(a, b)
    with torch.no_grad():
        b[0].weight[0, 0] = torch.nextafter(b[0].weight[0, 0], torch.tensor(2.0))
    assert not same_parameters(a, b), "a one-ulp difference must count"
    assert not same_parameters(nn.Linear(2, 2), nn.Sequential(nn.Linear(2, 2)))
    assert not same_parameters(nn.Linear(2, 2), nn.Linear(2, 3))


def test_same_parameters_treats_equal_nans_as_equal_and_signed_zeros_as_different():
    a, b = nn.Linear(1, 1), nn.Linear(1, 1)
    with torch.no_grad():
        a.weight.fill_(float("nan")); b.weight.fill_(float("nan"))
        a.bias.fill_(0.0); b.bias.fill_(0.0)
    assert same_parameters(a, b)
    with torch.no_grad():
        b.bias.fill_(-0.0)
    assert not same_parameters(a, b)


def test_same_parameters_rejects_non_modules():
    with pytest.raises(TypeError, match="expects two nn.Module, got Tensor and Linear"):
        same_parameters(torch.zeros(1), nn.Linear(1, 1))


def test_largest_seed_is_accepted():
    seed_everything(2**32 - 1)
    with seeded(2**32 - 1):
        pass


class _Holder(nn.Module):
    def __init__(self, value: torch.Tensor) -> None:
        super().__init__()
        self.register_buffer("value", value)


@pytest.mark.parametrize("other", [torch.zeros(3, dtype=torch.int32), torch.zeros(1, 3), torch.zeros(3, 1)],
                         ids=["dtype", "shape", "shape2"])
def test_same_bits_with_another_dtype_or_shape_are_not_the_same_parameters(other):
    # All-zero bytes either way: only the dtype or the shape tells them apart.
    assert same_parameters(_Holder(torch.zeros(3)), _Holder(torch.zeros(3)))
    assert not same_parameters(_Holder(torch.zeros(3)), _Holder(other))


def test_same_parameters_compares_bool_buffers_bitwise():
    assert same_parameters(_Holder(torch.tensor([True, False])), _Holder(torch.tensor([True, False])))
    assert not same_parameters(_Holder(torch.tensor([True, False])), _Holder(torch.tensor([True, True])))


@pytest.fixture()
def fork_rng_spy(monkeypatch):
    """Record the devices every ``torch.random.fork_rng`` is asked to fork; fork the CPU generator for real."""
    forked = []
    real = torch.random.fork_rng

    def spy(devices=None, **kwargs):
        forked.append(list(devices))
        return real(devices=[], **kwargs)

    monkeypatch.setattr(torch.random, "fork_rng", spy)
    return forked


def _pretend_cuda(monkeypatch, *, initialised: bool, devices: int) -> list[int]:
    """CUDA present on a CPU-only machine: record what seeded() seeds on the GPUs, fail if it initialises CUDA."""
    seeded_all: list[int] = []

    def lazy_init():
        raise AssertionError("CUDA was initialised")

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: devices)
    monkeypatch.setattr(torch.cuda, "is_initialized", lambda: initialised)
    monkeypatch.setattr(torch.cuda, "_lazy_init", lazy_init)
    monkeypatch.setattr(torch.cuda, "manual_seed_all", seeded_all.append)  # torch.manual_seed calls it too
    return seeded_all


def test_seeded_forks_every_cuda_device_when_cuda_is_initialised(monkeypatch, fork_rng_spy):
    """The CUDA path without a GPU: availability, initialisation and the device count are patched."""
    seeded_all = _pretend_cuda(monkeypatch, initialised=True, devices=3)
    with seeded(0):
        pass
    assert fork_rng_spy == [[0, 1, 2]]
    assert seeded_all == [0], "an initialised CUDA is restored by fork_rng, not re-seeded"


def test_seeded_starts_no_cuda_context_when_cuda_is_not_initialised(monkeypatch, fork_rng_spy):
    seeded_all = _pretend_cuda(monkeypatch, initialised=False, devices=4)
    torch.manual_seed(11)
    seeded_all.clear()
    before = torch.get_rng_state()
    with seeded(3):
        nn.Linear(2, 2)
    assert fork_rng_spy == [[]], "no CUDA device's state may be read: reading it initialises CUDA"
    # torch.manual_seed(3) in the block queued seed 3 for the GPUs; on exit they get the entry seed back
    assert seeded_all == [3, 11]
    assert torch.equal(before, torch.get_rng_state())


def test_seeded_gives_the_gpus_their_entry_seed_back_when_the_block_raises(monkeypatch, fork_rng_spy):
    seeded_all = _pretend_cuda(monkeypatch, initialised=False, devices=1)
    torch.manual_seed(5)
    seeded_all.clear()
    with pytest.raises(KeyError):
        with seeded(3):
            raise KeyError("inside")
    assert seeded_all == [3, 5]


def test_seeded_forks_no_cuda_device_without_cuda(monkeypatch, fork_rng_spy):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 3)  # a driver can report devices it cannot use
    with seeded(0):
        pass
    assert fork_rng_spy == [[]]


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: "
                    "test_same_bits_with_another_dtype_or_shape_are_not_the_same_parameters")
def test_same_parameters_across_devices():
    a = nn.Linear(3, 2)
    b = nn.Linear(3, 2).cuda()
    b.load_state_dict(a.state_dict())
    assert same_parameters(a, b) and same_parameters(b, a)
    with torch.no_grad():
        b.bias[0] += 1
    assert not same_parameters(a, b)


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device; CPU twin: "
                    "test_seeded_starts_no_cuda_context_when_cuda_is_not_initialised")
def test_seeded_does_not_initialise_cuda():
    import subprocess
    import sys
    from pathlib import Path

    code = ("import torch, torch.nn as nn\nfrom snippets.seeding import seeded\n"
            "with seeded(0):\n    nn.Linear(2, 2)\nprint(torch.cuda.is_initialized())")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         cwd=Path(__file__).resolve().parents[1]).stdout
    assert out.strip() == "False"


def test_rng_states_round_trip_through_a_weights_only_checkpoint(tmp_path):
    """What rng_states saves survives torch.save and torch.load(weights_only=True), and restore_rng_states makes
    every stream — Python's random, NumPy's global one, torch's CPU one and a given generator — continue as it
    would have."""
    generator = torch.Generator().manual_seed(3)
    seed_everything(1)
    torch.save({"rng": rng_states(generator)}, tmp_path / "checkpoint.pt")
    expected = (random.random(), float(numpy.random.rand()), torch.rand(3), torch.rand(2, generator=generator))
    seed_everything(9)
    generator.manual_seed(9)
    restore_rng_states(torch.load(tmp_path / "checkpoint.pt", weights_only=True)["rng"], generator)
    again = (random.random(), float(numpy.random.rand()), torch.rand(3), torch.rand(2, generator=generator))
    assert expected[:2] == again[:2] and torch.equal(expected[2], again[2]) and torch.equal(expected[3], again[3])


def test_restore_rng_states_needs_the_generators_it_was_given():
    states = rng_states(torch.Generator(), torch.Generator())
    with pytest.raises(ValueError, match="the states hold 2 generator\\(s\\), 1 given"):
        restore_rng_states(states, torch.Generator())
    before = torch.get_rng_state()
    with pytest.raises(ValueError):
        restore_rng_states(states)
    assert torch.equal(before, torch.get_rng_state()), "nothing is restored from a mismatched call"


def test_rng_states_restore_from_json_lists_and_without_generators():
    """States that went through JSON (tuples read back as lists, NumPy's keys as plain integers) restore as well,
    and states saved without generators need none."""
    import json

    seed_everything(5)
    states = rng_states()
    expected = (random.random(), float(numpy.random.rand()), torch.rand(2))
    read_back = json.loads(json.dumps({**states, "torch": None}))
    read_back["torch"] = states["torch"]
    assert isinstance(read_back["random"], list) and isinstance(read_back["numpy"][1], list)
    del read_back["generators"]
    seed_everything(6)
    restore_rng_states(read_back)
    assert (random.random(), float(numpy.random.rand())) == expected[:2] and torch.equal(torch.rand(2), expected[2])


def test_restore_rng_states_says_when_numpys_state_cannot_be_put_back(monkeypatch):
    states = rng_states()
    monkeypatch.setitem(sys.modules, "numpy", None)  # an environment without NumPy
    with pytest.raises(ValueError, match=r"^restore_rng_states: the states hold NumPy's generator, and NumPy cannot be "
                                         r"imported here$"):
        restore_rng_states(states)
    assert "numpy" not in rng_states(), "and there, nothing of NumPy is saved"


def test_cuda_states_are_saved_once_cuda_is_initialised_and_restored_where_it_is_available(monkeypatch):
    """The CUDA generators' states, faked on a machine without a GPU: saved when CUDA is initialised, put back only
    where CUDA is available (a checkpoint from a GPU machine restores on a CPU one)."""
    import snippets.seeding as seeding

    put = []
    monkeypatch.setattr(seeding, "_cuda_initialised", lambda: True)
    monkeypatch.setattr(torch.cuda, "get_rng_state_all", lambda: ["device 0", "device 1"])
    monkeypatch.setattr(torch.cuda, "set_rng_state_all", put.append)
    states = rng_states()
    assert states["cuda"] == ["device 0", "device 1"]
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    restore_rng_states(states)
    assert put == [], "no CUDA here: nothing to put back"
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    restore_rng_states(states)
    assert put == [["device 0", "device 1"]]
    restore_rng_states({key: value for key, value in states.items() if key != "cuda"})
    assert put == [["device 0", "device 1"]], "states saved without CUDA put nothing back"
