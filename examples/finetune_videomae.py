"""Fine-tune transformers' VideoMAE video classifier on an hf_lvf root, through ``Trainer``.

The model is built from a small ``VideoMAEConfig`` (no download: swap in
``VideoMAEForVideoClassification.from_pretrained("MCG-NJU/videomae-base", ...)`` and its
sizes for real work). The data is a map-style ``load_dataset("hf_lvf", ...)`` whose windows
are ``num_frames`` long and resized to the model's ``image_size``; a transform normalizes
them with the VideoMAE image processor's mean and std, only for the rows a batch reads.

    python examples/finetune_videomae.py --data-dir clips/ --max-steps 50

Labels are the root's integer ``label`` field (``--label`` names another).
"""

from __future__ import annotations

import argparse
import time


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", required=True, help="folder (or hf:// repo) of split roots")
    parser.add_argument("--split", default="train")
    parser.add_argument("--label", default="label", help="integer metadata field to predict")
    parser.add_argument("--num-frames", type=int, default=4, help="frames per window")
    parser.add_argument("--image-size", type=int, default=32, help="frames resized to SIZE x SIZE")
    parser.add_argument("--hop-size", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=4)
    parser.add_argument("--max-steps", type=int, default=50)
    parser.add_argument("--lr", type=float, default=5e-4)
    parser.add_argument("--output-dir", default="videomae-out")
    parser.add_argument("--log-every", type=int, default=5, help="steps between throughput lines")
    return parser.parse_args(argv)


def make_transform(processor, label: str):
    """A ``with_transform`` function: uint8 ``(T, H, W, 3)`` windows -> the processor's
    normalized float ``pixel_values`` ``(T, 3, H, W)``, and ``labels``."""

    def transform(batch: dict) -> dict:
        pixels = processor(
            [list(video) for video in batch["video"]],
            do_resize=False,  # load_dataset's frame_size already gave the model's size
            do_center_crop=False,
            return_tensors="pt",
        )["pixel_values"]
        return {"pixel_values": list(pixels), "labels": list(batch[label])}

    return transform


def main(argv: list[str] | None = None) -> None:
    import torch
    from datasets import load_dataset
    from transformers import (
        Trainer,
        TrainerCallback,
        TrainingArguments,
        VideoMAEConfig,
        VideoMAEForVideoClassification,
        VideoMAEImageProcessor,
    )

    import hf_lvf  # noqa: F401  (registers the "hf_lvf" builder)

    args = parse_args(argv)
    train = load_dataset(
        "hf_lvf",
        data_dir=args.data_dir,
        split=args.split,
        window_length=args.num_frames,
        hop_size=args.hop_size,
        frame_size=(args.image_size, args.image_size),
    )
    names = sorted(set(train.unique(args.label)))
    config = VideoMAEConfig(
        image_size=args.image_size,
        patch_size=8,
        num_frames=args.num_frames,
        tubelet_size=2,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        num_labels=max(names) + 1,
    )
    model = VideoMAEForVideoClassification(config)
    processor = VideoMAEImageProcessor(size={"height": args.image_size, "width": args.image_size})

    train = train.select_columns(["video", args.label])
    train = train.with_transform(make_transform(processor, args.label))

    def collate(rows: list[dict]) -> dict:
        return {
            "pixel_values": torch.stack([row["pixel_values"] for row in rows]),
            "labels": torch.tensor([int(row["labels"]) for row in rows]),
        }

    class Throughput(TrainerCallback):
        """Print windows/s every ``--log-every`` steps (data reading and training together)."""

        def on_train_begin(self, *_, **__):
            self.started, self.steps = time.perf_counter(), 0

        def on_step_end(self, _args, state, *_, **__):
            self.steps += 1
            if state.global_step % args.log_every == 0:
                rate = self.steps * args.batch_size / (time.perf_counter() - self.started)
                print(f"step {state.global_step}: {rate:.1f} windows/s", flush=True)

    training_args = TrainingArguments(
        output_dir=args.output_dir,
        per_device_train_batch_size=args.batch_size,
        max_steps=args.max_steps,
        learning_rate=args.lr,
        logging_steps=args.log_every,
        save_strategy="no",
        remove_unused_columns=False,  # the transform needs the "video" column
        dataloader_num_workers=0,
        report_to=[],
        use_cpu=not torch.cuda.is_available(),
    )
    trainer = Trainer(
        model=model,
        args=training_args,
        train_dataset=train,
        data_collator=collate,
        callbacks=[Throughput()],
    )
    result = trainer.train()
    print(f"trained {result.global_step} steps, final loss {result.training_loss:.3f}", flush=True)


if __name__ == "__main__":
    main()
