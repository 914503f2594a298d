"""Train a small 3D-conv video classifier on an hf_lvf root, in plain PyTorch.

The data: ``load_dataset("hf_lvf", ..., streaming=True)``, ``clips_per_video`` clips of each
video per epoch (a new draw every epoch), read by :func:`hf_lvf.safe_dataloader`'s workers.
The run saves a checkpoint (model, optimizer, epoch, steps done) and ``--resume`` goes on
from it with the next batch of the same epoch's order. Under ``torchrun`` every rank reads
its own windows (``split_dataset_by_node``) and trains one ``DistributedDataParallel``
model over gloo; torch's ``Join`` keeps ranks in step when one runs out of batches first.

    python examples/train_classifier.py --data-dir clips/ --epochs 2 --checkpoint ckpt.pt
    python examples/train_classifier.py --data-dir clips/ --epochs 2 --checkpoint ckpt.pt --resume
    torchrun --nproc-per-node 2 examples/train_classifier.py --data-dir clips/ --epochs 2

Labels are the roots' integer ``label`` field (``--label`` names another); the number of
classes is read from the train root's video table.
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext
from pathlib import Path


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="folder (or hf:// repo) of split roots")
    parser.add_argument("--split", default="train")
    parser.add_argument("--label", default="label", help="integer metadata field to predict")
    parser.add_argument("--window-length", type=int, default=8)
    parser.add_argument("--frame-skip", type=int, default=1)
    parser.add_argument("--frame-size", type=int, default=64, help="frames resized to SIZE x SIZE")
    parser.add_argument("--clips-per-video", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--num-workers", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=2)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--max-steps", type=int, help="stop (and checkpoint) after this many steps")
    parser.add_argument("--checkpoint", type=Path, help="where to save model and progress")
    parser.add_argument("--resume", action="store_true", help="go on from --checkpoint")
    parser.add_argument("--log-every", type=int, default=5, help="steps between throughput lines")
    parser.add_argument(
        "--record", type=Path, help="append 'rank epoch step sample_idx' per window read here"
    )
    return parser.parse_args(argv)


def build_model(num_classes: int):
    import torch

    return torch.nn.Sequential(
        torch.nn.Conv3d(3, 16, kernel_size=3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool3d(2),
        torch.nn.Conv3d(16, 32, kernel_size=3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool3d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(32, num_classes),
    )


def to_input(video):
    """uint8 ``(B, T, H, W, 3)`` windows -> float ``(B, 3, T, H, W)`` in [0, 1]."""
    return video.permute(0, 4, 1, 2, 3).float().div_(255)


def main(argv: list[str] | None = None) -> None:
    import torch
    import torch.distributed as dist
    from datasets import load_dataset
    from datasets.distributed import split_dataset_by_node
    from torch.distributed.algorithms.join import Join

    import hf_lvf

    args = parse_args(argv)
    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    if distributed:
        dist.init_process_group("gloo")
    rank = dist.get_rank() if distributed else 0
    world = dist.get_world_size() if distributed else 1
    torch.manual_seed(0)

    root = f"{str(args.data_dir).rstrip('/')}/{args.split}"
    labels = hf_lvf.read_layout(root).field_values(args.label)
    num_classes = int(max(labels)) + 1
    stream = load_dataset(
        "hf_lvf",
        data_dir=str(args.data_dir),
        split=args.split,
        streaming=True,
        window_length=args.window_length,
        frame_skip=args.frame_skip,
        frame_size=(args.frame_size, args.frame_size),
        clips_per_video=args.clips_per_video,
        clip_seed=0,
    ).shuffle(seed=0, buffer_size=64)
    stream = stream.select_columns(["video", args.label, "sample_idx"])
    if distributed:
        stream = split_dataset_by_node(stream, rank=rank, world_size=world)
    loader = hf_lvf.safe_dataloader(
        stream, batch_size=args.batch_size, num_workers=args.num_workers
    )

    model = build_model(num_classes)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    epoch, done = 0, 0  # the epoch to run, and its steps already done
    if args.resume:
        state = torch.load(args.checkpoint, weights_only=True)
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        epoch, done = state["epoch"], state["step"]
        print(f"rank {rank}: resumed at epoch {epoch}, step {done}", flush=True)
    trained = torch.nn.parallel.DistributedDataParallel(model) if distributed else model
    loss_fn = torch.nn.CrossEntropyLoss()

    def save(epoch: int, step: int) -> None:
        if args.checkpoint is not None and rank == 0:
            state = {"model": model.state_dict(), "optimizer": optimizer.state_dict()}
            torch.save({**state, "epoch": epoch, "step": step}, args.checkpoint)

    record = open(f"{args.record}.rank{rank}", "a") if args.record else None  # noqa: SIM115
    total_steps = 0
    try:
        while epoch < args.epochs:
            stream.set_epoch(epoch)
            step, windows, started = 0, 0, time.perf_counter()
            with Join([trained]) if distributed else nullcontext():
                for batch in loader:
                    step += 1
                    if step <= done:  # already trained on before the resume
                        continue
                    logits = trained(to_input(batch["video"]))
                    loss = loss_fn(logits, batch[args.label])
                    optimizer.zero_grad()
                    loss.backward()
                    optimizer.step()
                    windows += len(batch["video"])
                    total_steps += 1
                    if record is not None:
                        for idx in batch["sample_idx"].tolist():
                            record.write(f"{rank} {epoch} {step} {idx}\n")
                    if step % args.log_every == 0:
                        rate = windows / (time.perf_counter() - started)
                        print(
                            f"rank {rank} epoch {epoch} step {step} loss {loss.item():.3f} "
                            f"{rate:.1f} windows/s",
                            flush=True,
                        )
                    if args.max_steps is not None and total_steps >= args.max_steps:
                        save(epoch, step)
                        print(f"rank {rank}: stopped after {total_steps} steps", flush=True)
                        return
            rate = windows / max(time.perf_counter() - started, 1e-9)
            print(f"rank {rank} epoch {epoch} done: {step} steps, {rate:.1f} windows/s", flush=True)
            epoch, done = epoch + 1, 0
            save(epoch, 0)
    finally:
        if record is not None:
            record.close()
        if distributed:
            dist.destroy_process_group()


if __name__ == "__main__":
    main()
