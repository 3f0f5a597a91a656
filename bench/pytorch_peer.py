#!/usr/bin/python3
"""The peer in side-by-side benchmarks: the same models and training step in PyTorch 1.13 (Python).

Prints one JSON line: {"system": "pytorch", "model": ..., "samples_per_second": ...}.
Data are held in memory as uint8 and normalized per batch, as distsgd does; the optimizer is torch.optim.SGD with
the same momentum and weight decay. Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import gzip
import json
import struct
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class LeNet5(nn.Module):
    """distsgd's lenet5: conv 6@5x5 pad 2, pool, conv 16@5x5, pool, 120, 84, classes (ReLU, max pool)."""

    def __init__(self, channels, size, classes):
        super().__init__()
        self.conv1 = nn.Conv2d(channels, 6, 5, padding=2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        side = ((size // 2) - 4) // 2
        self.fc1 = nn.Linear(16 * side * side, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = x.flatten(1)
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def mlp(inputs, width, layers, classes):
    mods = [nn.Flatten()]
    for _ in range(layers):
        mods += [nn.Linear(inputs, width), nn.ReLU()]
        inputs = width
    mods.append(nn.Linear(inputs, classes))
    return nn.Sequential(*mods)


def read_idx(path):
    with gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb") as f:
        data = f.read()
    magic, = struct.unpack(">I", data[:4])
    dims = data[3]
    shape = struct.unpack(">" + "I" * dims, data[4:4 + 4 * dims])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--model", default="lenet5", choices=["lenet5", "mlp"])
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    images = torch.from_numpy(read_idx(args.data_dir + "/train-images-idx3-ubyte.gz").copy()).unsqueeze(1)
    labels = torch.from_numpy(read_idx(args.data_dir + "/train-labels-idx1-ubyte.gz").astype(np.int64))
    model = LeNet5(1, 28, 10) if args.model == "lenet5" else mlp(784, 2048, 2, 10)
    opt = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    perm = torch.randperm(images.shape[0])
    mean, std = 0.2860, 0.3530

    start = time.perf_counter()
    for step in range(args.steps):
        idx = perm[(step * args.batch_size) % (images.shape[0] - args.batch_size):][:args.batch_size]
        x = (images[idx].float() / 255 - mean) / std
        y = labels[idx]
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    elapsed = time.perf_counter() - start
    print(json.dumps({"system": "pytorch", "model": args.model, "steps": args.steps,
                      "samples_per_second": args.steps * args.batch_size / elapsed,
                      "parameters": sum(p.numel() for p in model.parameters())}))


if __name__ == "__main__":
    main()
