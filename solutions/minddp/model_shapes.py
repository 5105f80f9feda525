"""Parameter shape tables of two real models, for the timeline model (lecture §3, §5).

The tables list ``(name, shape)`` in REGISTRATION order, i.e. the order ``model.named_parameters()``
would yield them. They are built by arithmetic alone, so nothing is allocated and neither torchvision
nor transformers is needed:

* ``resnet50_param_shapes()`` matches ``torchvision.models.resnet50()``: 161 tensors, 25,557,032 elements.
* ``bert_large_param_shapes()`` matches a HuggingFace ``BertModel`` of the "large" size (with pooler):
  391 tensors.

``meta_tensors`` turns a table into tensors on the ``meta`` device: they carry shape and dtype but no
storage, which is all ``bucketing.compute_bucket_assignment`` reads.
"""

from __future__ import annotations

import math
from typing import Sequence, Union

import torch

Shape = tuple[int, ...]
ShapeTable = list[tuple[str, Shape]]
# What the helpers below accept per parameter: an element count, a shape, or a (name, shape) row.
ParamEntry = Union[int, Shape, tuple[str, Shape]]


# ResNet-50 ---------------------------------------------------------------------------------------

RESNET50_BLOCKS = (3, 4, 6, 3)  # bottleneck blocks in layer1..layer4
RESNET50_WIDTHS = (64, 128, 256, 512)  # 3x3-conv width of each layer; a block outputs 4x as many channels
BOTTLENECK_EXPANSION = 4
IMAGENET_CLASSES = 1000


def _batch_norm(prefix: str, channels: int) -> ShapeTable:
    """BatchNorm2d's two parameters (its running statistics are buffers, not parameters)."""
    return [(f"{prefix}.weight", (channels,)), (f"{prefix}.bias", (channels,))]


def _bottleneck(prefix: str, in_channels: int, width: int, downsample: bool) -> ShapeTable:
    """One torchvision Bottleneck: 1x1 reduce, 3x3, 1x1 expand (convs have no bias), each with a BN."""
    out_channels = width * BOTTLENECK_EXPANSION
    table = [(f"{prefix}.conv1.weight", (width, in_channels, 1, 1))]
    table += _batch_norm(f"{prefix}.bn1", width)
    table += [(f"{prefix}.conv2.weight", (width, width, 3, 3))]
    table += _batch_norm(f"{prefix}.bn2", width)
    table += [(f"{prefix}.conv3.weight", (out_channels, width, 1, 1))]
    table += _batch_norm(f"{prefix}.bn3", out_channels)
    if downsample:  # torchvision registers the shortcut after bn3: downsample = Sequential(conv, bn)
        table += [(f"{prefix}.downsample.0.weight", (out_channels, in_channels, 1, 1))]
        table += _batch_norm(f"{prefix}.downsample.1", out_channels)
    return table


def resnet50_param_shapes() -> ShapeTable:
    """torchvision's ResNet-50 parameters, in registration order (161 tensors, 25,557,032 elements)."""
    table = [("conv1.weight", (64, 3, 7, 7))]
    table += _batch_norm("bn1", 64)
    in_channels = 64
    for layer, (blocks, width) in enumerate(zip(RESNET50_BLOCKS, RESNET50_WIDTHS), start=1):
        for block in range(blocks):
            # Only the first block of a layer changes the channel count, so only it needs a shortcut conv.
            table += _bottleneck(f"layer{layer}.{block}", in_channels, width, downsample=block == 0)
            in_channels = width * BOTTLENECK_EXPANSION
    table += [("fc.weight", (IMAGENET_CLASSES, in_channels)), ("fc.bias", (IMAGENET_CLASSES,))]
    return table


# BERT-large --------------------------------------------------------------------------------------

BERT_LARGE_HIDDEN = 1024
BERT_LARGE_LAYERS = 24
BERT_LARGE_HEADS = 16  # heads split the hidden size; they add no parameters of their own
BERT_LARGE_INTERMEDIATE = 4096
BERT_VOCAB = 30522
BERT_MAX_POSITIONS = 512
BERT_TYPE_VOCAB = 2


def _linear(prefix: str, in_features: int, out_features: int) -> ShapeTable:
    """nn.Linear registers weight (out, in) before bias (out,)."""
    return [(f"{prefix}.weight", (out_features, in_features)), (f"{prefix}.bias", (out_features,))]


def _layer_norm(prefix: str, features: int) -> ShapeTable:
    return [(f"{prefix}.weight", (features,)), (f"{prefix}.bias", (features,))]


def _bert_layer(prefix: str, hidden: int, intermediate: int) -> ShapeTable:
    """One HF BertLayer: 16 tensors (self-attention q, k, v; attention output + LN; FFN in, out + LN)."""
    table: ShapeTable = []
    for projection in ("query", "key", "value"):
        table += _linear(f"{prefix}.attention.self.{projection}", hidden, hidden)
    table += _linear(f"{prefix}.attention.output.dense", hidden, hidden)
    table += _layer_norm(f"{prefix}.attention.output.LayerNorm", hidden)
    table += _linear(f"{prefix}.intermediate.dense", hidden, intermediate)
    table += _linear(f"{prefix}.output.dense", intermediate, hidden)
    table += _layer_norm(f"{prefix}.output.LayerNorm", hidden)
    return table


def bert_large_param_shapes() -> ShapeTable:
    """HF ``BertModel`` (large: hidden 1024, 24 layers, 16 heads, FFN 4096) parameters, registration order.

    Assumes the pooler is included (``add_pooling_layer=True``, the default) and no task head:
    5 embedding tensors + 24 layers x 16 + 2 pooler tensors = 391.
    """
    hidden = BERT_LARGE_HIDDEN
    table = [
        ("embeddings.word_embeddings.weight", (BERT_VOCAB, hidden)),
        ("embeddings.position_embeddings.weight", (BERT_MAX_POSITIONS, hidden)),
        ("embeddings.token_type_embeddings.weight", (BERT_TYPE_VOCAB, hidden)),
    ]
    table += _layer_norm("embeddings.LayerNorm", hidden)
    for layer in range(BERT_LARGE_LAYERS):
        table += _bert_layer(f"encoder.layer.{layer}", hidden, BERT_LARGE_INTERMEDIATE)
    table += _linear("pooler.dense", hidden, hidden)
    return table


# Helpers -----------------------------------------------------------------------------------------

def entry_shape(entry: ParamEntry) -> Shape:
    """The shape of one table entry: a ``(name, shape)`` row, a bare shape, or an int (a 1-D shape)."""
    if isinstance(entry, int):
        return (entry,)
    if len(entry) == 2 and isinstance(entry[0], str):
        return tuple(entry[1])
    return tuple(entry)


def param_numels(entries: Sequence[ParamEntry]) -> list[int]:
    """Element count of every entry (see ``entry_shape`` for what an entry may be)."""
    return [math.prod(entry_shape(entry)) for entry in entries]


def meta_tensors(shapes: Sequence[ParamEntry], dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """One storage-less ``meta`` tensor per entry: enough for bucketing, costs no memory."""
    return [torch.empty(entry_shape(entry), dtype=dtype, device="meta") for entry in shapes]
