"""Parameter shape tables of two real models, for the timeline model (handout §5).

The tables list ``(name, shape)`` in REGISTRATION order, i.e. the order ``model.named_parameters()``
would yield them. They are built by arithmetic alone, so nothing is allocated and neither torchvision
nor transformers is needed:

* ``resnet50_param_shapes()`` matches ``torchvision.models.resnet50()``: 161 tensors, 25,557,032 elements.
* ``bert_large_param_shapes()`` matches a HuggingFace ``BertModel`` of the "large" size (with pooler):
  391 tensors.

``resnet50_param_macs()`` and ``bert_large_param_macs()`` give, per parameter, the forward
multiply-accumulates that use it: the timeline model's relative backward cost of each gradient.
``meta_tensors`` turns a table into tensors on the ``meta`` device: they carry shape and dtype but no
storage, which is all ``bucketing.compute_bucket_assignment`` reads.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

Shape = tuple[int, ...]
ShapeTable = list[tuple[str, Shape]]
# What the helpers below accept per parameter: an element count, a shape, or a (name, shape) row; where a
# relative cost is meant (``param_numels``, hence the timeline's costs), also a float.
ParamEntry = int | float | Shape | tuple[str, Shape]


# ResNet-50 ---------------------------------------------------------------------------------------

RESNET50_BLOCKS = (3, 4, 6, 3)  # bottleneck blocks in layer1..layer4
RESNET50_WIDTHS = (64, 128, 256, 512)  # 3x3-conv width of each layer; a block outputs 4x as many channels
RESNET50_PIXELS = (56 * 56, 28 * 28, 14 * 14, 7 * 7)  # output positions of layer1..layer4 at 224x224
BOTTLENECK_EXPANSION = 4
IMAGENET_CLASSES = 1000

# While building ResNet-50 we also note how many output positions each parameter is applied at, which
# gives its forward multiply-accumulates (MACs): positions x elements.
_Row = tuple[str, Shape, int]  # (name, shape, output positions per image)


def _conv_bn(conv: str, bn: str, shape: Shape, pixels: int) -> list[_Row]:
    """A bias-free conv followed by its BatchNorm (weight, bias; running stats are buffers)."""
    channels = shape[0]
    return [(f"{conv}.weight", shape, pixels),
            (f"{bn}.weight", (channels,), pixels), (f"{bn}.bias", (channels,), pixels)]


def _bottleneck(prefix: str, in_channels: int, width: int, pixels: int, in_pixels: int) -> list[_Row]:
    """One torchvision Bottleneck: 1x1 reduce, 3x3 (carries the stride), 1x1 expand.

    A layer's first block changes the channel count, so its shortcut needs a 1x1 conv; torchvision
    registers it after bn3 as ``downsample = Sequential(conv, bn)``.
    """
    out_channels = width * BOTTLENECK_EXPANSION
    rows = _conv_bn(f"{prefix}.conv1", f"{prefix}.bn1", (width, in_channels, 1, 1), in_pixels)  # pre-stride
    rows += _conv_bn(f"{prefix}.conv2", f"{prefix}.bn2", (width, width, 3, 3), pixels)
    rows += _conv_bn(f"{prefix}.conv3", f"{prefix}.bn3", (out_channels, width, 1, 1), pixels)
    if in_channels != out_channels:
        shortcut = (out_channels, in_channels, 1, 1)
        rows += _conv_bn(f"{prefix}.downsample.0", f"{prefix}.downsample.1", shortcut, pixels)
    return rows


def _resnet50_rows() -> list[_Row]:
    rows = _conv_bn("conv1", "bn1", (64, 3, 7, 7), 112 * 112)  # stem: 7x7 stride 2, then max-pool
    in_channels, in_pixels = 64, 56 * 56
    layers = zip(RESNET50_BLOCKS, RESNET50_WIDTHS, RESNET50_PIXELS, strict=True)
    for layer, (blocks, width, pixels) in enumerate(layers, start=1):
        for block in range(blocks):
            rows += _bottleneck(f"layer{layer}.{block}", in_channels, width, pixels, in_pixels)
            in_channels, in_pixels = width * BOTTLENECK_EXPANSION, pixels
    # After global average pooling the classifier runs once per image.
    rows += [("fc.weight", (IMAGENET_CLASSES, in_channels), 1), ("fc.bias", (IMAGENET_CLASSES,), 1)]
    return rows


def resnet50_param_shapes() -> ShapeTable:
    """torchvision's ResNet-50 parameters, in registration order (161 tensors, 25,557,032 elements)."""
    return [(name, shape) for name, shape, _ in _resnet50_rows()]


def resnet50_param_macs() -> list[int]:
    """Forward multiply-accumulates per 224x224 image that use each parameter (registration order).

    A weight's MACs are its elements times the output positions it is applied at; a BatchNorm weight
    or bias does one operation per output element. Total 4.11 G, the figure usually quoted for
    ResNet-50. Used as each gradient's relative backward cost.
    """
    return [pixels * math.prod(shape) for _, shape, pixels in _resnet50_rows()]


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


def bert_large_param_macs() -> list[int]:
    """Forward multiply-accumulates per token that use each BERT-large parameter (registration order).

    Linear layers and LayerNorms touch every element once per token; an embedding table is only looked
    up, one row per token, however large its vocabulary. (The attention-score matmuls have no
    parameters, so they are left out.) Used as each gradient's relative backward cost.
    """
    return [shape[1] if name.endswith("embeddings.weight") else math.prod(shape)
            for name, shape in bert_large_param_shapes()]


# Helpers -----------------------------------------------------------------------------------------

def entry_shape(entry: ParamEntry) -> Shape:
    """The shape of one table entry: a ``(name, shape)`` row, a bare shape, or an int (a 1-D shape)."""
    if isinstance(entry, int):
        return (entry,)
    if len(entry) == 2 and isinstance(entry[0], str):
        return tuple(entry[1])
    return tuple(entry)


def param_numels(entries: Sequence[ParamEntry]) -> list[int | float]:
    """Element count of every entry (see ``entry_shape`` for what an entry may be); a float, a relative
    cost such as ``ddp_step``'s ``compute_costs``, is kept as it is."""
    return [entry if isinstance(entry, float) else math.prod(entry_shape(entry)) for entry in entries]


def meta_tensors(shapes: Sequence[ParamEntry], dtype: torch.dtype = torch.float32) -> list[torch.Tensor]:
    """One storage-less ``meta`` tensor per entry: enough for bucketing, costs no memory."""
    return [torch.empty(entry_shape(entry), dtype=dtype, device="meta") for entry in shapes]
