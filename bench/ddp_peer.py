#!/usr/bin/python3
"""The peer of distsgd's AR-SGD in side-by-side benchmarks: PyTorch 1.13 DistributedDataParallel over Gloo.

Starts --workers processes on 127.0.0.1 (torch.multiprocessing spawn), each one compute thread, batch --batch-size
per worker, the models and data handling of bench/pytorch_peer.py, torch.optim.SGD momentum 0.9 weight decay 1e-4.
Worker k of W trains on the k-th block of B samples of every global batch of W*B, as distsgd's loader does.
Prints one JSON line: {"system": "pytorch-ddp", "model": ..., "workers": ..., "samples_per_second": ...} with the
global samples/s over all steps, timed on rank 0 from a barrier before the first step to the end of the last.
--powersgd-rank R registers PyTorch's powerSGD_hook (matrix_approximation_rank R, start_powerSGD_iter
--powersgd-start, the hook's other defaults); --evaluate adds rank 0's test accuracy on the whole test set after the
last step (not timed).
Run with Debian's /usr/bin/python3 (python3-torch).
"""
import argparse
import json
import os
import socket
import sys
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn.functional as F
from torch.distributed.algorithms.ddp_comm_hooks import powerSGD_hook
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from pytorch_peer import LeNet5, mlp, read_idx  # noqa: E402  (same models as the single-process peer)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_accuracy(model, data_dir, mean, std):
    images = torch.from_numpy(read_idx(data_dir + "/t10k-images-idx3-ubyte.gz").copy()).unsqueeze(1)
    labels = torch.from_numpy(read_idx(data_dir + "/t10k-labels-idx1-ubyte.gz").astype(np.int64))
    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, images.shape[0], 1000):
            x = (images[first:first + 1000].float() / 255 - mean) / std
            correct += (model(x).argmax(1) == labels[first:first + 1000]).sum().item()
    return correct / images.shape[0]


def worker(rank, args, port, results):
    torch.set_num_threads(args.threads)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=args.workers)
    torch.manual_seed(args.seed)  # same initial weights everywhere (DDP also broadcasts rank 0's)
    images = torch.from_numpy(read_idx(args.data_dir + "/train-images-idx3-ubyte.gz").copy()).unsqueeze(1)
    labels = torch.from_numpy(read_idx(args.data_dir + "/train-labels-idx1-ubyte.gz").astype(np.int64))
    model = LeNet5(1, 28, 10) if args.model == "lenet5" else mlp(784, 2048, 2, 10)
    ddp = DistributedDataParallel(model, bucket_cap_mb=args.bucket_cap_mb)
    if args.powersgd_rank > 0:
        state = powerSGD_hook.PowerSGDState(process_group=None, matrix_approximation_rank=args.powersgd_rank,
                                            start_powerSGD_iter=args.powersgd_start, random_seed=args.seed)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)
    opt = torch.optim.SGD(ddp.parameters(), lr=args.lr, momentum=0.9, weight_decay=1e-4)
    perm = torch.randperm(images.shape[0])  # same seed: the same permutation on every worker
    mean, std = 0.2860, 0.3530
    global_batch = args.workers * args.batch_size

    dist.barrier()
    start = time.perf_counter()
    for step in range(args.steps):
        first = (step * global_batch) % (images.shape[0] - global_batch) + rank * args.batch_size
        idx = perm[first:first + args.batch_size]
        x = (images[idx].float() / 255 - mean) / std
        y = labels[idx]
        loss = F.cross_entropy(ddp(x), y)
        opt.zero_grad()
        loss.backward()  # DDP's reducer allreduces the gradient buckets during backward
        opt.step()
    elapsed = time.perf_counter() - start
    if rank == 0:
        result = {"system": "pytorch-ddp", "model": args.model, "workers": args.workers, "steps": args.steps,
                  "batch_size": args.batch_size, "bucket_cap_mb": args.bucket_cap_mb,
                  "powersgd_rank": args.powersgd_rank, "samples_per_second": args.steps * global_batch / elapsed,
                  "parameters": sum(p.numel() for p in model.parameters())}
        if args.evaluate:
            result["test_accuracy"] = test_accuracy(model, args.data_dir, mean, std)
        results.put(result)
    dist.barrier()  # nobody tears its group down while rank 0 still evaluates (Gloo aborts the other side)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="lenet5", choices=["lenet5", "mlp"])
    ap.add_argument("--data-dir", default="/usr/share/datasets/fashion-mnist")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=64, help="per worker")
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--threads", type=int, default=1, help="compute threads per worker")
    ap.add_argument("--lr", type=float, default=0.05)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bucket-cap-mb", type=float, default=25, help="DDP bucket size (its default; first bucket 1 MB)")
    ap.add_argument("--powersgd-rank", type=int, default=0, help="register powerSGD_hook at this rank (0: none)")
    ap.add_argument("--powersgd-start", type=int, default=10, help="the hook's start_powerSGD_iter (at least 2)")
    ap.add_argument("--evaluate", action="store_true", help="report rank 0's test accuracy after the last step")
    args = ap.parse_args()
    if args.workers < 1 or args.steps < 1 or args.batch_size < 1:
        ap.error("--workers, --steps and --batch-size must be positive")

    context = mp.get_context("spawn")
    results = context.SimpleQueue()
    mp.start_processes(worker, args=(args, free_port(), results), nprocs=args.workers, start_method="spawn")
    print(json.dumps(results.get()))


if __name__ == "__main__":
    main()
