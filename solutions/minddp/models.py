"""Provided — small models and data used by the tests, the demo and the benchmark.

Each model comes with a batch generator, so a scenario can say "model X, rank r, step s" and get the same
weights and data for torch's DDP and for minddp. ``build(name, seed)`` seeds the initialisation;
``batch(name, rank, step)`` gives each rank its own data (that is data parallelism).
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import nn


class MLP(nn.Sequential):
    """``layers`` Linear(width, width) with ReLU between them (the lecture's bucketing example: 6 x Linear(512, 512))."""

    def __init__(self, layers: int = 6, width: int = 512):
        blocks: list[nn.Module] = []
        for i in range(layers):
            blocks.append(nn.Linear(width, width))
            if i < layers - 1:
                blocks.append(nn.ReLU())
        super().__init__(*blocks)


class ConvBN(nn.Module):
    """Conv + BatchNorm: buffers (running statistics) that DDP broadcasts at every forward."""

    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                                      nn.Conv2d(8, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU())
        self.head = nn.Linear(16, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(x).mean(dim=(2, 3)))


class Tied(nn.Module):
    """A tiny language model whose output layer shares the embedding matrix (one parameter, used twice)."""

    def __init__(self, vocab: int = 64, dim: int = 32):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.hidden = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, vocab)
        self.out.weight = self.embed.weight

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        return self.out(torch.tanh(self.hidden(self.embed(tokens))))


class Frozen(MLP):
    """An MLP whose second and fourth layers are frozen (requires_grad=False): they need no sync."""

    def __init__(self):
        super().__init__(layers=5, width=64)
        for layer in (self[2], self[6]):
            layer.requires_grad_(False)


class Mixed(nn.Module):
    """float32 and float64 parameters: buckets are per dtype."""

    def __init__(self):
        super().__init__()
        self.a = nn.Linear(32, 48)
        self.b = nn.Linear(48, 48).double()
        self.c = nn.Linear(48, 16)
        self.d = nn.Linear(16, 8).double()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.b(torch.relu(self.a(x)).double()).float()
        return self.d(torch.relu(self.c(x)).double()).float()


class TwoBranch(nn.Module):
    """Two independent branches whose gradient-ready order depends on the rank.

    Autograd runs the most recently created nodes first, so the branch computed last in forward gets its
    gradients first in backward. ``branch_first`` differs across ranks, so does the ready order.
    """

    def __init__(self, width: int = 64):
        super().__init__()
        self.a = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))
        self.b = nn.Sequential(nn.Linear(width, width), nn.Tanh(), nn.Linear(width, width))
        self.branch_first = "a"

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.branch_first == "a":
            ya = self.a(x)
            yb = self.b(x)
        else:
            yb = self.b(x)
            ya = self.a(x)
        return ya + yb


class Branchy(nn.Module):
    """``b`` is used only when asked: unused parameters (handout §4.4)."""

    def __init__(self, width: int = 16):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.b = nn.Linear(width, width)
        self.c = nn.Linear(width, 4)

    def forward(self, x: torch.Tensor, use_b: bool = True) -> torch.Tensor:
        x = torch.relu(self.a(x))
        if use_b:
            x = x + torch.relu(self.b(x))
        return self.c(x)


class Edges(nn.Module):
    """Parameters at the edges of what DDP must handle, and a forward that returns a dict.

    ``t`` is a transposed weight (not contiguous: its gradient has the same strides, so ``.view(-1)`` on it fails),
    ``empty`` has no elements (torch buckets it like any other tensor), ``scale`` is a scalar (0-dim), and ``b``
    is used only when asked (``use_b``). The outputs come back in a dict: whatever looks for used parameters must
    walk containers. Backward does not produce the gradients in reverse registration order, so buckets fill out
    of index order: ``c``'s before ``b``'s (``b`` is registered last, so with one bucket per tensor its buckets
    come first: on a rank that leaves ``b`` unused they hold no gradient), and ``t``'s, ``empty``'s and
    ``scale``'s before ``a``'s.
    """

    def __init__(self, width: int = 16):
        super().__init__()
        self.a = nn.Linear(width, width)
        self.t = nn.Parameter(torch.randn(width, 2 * width).t())  # (2w, w) with strides (1, 2w)
        self.empty = nn.Parameter(torch.zeros(0, width))
        self.scale = nn.Parameter(torch.tensor(1.5))
        self.c = nn.Linear(2 * width, 4)
        self.b = nn.Linear(2 * width, 2 * width)

    def forward(self, x: torch.Tensor, use_b: bool = True) -> dict[str, torch.Tensor]:
        h = torch.relu(self.a(x)) @ self.t.t() * self.scale + self.empty.sum()
        if use_b:
            h = h + torch.relu(self.b(h))
        return {"out": self.c(h), "hidden": h.mean(dim=1)}


def many_small() -> nn.Module:
    """Many small tensors (48 LayerNorm-sized Linears): where bucketing matters most."""
    return MLP(layers=48, width=32)


MODELS: dict[str, Callable[[], nn.Module]] = {
    "mlp": MLP,
    "convbn": ConvBN,
    "tied": Tied,
    "frozen": Frozen,
    "mixed": Mixed,
    "twobranch": TwoBranch,
    "branchy": Branchy,
    "many_small": many_small,
    "edges": Edges,
}

INPUT_SHAPES = {"mlp": (64, 512), "convbn": (8, 3, 8, 8), "frozen": (16, 64), "mixed": (16, 32),
                "twobranch": (16, 64), "branchy": (16, 16), "many_small": (64, 32), "edges": (16, 16)}


def build(name: str, seed: int = 0) -> nn.Module:
    """Model ``name`` with weights drawn from ``seed``."""
    torch.manual_seed(seed)
    return MODELS[name]()


def batch(name: str, rank: int, step: int, batch_size: int | None = None, seed: int = 0) -> torch.Tensor:
    """Rank ``rank``'s input at ``step``: different on every rank and step (and ``seed``), the same for every impl."""
    generator = torch.Generator().manual_seed(1_000_003 * step + 7919 * rank + 17 + 104_729 * seed)
    if name == "tied":
        return torch.randint(0, 64, (batch_size or 16, 12), generator=generator)
    shape = INPUT_SHAPES[name]
    if batch_size is not None:
        shape = (batch_size, *shape[1:])
    x = torch.randn(shape, generator=generator)
    if name == "convbn":
        x = x * (1 + rank) + rank  # different statistics per rank make the buffer broadcast visible
    return x


def loss_fn(output: torch.Tensor | dict[str, torch.Tensor]) -> torch.Tensor:
    """A simple scalar loss (mean of squares) that touches every output (each value of a dict)."""
    if isinstance(output, dict):
        return sum(loss_fn(value) for value in output.values())
    return output.float().pow(2).mean()
