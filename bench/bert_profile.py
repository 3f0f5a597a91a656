#!/usr/bin/env python3
"""Writes a distsgd model profile (the JSON `distsgd profile` writes) of BERT pre-training as HKBU ddl-benchmarks ran
it, for bench/published_calibration.sh: distsgd has no BERT model to profile, so the tensors and their compute come
from the architecture.

Inputs, from the sources:
  - HKBU-HPML/ddl-benchmarks mgwfbp/bert_benchmark.py: transformers' BertForPreTraining, sentence length 128, the
    vocabulary padded to a multiple of 8 (30522 -> 30528), AdamW; batch 64 (BERT-Base) and 8 (BERT-Large) per GPU
    (results/2020-05-29/README.md); one V100-PCIe trains 212.8 (Base) and 49 (Large) sentences/s.
  - Devlin et al., "BERT" (NAACL 2019): Base 12 layers, hidden 768, 12 heads; Large 24 layers, hidden 1024, 16 heads;
    feed-forward 4 x hidden; 512 positions, 2 token types.
Per tensor, in BertForPreTraining's parameter order (the masked-LM decoder's weight is the word embedding, tied):
forward FLOPs are 2 x tokens x in x out for a linear layer's weight (the attention's two batched matmuls counted
with the query's), a few per element for biases and LayerNorms; backward twice forward. The times are those FLOPs at
one rate, chosen so that forward + backward + the update equals the published one-GPU iteration; the update costs
the device's seconds per gradient byte (taken from an analytical v100-pcie profile of distsgd, --update-from).

Usage: bert_profile.py base|large --update-from PROFILE.json --out FILE.json [--batch N --sentences-per-second R]
(--batch and --sentences-per-second: another source's batch per GPU and one GPU's rate at it, as
bench/dlperf_calibration.sh takes them from DLPerf; the defaults are HKBU's.)
"""
import argparse
import json

CONFIGS = {
    # layers, hidden, heads, batch per GPU, one GPU's sentences/s (HKBU results/2020-05-29)
    "base": (12, 768, 12, 64, 212.8),
    "large": (24, 1024, 16, 8, 49.0),
}
VOCABULARY = 30528  # 30522 padded to a multiple of 8, as bert_benchmark.py does
POSITIONS = 512
TOKEN_TYPES = 2
SEQUENCE = 128


def tensors(layers, hidden, heads, batch):
    tokens = batch * SEQUENCE
    out = []  # (name, shape, forward FLOPs)

    def linear(name, inputs, outputs, rows=tokens, extra=0.0):
        out.append((name + ".weight", [outputs, inputs], 2.0 * rows * inputs * outputs + extra))
        out.append((name + ".bias", [outputs], float(rows * outputs)))

    def layer_norm(name, rows=tokens):
        out.append((name + ".weight", [hidden], 4.0 * rows * hidden))
        out.append((name + ".bias", [hidden], 1.0 * rows * hidden))

    # The word embedding is also the masked-LM decoder (tied): its projection of every token onto the vocabulary.
    out.append(("bert.embeddings.word_embeddings.weight", [VOCABULARY, hidden], 2.0 * tokens * hidden * VOCABULARY))
    out.append(("bert.embeddings.position_embeddings.weight", [POSITIONS, hidden], float(tokens * hidden)))
    out.append(("bert.embeddings.token_type_embeddings.weight", [TOKEN_TYPES, hidden], float(tokens * hidden)))
    layer_norm("bert.embeddings.LayerNorm")
    attention = 4.0 * batch * SEQUENCE * SEQUENCE * hidden  # scores and context, all heads
    for i in range(layers):
        prefix = f"bert.encoder.layer.{i}"
        linear(prefix + ".attention.self.query", hidden, hidden, extra=attention)
        linear(prefix + ".attention.self.key", hidden, hidden)
        linear(prefix + ".attention.self.value", hidden, hidden)
        linear(prefix + ".attention.output.dense", hidden, hidden)
        layer_norm(prefix + ".attention.output.LayerNorm")
        linear(prefix + ".intermediate.dense", hidden, 4 * hidden)
        linear(prefix + ".output.dense", 4 * hidden, hidden)
        layer_norm(prefix + ".output.LayerNorm")
    linear("bert.pooler.dense", hidden, hidden, rows=batch)  # the first token of each sentence
    out.append(("cls.predictions.bias", [VOCABULARY], float(tokens * VOCABULARY)))
    linear("cls.predictions.transform.dense", hidden, hidden)
    layer_norm("cls.predictions.transform.LayerNorm")
    linear("cls.seq_relationship", hidden, 2, rows=batch)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", choices=sorted(CONFIGS))
    parser.add_argument("--update-from", required=True, help="a distsgd profile of the same device")
    parser.add_argument("--out", required=True)
    parser.add_argument("--batch", type=int, help="sentences per GPU (default: HKBU's)")
    parser.add_argument("--sentences-per-second", type=float, help="one GPU's rate at --batch (default: HKBU's)")
    args = parser.parse_args()
    layers, hidden, heads, batch, sentences_per_second = CONFIGS[args.size]
    if (args.batch is None) != (args.sentences_per_second is None):
        parser.error("--batch and --sentences-per-second go together (a rate is one batch size's)")
    if args.batch is not None:
        batch, sentences_per_second = args.batch, args.sentences_per_second
    device = json.load(open(args.update_from))
    update_seconds_per_byte = device["update_seconds_per_byte"]
    shapes = tensors(layers, hidden, heads, batch)
    parameters = [1 for _ in shapes]
    for i, (_, shape, _) in enumerate(shapes):
        for size in shape:
            parameters[i] *= size
    update = update_seconds_per_byte * 4 * sum(parameters)
    iteration = batch / sentences_per_second
    flops = sum(3 * f for _, _, f in shapes)  # forward and twice that backward
    seconds_per_flop = (iteration - update) / flops
    profile = {
        "model": "bert-" + args.size,
        "batch_size": batch,
        "bytes_per_parameter": 4,
        "data_seconds": 0.0,
        "update_seconds_per_byte": update_seconds_per_byte,
        "source": "bench/bert_profile.py: BertForPreTraining (sentence length 128), "
        f"times from the architecture's FLOPs at one rate fitted to {sentences_per_second} sentences/s on one GPU",
        "tensors": [
            {
                "name": name,
                "shape": shape,
                "parameters": count,
                "forward_seconds": f * seconds_per_flop,
                "backward_seconds": 2 * f * seconds_per_flop,
            }
            for (name, shape, f), count in zip(shapes, parameters)
        ],
    }
    with open(args.out, "w") as file:
        json.dump(profile, file, indent=1)
    print(f"bert-{args.size}: {sum(parameters) / 1e6:.1f} M parameters in {len(shapes)} tensors, "
          f"iteration {iteration * 1e3:.1f} ms at batch {batch} (update {update * 1e3:.1f} ms)")


if __name__ == "__main__":
    main()
